import { performance } from "node:perf_hooks";
import type { App } from "../../src/api/app-env.js";
import type { SessionEvent } from "../../src/core/events.js";
import type { RunId, SessionId } from "../../src/ids.js";
import type { Services } from "../../src/services.js";

/**
 * The API side of the benchmark, in-process: tenants, projects and sessions
 * through the HTTP app (`app.request`), runs started through the same route a
 * client would use, and every session's events observed on the Redis bus with
 * their arrival time (performance.now()).
 */

/** One event as observed by the benchmark. */
export interface ObservedEvent {
  at: number;
  type: SessionEvent["type"];
  stepIndex: number | null;
  attempt: number | null;
  /** `tool_update` status, when the update is a status change. */
  status: string | undefined;
}

export interface RunRecord {
  sessionId: SessionId;
  runId: RunId;
  /** Agent steps scripted (tool steps; the closing text step is extra). */
  toolSteps: number;
  requestedAt: number;
  endedAt: number;
  endStatus: string;
  events: ObservedEvent[];
}

interface ApiResponse<T> {
  status: number;
  body: T;
}

async function call<T>(app: App, key: string, method: string, path: string, body?: unknown): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await app.request(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

function expectStatus<T>(response: ApiResponse<T>, status: number, what: string): T {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

/** The scripted-provider input for `toolSteps` steps of one no-op call each, then a closing answer. */
function noopScript(toolSteps: number): string {
  const steps: unknown[][] = Array.from({ length: toolSteps }, () => [{ tool: "noop", args: {} }]);
  steps.push([{ text: "done" }]);
  return JSON.stringify({ script: steps });
}

export class FoyaDriver {
  private constructor(
    private readonly app: App,
    private readonly services: Services,
    private readonly key: string,
    /** The project every session of this driver belongs to (its own tenant's only one). */
    readonly projectId: string,
  ) {}

  /** A tenant and a project to hold the benchmark's sessions. */
  static async create(app: App, services: Services): Promise<FoyaDriver> {
    const adminToken = services.config.api.adminToken ?? "";
    const tenant = expectStatus(
      await call<{ apiKey: string }>(app, adminToken, "POST", "/v1/tenants", { name: "bench" }),
      201,
      "tenant creation",
    );
    const project = expectStatus(
      await call<{ id: string }>(app, tenant.apiKey, "POST", "/v1/projects", { name: "bench" }),
      201,
      "project creation",
    );
    return new FoyaDriver(app, services, tenant.apiKey, project.id);
  }

  async createSessions(count: number): Promise<SessionId[]> {
    const ids: SessionId[] = [];
    for (let i = 0; i < count; i++) {
      const session = await call<{ id: SessionId }>(this.app, this.key, "POST", "/v1/sessions", { projectId: this.projectId });
      ids.push(expectStatus(session, 201, "session creation").id);
    }
    return ids;
  }

  /**
   * One session in each of `count` new projects of this driver's tenant: each project is placed
   * on a host of its own choosing (SPEC W3), where the sessions of one project share one host.
   */
  async createSessionsInNewProjects(count: number): Promise<Array<{ sessionId: SessionId; projectId: string }>> {
    const made: Array<{ sessionId: SessionId; projectId: string }> = [];
    for (let i = 0; i < count; i++) {
      const project = expectStatus(
        await call<{ id: string }>(this.app, this.key, "POST", "/v1/projects", { name: `bench ${i}` }),
        201,
        "project creation",
      );
      const session = await call<{ id: SessionId }>(this.app, this.key, "POST", "/v1/sessions", { projectId: project.id });
      made.push({ sessionId: expectStatus(session, 201, "session creation").id, projectId: project.id });
    }
    return made;
  }

  /**
   * Starts one run per session, all at once, each scripted for `toolSteps` agent
   * steps (by default one no-op call each; `input` is another scripted-provider input
   * of that many tool steps), and waits until every run has ended (or `timeoutMs` passes).
   * Subscriptions are in place before the first run starts.
   */
  async runAll(
    sessionIds: readonly SessionId[],
    toolSteps: number,
    timeoutMs: number,
    input: string = noopScript(toolSteps),
  ): Promise<RunRecord[]> {
    const observers = await Promise.all(sessionIds.map((sessionId) => this.observe(sessionId)));
    try {
      const records = await Promise.all(
        observers.map(async (observer) => {
          const requestedAt = performance.now();
          const run = await call<{ id: RunId }>(this.app, this.key, "POST", `/v1/sessions/${observer.sessionId}/runs`, { input });
          const runId = expectStatus(run, 202, "run creation").id;
          const end = await withTimeout(observer.ended, timeoutMs, `run ${runId} did not end within ${timeoutMs} ms`);
          return {
            sessionId: observer.sessionId,
            runId,
            toolSteps,
            requestedAt,
            endedAt: end.at,
            endStatus: end.status,
            events: observer.events,
          } satisfies RunRecord;
        }),
      );
      return records;
    } finally {
      for (const observer of observers) observer.stop();
    }
  }

  private async observe(sessionId: SessionId): Promise<{
    sessionId: SessionId;
    events: ObservedEvent[];
    ended: Promise<{ at: number; status: string }>;
    stop(): void;
  }> {
    const events: ObservedEvent[] = [];
    let resolveEnded: (value: { at: number; status: string }) => void = () => {};
    const ended = new Promise<{ at: number; status: string }>((resolve) => {
      resolveEnded = resolve;
    });
    const stop = await this.services.bus.subscribe(sessionId, (event) => {
      const at = performance.now();
      const data = event.data;
      events.push({
        at,
        type: event.type,
        stepIndex: event.step?.index ?? (data.type === "step_start" || data.type === "step_end" ? data.stepIndex : null),
        attempt: event.step?.attempt ?? null,
        status: data.type === "tool_update" ? data.status : undefined,
      });
      if (data.type === "run_end") resolveEnded({ at, status: data.status });
    });
    return { sessionId, events, ended, stop };
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Per agent step of one run: the full interval and the four event-to-event segments. */
export interface StepTimings {
  /** step_start(k) → step_start(k+1). */
  interval: number[];
  /** step_start → step_end: model step job (history load, stream, commit). */
  modelStep: number[];
  /** step_end → tool_update running: hop to the tool queue, batch claim, mark running. */
  toToolRunning: number[];
  /** tool_update running → tool_end: tool execution and result commit. */
  toolRun: number[];
  /** tool_end → next step_start: batch close, hop to the step queue, step claim. */
  toNextStep: number[];
  /** Steps with more than one attempt (redeliveries), which should be zero. */
  retriedSteps: number;
}

export function stepTimings(records: readonly RunRecord[]): StepTimings {
  const timings: StepTimings = { interval: [], modelStep: [], toToolRunning: [], toolRun: [], toNextStep: [], retriedSteps: 0 };
  for (const record of records) {
    const first = (type: ObservedEvent["type"], step: number, status?: string) =>
      record.events.find((e) => e.type === type && e.stepIndex === step && (status === undefined || e.status === status))?.at;
    timings.retriedSteps += new Set(
      record.events.filter((e) => e.type === "step_start" && (e.attempt ?? 1) > 1).map((e) => e.stepIndex),
    ).size;
    for (let k = 0; k < record.toolSteps; k++) {
      const start = first("step_start", k);
      const end = first("step_end", k);
      const running = first("tool_update", k, "running");
      const toolEnd = first("tool_end", k);
      const next = first("step_start", k + 1);
      if (start === undefined || next === undefined) continue;
      timings.interval.push(next - start);
      if (end === undefined || running === undefined || toolEnd === undefined) continue;
      timings.modelStep.push(end - start);
      timings.toToolRunning.push(running - end);
      timings.toolRun.push(toolEnd - running);
      timings.toNextStep.push(next - toolEnd);
    }
  }
  return timings;
}

/** Intervals of the first and last `n` steps of each run, to show cost that grows with history. */
export function headAndTailIntervals(records: readonly RunRecord[], n: number): { head: number[]; tail: number[] } {
  const head: number[] = [];
  const tail: number[] = [];
  for (const record of records) {
    const starts = new Map<number, number>();
    for (const event of record.events) {
      if (event.type === "step_start" && event.stepIndex !== null && !starts.has(event.stepIndex)) starts.set(event.stepIndex, event.at);
    }
    for (let k = 0; k < record.toolSteps; k++) {
      const a = starts.get(k);
      const b = starts.get(k + 1);
      if (a === undefined || b === undefined) continue;
      if (k < n) head.push(b - a);
      if (k >= record.toolSteps - n) tail.push(b - a);
    }
  }
  return { head, tail };
}
