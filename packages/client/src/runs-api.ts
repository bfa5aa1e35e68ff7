import { unwrap } from "./api-result.js";
import type { FoyaApi, Run, RunCreate } from "./api-types.js";
import type { Transport } from "./client-options.js";
import { delay } from "./delay.js";
import { streamSessionEvents, type EventStreamOptions } from "./event-stream.js";
import type { FoyaEvent } from "./events.js";
import { FoyaTimeoutError } from "./foya-timeout-error.js";

export type RunStartOptions = Omit<RunCreate, "input">;

export interface WaitOptions {
  /** Give up (FoyaTimeoutError) after this long; no limit by default (a run may wait a day for an approval). */
  timeoutMs?: number;
  /** Longest pause between polls; the first is 100 ms, growing to this (1,000 ms). */
  intervalMs?: number;
  signal?: AbortSignal;
}

/** A run's events: the session's stream reduced to the run's own, ending with its `run_end`. */
export type RunEventsOptions = Omit<EventStreamOptions, "until">;

export interface RunsApi {
  /** Starts a turn (202). `ifActive` says what to do when the session has an active run: `reject` (409), `enqueue`, `interrupt`. */
  start(sessionId: string, input: string, options?: RunStartOptions): Promise<Run>;
  get(runId: string): Promise<Run>;
  /** Cancels a run; one already ended answers 409 (`FoyaApiError.current` is the run). */
  cancel(runId: string): Promise<Run>;
  /** Polls until the run is terminal (completed, failed, cancelled, interrupted) and answers it. */
  wait(runId: string, options?: WaitOptions): Promise<Run>;
  /**
   * Starts a turn and streams its events through its `run_end`. The run is known at once;
   * its events come from the session's log after the point the session had reached before
   * the run was created, so none is missed, and other runs' events are left out.
   */
  stream(
    sessionId: string,
    input: string,
    options?: RunStartOptions & RunEventsOptions,
  ): Promise<{ run: Run; events: AsyncGenerator<FoyaEvent, void, undefined> }>;
  /** The events of a run already started, through its `run_end`; `after` (0) skips the session's log up to it. */
  events(run: Pick<Run, "id" | "sessionId">, options?: RunEventsOptions): AsyncGenerator<FoyaEvent, void, undefined>;
}

const terminal = new Set<Run["status"]>(["completed", "failed", "cancelled", "interrupted"]);

export function createRunsApi(api: FoyaApi, transport: Transport): RunsApi {
  const runs: RunsApi = {
    async start(sessionId, input, options = {}) {
      return unwrap(await api.POST("/v1/sessions/{id}/runs", { params: { path: { id: sessionId } }, body: { ...options, input } }));
    },
    async get(runId) {
      return unwrap(await api.GET("/v1/runs/{id}", { params: { path: { id: runId } } }));
    },
    async cancel(runId) {
      return unwrap(await api.POST("/v1/runs/{id}/cancel", { params: { path: { id: runId } } }));
    },
    async wait(runId, options = {}) {
      const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
      const maxIntervalMs = options.intervalMs ?? 1_000;
      let intervalMs = Math.min(100, maxIntervalMs);
      for (;;) {
        const run = await runs.get(runId);
        if (terminal.has(run.status)) return run;
        const left = deadline - Date.now();
        if (left <= 0) throw new FoyaTimeoutError(`run ${runId} is still ${run.status} after ${options.timeoutMs} ms`);
        await delay(Math.min(intervalMs, left), options.signal);
        intervalMs = Math.min(maxIntervalMs, intervalMs * 2);
      }
    },
    async stream(sessionId, input, options = {}) {
      const { ifActive, onInterrupted, ...streamOptions } = options;
      // The session's position before the run exists: every event of the run comes after it.
      const session = unwrap(await api.GET("/v1/sessions/{id}", { params: { path: { id: sessionId } } }));
      const run = await runs.start(sessionId, input, { ...(ifActive ? { ifActive } : {}), ...(onInterrupted ? { onInterrupted } : {}) });
      return { run, events: runs.events(run, { after: session.lastEventSeq, ...streamOptions }) };
    },
    async *events(run, options = {}) {
      const all = streamSessionEvents(transport, run.sessionId, {
        ...options,
        until: (event) => event.runId === run.id && event.type === "run_end",
      });
      for await (const event of all) if (event.runId === run.id) yield event;
    },
  };
  return runs;
}
