import type { EventBody, SessionEvent } from "../../core/events.js";
import { StaleWorkError } from "../../store/transact.js";
import type { EventBus } from "../../events/event-bus.js";

/**
 * Streams a Step's live events to the log and the bus. Text, thinking and argument
 * deltas are coalesced for up to `coalesceMs` so a fast model does not cost one
 * insert per token; a `tool_begin` flushes at once (L1): at the end of the
 * current turn of the event loop, so a response that arrived whole goes to the
 * step's commit instead of a statement of its own. Writes are serialized, so
 * sequence numbers follow the order the model produced.
 *
 * The step's `step_start` is the first pending event, flushed after `coalesceMs`
 * like any other: the first write is `start.write` (the step row and its events,
 * fenced); a model that answers sooner has its start written by the commit.
 */
export interface StepEventSink {
  push(body: EventBody, options?: { urgent?: boolean }): void;
  /**
   * Waits for writes in flight and hands back what is still buffered, so the
   * caller can write it in its own transaction (the step's commit) instead of
   * paying for one more; `step_start` first if it was never written. Throws
   * `StaleWorkError` when the start found the run taken over.
   */
  takePending(): Promise<EventBody[]>;
  /**
   * For an attempt that will not commit: writes what is buffered (its start included, so the
   * next attempt counts one more) and waits, so nothing lands after the caller ends the step.
   * A write failure is kept, not thrown.
   */
  settle(): Promise<void>;
}

export function createStepEventSink(options: {
  bus: EventBus;
  coalesceMs: number;
  /** Once aborted (the run was cancelled), buffered events are dropped rather than written after run_end. */
  signal: AbortSignal;
  /** The step's start: its event, and the fenced write that records the step with the first events (null: taken over). */
  start: { body: EventBody; write(bodies: EventBody[]): Promise<SessionEvent[] | null> };
  /** The fenced write of every later batch (null: taken over). */
  append(bodies: EventBody[]): Promise<SessionEvent[] | null>;
}): StepEventSink {
  let pending: EventBody[] = [options.start.body];
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let chain: Promise<void> = Promise.resolve();
  let failure: unknown;

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
    const first = !started;
    started = true;
    chain = chain.then(async () => {
      if (failure || options.signal.aborted) return;
      try {
        const stored = first ? await options.start.write(batch) : await options.append(batch);
        if (stored === null) throw new StaleWorkError("the step's run was taken over before its start was written");
        await options.bus.publish(stored);
      } catch (error) {
        failure = error;
      }
    });
    return chain;
  }

  // The start goes out after `coalesceMs` even if the model says nothing yet, so clients see the step begin.
  timer = setTimeout(() => void schedule(), options.coalesceMs);

  return {
    push(body, pushOptions) {
      mergeInto(pending, body);
      if (pushOptions?.urgent) {
        immediate ??= setImmediate(() => void schedule());
      } else if (!timer && !immediate) {
        timer = setTimeout(() => void schedule(), options.coalesceMs);
      }
    },
    async settle() {
      await schedule();
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

/** Appends `body` to what is buffered, coalesced with the last event when both are deltas of the same text or call. */
function mergeInto(pending: EventBody[], body: EventBody): void {
  const last = pending[pending.length - 1];
  if (last?.type === "text_delta" && body.type === "text_delta") {
    pending[pending.length - 1] = { type: "text_delta", text: last.text + body.text };
  } else if (last?.type === "thinking_delta" && body.type === "thinking_delta" && !last.redacted && !body.redacted) {
    pending[pending.length - 1] = { type: "thinking_delta", text: last.text + body.text };
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
