import type { EventBody, NewEvent, StepRef } from "../core/events.js";
import type { Queryable } from "../store/sql-text.js";
import { appendEvents } from "../store/events.js";
import type { EventBus } from "../events/event-bus.js";

/**
 * Streams a Step's live events to the log and the bus. Text and argument
 * deltas are coalesced for up to `coalesceMs` so a fast model does not cost one
 * insert per token; a `tool_begin` flushes at once (L1): at the end of the
 * current turn of the event loop, so a response that arrived whole goes to the
 * step's commit instead of a statement of its own. Writes are serialized, so
 * sequence numbers follow the order the model produced.
 */
export interface StepEventSink {
  push(body: EventBody, options?: { urgent?: boolean }): void;
  /**
   * Waits for writes in flight and hands back what is still buffered, so the
   * caller can write it in its own transaction (the step's commit) instead of
   * paying for one more.
   */
  takePending(): Promise<EventBody[]>;
}

export function createStepEventSink(options: {
  db: Queryable;
  bus: EventBus;
  tenantId: string;
  sessionId: string;
  runId: string;
  step: StepRef;
  coalesceMs: number;
  /** Once aborted (the run was cancelled), buffered events are dropped rather than written after run_end. */
  signal: AbortSignal;
}): StepEventSink {
  let pending: EventBody[] = [];
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown;

  function merge(body: EventBody): void {
    const last = pending[pending.length - 1];
    if (last?.type === "text_delta" && body.type === "text_delta") {
      pending[pending.length - 1] = { type: "text_delta", text: last.text + body.text };
    } else if (
      last?.type === "tool_update" &&
      body.type === "tool_update" &&
      last.callId === body.callId &&
      last.argumentsDelta !== undefined &&
      body.argumentsDelta !== undefined &&
      last.status === undefined &&
      body.status === undefined
    ) {
      pending[pending.length - 1] = { ...last, argumentsDelta: last.argumentsDelta + body.argumentsDelta };
    } else {
      pending.push(body);
    }
  }

  function cancelScheduled(): void {
    if (timer) clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
    timer = undefined;
    immediate = undefined;
  }

  function schedule(): Promise<void> {
    cancelScheduled();
    const batch = pending;
    pending = [];
    if (batch.length === 0) return chain;
    const events: NewEvent[] = batch.map((body) => ({ runId: options.runId, step: options.step, body }));
    chain = chain.then(async () => {
      if (failure || options.signal.aborted) return;
      try {
        const stored = await appendEvents(options.db, options.tenantId, options.sessionId, events);
        await options.bus.publish(stored);
      } catch (error) {
        failure = error;
      }
    });
    return chain;
  }

  return {
    push(body, pushOptions) {
      merge(body);
      if (pushOptions?.urgent) {
        immediate ??= setImmediate(() => void schedule());
      } else if (!timer && !immediate) {
        timer = setTimeout(() => void schedule(), options.coalesceMs);
      }
    },
    async takePending() {
      cancelScheduled();
      await chain;
      if (failure) throw failure;
      const rest = pending;
      pending = [];
      return rest;
    },
  };
}
