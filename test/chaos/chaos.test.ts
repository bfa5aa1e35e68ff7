import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { startOwnRedis, type OwnRedis } from "./own-redis.js";
import { spawnWorker, type WorkerProcess } from "./warm-workers.js";

/**
 * The workers' lease, FOYA_LEASE_MS (BullMQ's stall check, FOYA_STALLED_INTERVAL_MS, runs at half of it):
 * production's 30 s, so that recovery within seconds is the liveness records' doing (SPEC D9), not the lease's.
 */
const LEASE_MS = 30_000;

const RUNS = 20;
const TENANTS = 2;
const BASH_STEPS = 4;
/** Runs start one after another across the fault window, so faults meet runs at every stage. */
const RUN_SPACING_MS = 500;
const FIRST_KILL_AT_MS = 1_500;
const KILL_EVERY_MS = 2_000;
const KILLS = 6;
const FLUSH_AT_MS = 4_500;
const REDIS_RESTART_AT_MS = 8_500;
/** Once the last fault is done, every run must be terminal within this. */
const TERMINAL_DEADLINE_MS = 40_000;

const terminalStatuses = new Set(["completed", "interrupted", "failed", "cancelled"]);
/** Tool call statuses that say the call was started (it may have run); the others say it never ran. */
const startedCallStatuses = new Set(["running", "succeeded", "failed", "interrupted"]);

type FaultKind = "kill" | "flush" | "redis-restart";

interface Worker {
  proc: WorkerProcess;
  id: string;
  killedByUs: boolean;
  exited: boolean;
}

interface Kill {
  at: number;
  workerId: string;
  /** The runs whose lease the worker held just before it was killed. */
  runIds: string[];
}

interface ChaosSession {
  client: ApiClient;
  sessionId: string;
  onInterrupted: "end" | "continue";
}

let redis: OwnRedis | undefined;
let env: TestEnv;
let tenants: ApiClient[];
let stopping = false;
let setupMs = 0;

/*
 * The worker pool. Loading a worker's code costs about a second of CPU even compiled (seconds of
 * wall time on a busy 2-CPU machine), so every worker process is started through warm-worker-main.ts: it loads its
 * code, then waits; told to serve, it runs src/worker/main.ts as `npm run worker` does and takes
 * jobs within a second. All spares load before the faults begin, so the kills keep their pace and
 * a killed worker's replacement is up at once: two workers serve, but for the moment of each kill.
 */
/** Every worker process started, for the clean-up. */
const processes: WorkerProcess[] = [];
/** The processes told to serve. */
const workers: Worker[] = [];
/** Loaded, not serving yet. */
const spares: WorkerProcess[] = [];
const loading = new Set<Promise<void>>();
const starting = new Set<Promise<void>>();
/** Workers that ended without being killed: SPEC D9 says processes survive Redis and Postgres faults. */
const selfExits: string[] = [];
/** Workers that did not load or start in time (a busy machine; they are replaced). */
const startTrouble: string[] = [];

function loadSpare(): void {
  if (stopping) return;
  const proc = spawnWorker(process.env.CHAOS_DEBUG ? { ...env.env, LOG_LEVEL: "warn" } : env.env);
  processes.push(proc);
  const loaded = proc.warm.then(
    () => void spares.push(proc),
    (error: unknown) => void (stopping || startTrouble.push(`a worker did not load: ${String(error).slice(0, 1500)}`)),
  );
  loading.add(loaded);
  void loaded.finally(() => loading.delete(loaded));
}

/** The next spare starts serving (one is loaded if none is left); a worker that ends by itself is recorded and replaced. */
function startWorker(): void {
  const started = (async () => {
    while (spares.length === 0) {
      if (stopping) return;
      if (loading.size === 0) loadSpare();
      await Promise.race(loading);
    }
    const proc = spares.shift()!;
    let id: string;
    try {
      id = await proc.serve();
    } catch (error) {
      if (stopping) return;
      startTrouble.push(`a worker did not start: ${String(error).slice(0, 1500)}`);
      return startWorker();
    }
    const worker: Worker = { proc, id, killedByUs: false, exited: false };
    workers.push(worker);
    void proc.exited.then(({ code, signal }) => {
      worker.exited = true;
      if (worker.killedByUs || stopping) return;
      selfExits.push(`worker ${id} exited by itself (code ${code}, signal ${signal}):\n${proc.output().slice(-1500)}`);
      startWorker();
    });
  })();
  starting.add(started);
  void started.finally(() => starting.delete(started));
}

const liveWorkers = () => workers.filter((worker) => !worker.killedByUs && !worker.exited);

beforeAll(async () => {
  const began = Date.now();
  redis = await startOwnRedis();
  env = await createTestEnv({
    REDIS_URL: redis.url,
    FOYA_LEASE_MS: String(LEASE_MS),
    FOYA_STALLED_INTERVAL_MS: String(LEASE_MS / 2),
  });
  tenants = [];
  for (let t = 0; t < TENANTS; t++) tenants.push(await env.newTenant(`chaos-${t}`));
  for (let i = 0; i < 2 + KILLS; i++) loadSpare();
  startWorker();
  startWorker();
  await Promise.all([...starting]);
  if (liveWorkers().length !== 2) throw new Error(`the workers did not start:\n${startTrouble.join("\n")}`);
  await Promise.all([...loading]);
  setupMs = Date.now() - began;
}, 120_000);

afterAll(async () => {
  stopping = true;
  for (const proc of processes) proc.kill("SIGKILL");
  await Promise.all(processes.map((proc) => proc.exited));
  // close() closes the test env's queues: its Redis must answer.
  if (redis && !redis.running()) await redis.restart().catch(() => {});
  await env?.close();
  await redis?.stop();
});

/** The run ids each worker holds a lease on now (a lease owner is `<worker id>/<job id>`). */
async function runsByWorker(): Promise<Map<string, string[]>> {
  const rows = await env.query<{ worker: string; runs: string[] }>(
    "select split_part(lease_owner, '/', 1) as worker, array_agg(id) as runs from runs where status = 'running' and lease_owner is not null group by 1",
  );
  return new Map(rows.map((row) => [row.worker, row.runs]));
}

/** Once two workers serve and a spare is loaded, SIGKILLs the live worker holding the most runs and starts the spare. */
async function killOne(kills: Kill[], killsLeft: number): Promise<void> {
  await Promise.all([...starting]);
  while (spares.length === 0 && !stopping) {
    if (loading.size === 0) loadSpare();
    await Promise.race(loading);
  }
  const live = liveWorkers();
  if (live.length === 0) return;
  const owned = await runsByWorker();
  const victim = live.reduce((best, worker) => ((owned.get(worker.id)?.length ?? 0) > (owned.get(best.id)?.length ?? 0) ? worker : best));
  victim.killedByUs = true;
  victim.proc.kill("SIGKILL");
  kills.push({ at: Date.now(), workerId: victim.id, runIds: owned.get(victim.id) ?? [] });
  await victim.proc.exited;
  startWorker();
  // Spares lost to a failed load or to a worker that died by itself are made up for.
  while (spares.length + loading.size < killsLeft) loadSpare();
}

const sleepUntil = (time: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, time - Date.now())));

/** `echo start`, a pause, `echo end`, in the session's workspace: a start line says the step began, its end line that it finished. */
function bashCommand(run: number, step: number): string {
  const label = `r${run} s${step}`;
  return `echo "start ${label} $$" >> chaos.log; sleep 0.3; echo "end ${label}" >> chaos.log`;
}

/** BASH_STEPS model steps of a text and one bash call (call id `call_r<run>_s<step>`), then a final answer. */
function scriptFor(run: number): string {
  const steps: unknown[][] = Array.from({ length: BASH_STEPS }, (_, step) => [
    { text: `run ${run}, step ${step}` },
    { tool: "bash", id: `call_r${run}_s${step}`, args: { command: bashCommand(run, step) } },
  ]);
  steps.push([{ text: "done" }]);
  return script(steps);
}

/** The `r<run> s<step>` label of a call id. */
const labelOf = (callId: string) => callId.replace(/^call_/, "").replace("_", " ");

/** A project and session; `continue` (SPEC D10) where the API knows the option, else the default. */
async function newSession(client: ApiClient, onInterrupted: "end" | "continue"): Promise<ChaosSession> {
  const project = await client.post<{ id: string }>("/v1/projects", { name: "chaos" });
  if (project.status !== 201) throw new Error(`project creation failed: ${JSON.stringify(project.body)}`);
  const session = await client.post<{ id: string }>("/v1/sessions", { projectId: project.body.id, onInterrupted });
  if (session.status !== 201) throw new Error(`session creation failed: ${JSON.stringify(session.body)}`);
  return { client, sessionId: session.body.id, onInterrupted };
}

async function readChaosLog(workspace: string): Promise<{ starts: Map<string, number>; ends: Set<string> }> {
  const text = await readFile(path.join(workspace, "chaos.log"), "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return "";
    throw error;
  });
  const starts = new Map<string, number>();
  const ends = new Set<string>();
  for (const line of text.split("\n")) {
    const match = /^(start|end) (r\d+ s\d+)\b/.exec(line);
    if (!match) continue;
    if (match[1] === "start") starts.set(match[2]!, (starts.get(match[2]!) ?? 0) + 1);
    else ends.add(match[2]!);
  }
  return { starts, ends };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

const countBy = (values: string[]) =>
  JSON.stringify(Object.fromEntries([...new Set(values)].map((value) => [value, values.filter((v) => v === value).length])));

describe("chaos", () => {
  it("D3, D4, D9, D10, X4: 20 runs of bash steps while workers are SIGKILLed every 2 s and Redis is flushed and restarted: every run ends, no step runs twice, no succeeded step lacks its effect, event logs stay gap-free", async () => {
    const sessions: ChaosSession[] = [];
    for (let i = 0; i < RUNS; i++)
      sessions.push(await newSession(tenants[i % TENANTS]!, Math.floor(i / TENANTS) % 2 === 0 ? "end" : "continue"));
    const plan: Array<{ at: number; kind: FaultKind }> = [
      ...Array.from({ length: KILLS }, (_, k) => ({ at: FIRST_KILL_AT_MS + k * KILL_EVERY_MS, kind: "kill" as const })),
      { at: FLUSH_AT_MS, kind: "flush" as const },
      { at: REDIS_RESTART_AT_MS, kind: "redis-restart" as const },
    ].sort((a, b) => a.at - b.at);
    const kills: Kill[] = [];
    const faults: FaultKind[] = [];

    // The fault schedule and the run starts, side by side.
    const t0 = Date.now();
    const schedule = (async () => {
      for (const [i, fault] of plan.entries()) {
        await sleepUntil(t0 + fault.at);
        if (fault.kind === "kill") await killOne(kills, plan.slice(i + 1).filter((next) => next.kind === "kill").length);
        else if (fault.kind === "flush") await redis!.flushAll();
        else await redis!.restart();
        faults.push(fault.kind);
      }
    })();
    const starts = sessions.map(async (session, run) => {
      await sleepUntil(t0 + run * RUN_SPACING_MS);
      const started = await session.client.startRun(session.sessionId, scriptFor(run));
      if (started.status !== 202) throw new Error(`run ${run} was not accepted: ${started.status} ${JSON.stringify(started.body)}`);
      return started.body.id as string;
    });
    const [runIds] = await Promise.all([Promise.all(starts), schedule]);

    // Every run reaches a terminal state (polled in Postgres, the truth, rather than through the rate-limited API).
    const deadline = Date.now() + TERMINAL_DEADLINE_MS;
    let statuses = new Map<string, string>();
    for (;;) {
      const rows = await env.query<{ id: string; status: string }>("select id, status from runs where id = any($1)", [runIds]);
      statuses = new Map(rows.map((row) => [row.id, row.status]));
      if (runIds.every((id) => terminalStatuses.has(statuses.get(id) ?? "")) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const isTerminal = (runId: string) => terminalStatuses.has(statuses.get(runId) ?? "");
    const notTerminal = runIds.filter((id) => !isTerminal(id));
    const settledMs = Date.now() - t0;

    // The side effects against the record: each step started at most once; each succeeded call's end
    // line is there; no call that started is recorded as never run.
    const calls = await env.query<{ run_id: string; call_id: string; status: string; error_code: string | null }>(
      "select run_id, call_id, status, error_code from tool_calls where run_id = any($1)",
      [runIds],
    );
    const callsOf = (runId: string) => calls.filter((call) => call.run_id === runId);
    const replayed: string[] = [];
    const lostEffects: string[] = [];
    const untruthful: string[] = [];
    let stepsStarted = 0;
    for (const [run, session] of sessions.entries()) {
      const { starts: startLines, ends } = await readChaosLog(await env.workspaceOf(session.sessionId));
      stepsStarted += startLines.size;
      for (const [label, count] of startLines) if (count > 1) replayed.push(`${label} started ${count} times`);
      const byLabel = new Map(callsOf(runIds[run]!).map((call) => [labelOf(call.call_id), call] as const));
      for (const [label, call] of byLabel) {
        if (call.status === "succeeded" && !ends.has(label)) lostEffects.push(`${label} succeeded without its end line`);
      }
      for (const label of startLines.keys()) {
        const call = byLabel.get(label);
        if (!call || !startedCallStatuses.has(call.status))
          untruthful.push(`${label} started but is recorded ${call ? `${call.status} (${call.error_code})` : "nowhere"}`);
      }
    }

    // Per session: events numbered 1..N without a gap; one run_start, and one run_end agreeing with the
    // run; one tool_end per call, agreeing with the call.
    const eventProblems: string[] = [];
    for (const [run, session] of sessions.entries()) {
      const runId = runIds[run]!;
      const events = await env.query<{ seq: string; type: string; data: Record<string, any> }>(
        "select seq, type, data from events where session_id = $1 order by seq",
        [session.sessionId],
      );
      const gap = events.findIndex((event, i) => Number(event.seq) !== i + 1);
      if (gap !== -1) eventProblems.push(`r${run}: event ${gap + 1} has seq ${events[gap]!.seq}`);
      const ofType = (type: string) => events.filter((event) => event.type === type);
      if (ofType("run_start").length !== 1) eventProblems.push(`r${run}: ${ofType("run_start").length} run_start events`);
      if (!isTerminal(runId)) continue;
      const runEnds = ofType("run_end").map((event) => event.data.status);
      if (runEnds.length !== 1 || runEnds[0] !== statuses.get(runId))
        eventProblems.push(`r${run}: run ${statuses.get(runId)}, run_end events ${JSON.stringify(runEnds)}`);
      for (const call of callsOf(runId)) {
        const ended = ofType("tool_end")
          .filter((event) => event.data.callId === call.call_id)
          .map((event) => event.data.status);
        if (ended.length !== 1 || ended[0] !== call.status)
          eventProblems.push(`r${run}: call ${call.call_id} ${call.status}, tool_end events ${JSON.stringify(ended)}`);
      }
    }

    // Per session (SPEC D3): a history every provider accepts, every call answered once, in order; an
    // interrupted call's tool message says so (an error, status interrupted), never a made-up result.
    const historyProblems: string[] = [];
    for (const [run, session] of sessions.entries()) {
      const messages = await session.client.messages(session.sessionId);
      try {
        expectValidHistory(messages);
      } catch (error) {
        historyProblems.push(`r${run}: ${(error as Error).message.split("\n")[0]}`);
      }
      for (const call of callsOf(runIds[run]!).filter((call) => call.status === "interrupted")) {
        const answer = messages.find((message) => message.role === "tool" && message.content.callId === call.call_id)?.content;
        if (answer?.status !== "interrupted" || answer.isError !== true)
          historyProblems.push(`r${run}: interrupted ${call.call_id} answered ${JSON.stringify(answer)?.slice(0, 300)}`);
      }
    }

    // Recovery time (SPEC D9): from each kill to the first `run_status` `recovering` event of each run
    // the killed worker held, read from the event log (which the Redis faults cannot lose). An event
    // belongs to the kill of the worker its reason names; a reason naming none, to the last kill
    // before it of a worker holding the run.
    const recovering = (
      await env.query<{ run_id: string; at: string; reason: string | null }>(
        `select run_id, extract(epoch from created_at) * 1000 as at, data->>'reason' as reason from events
            where run_id = any($1) and type = 'run_status' and data->>'status' = 'recovering' order by created_at`,
        [runIds],
      )
    ).map((event) => ({ ...event, at: Number(event.at) }));
    const belongsTo = (event: { run_id: string; at: number; reason: string | null }, k: number) => {
      const named = kills.find((kill) => event.reason?.includes(kill.workerId));
      if (named) return named === kills[k];
      return !kills.some((later, j) => j > k && later.at <= event.at && later.runIds.includes(event.run_id));
    };
    const recoveries: number[] = [];
    for (const [k, kill] of kills.entries()) {
      for (const runId of kill.runIds) {
        const first = recovering.find((event) => event.run_id === runId && event.at >= kill.at - 5 && belongsTo(event, k));
        if (first) recoveries.push(Math.max(0, first.at - kill.at));
      }
    }
    recoveries.sort((a, b) => a - b);
    const heldRuns = kills.reduce((sum, kill) => sum + kill.runIds.length, 0);

    const replays = replayed.length;
    const lost = lostEffects.length + notTerminal.length;
    const recovery =
      recoveries.length > 0
        ? `recovering after a kill: p50 ${Math.round(percentile(recoveries, 50))} ms, p99 ${Math.round(percentile(recoveries, 99))} ms (${recoveries.length} of ${heldRuns} runs held by killed workers)`
        : `no recovering events observed (${heldRuns} runs held by killed workers)`;
    console.log(`chaos: ${runIds.length} runs, ${faults.length} faults, ${replays} replays, ${lost} lost; ${recovery}`);
    console.log(
      `chaos details: faults ${faults.join(",")}, kills at ${JSON.stringify(kills.map((kill) => kill.at - t0))} ms; ` +
        `calls ${countBy(calls.map((call) => call.status))}; ${stepsStarted} steps started; ` +
        `runs by onInterrupted: end ${countBy(runIds.filter((_, run) => sessions[run]!.onInterrupted === "end").map((id) => statuses.get(id) ?? "?"))}, ` +
        `continue ${countBy(runIds.filter((_, run) => sessions[run]!.onInterrupted === "continue").map((id) => statuses.get(id) ?? "?"))}; ` +
        `all terminal ${settledMs} ms after the first run (set-up ${setupMs} ms); ${selfExits.length} worker self-exits, ${startTrouble.length} start troubles; lease ${LEASE_MS} ms`,
    );
    for (const trouble of [...selfExits, ...startTrouble]) console.log(`chaos worker trouble: ${trouble}`);
    const problems = [...replayed, ...lostEffects, ...notTerminal, ...untruthful, ...eventProblems, ...historyProblems, ...selfExits];
    if (problems.length > 0 || process.env.CHAOS_DEBUG) {
      // The story of the runs, for whoever reads a failure.
      const runRows = await env.query<{ id: string; status: string; error: unknown; started: number; ended: number | null }>(
        "select id, status, error, extract(epoch from created_at) * 1000 as started, extract(epoch from ended_at) * 1000 as ended from runs where id = any($1)",
        [runIds],
      );
      for (const row of runRows) {
        console.log(
          `chaos run r${runIds.indexOf(row.id)} ${row.id} ${row.status} ${Math.round(row.started - t0)}..${row.ended === null ? "" : Math.round(row.ended - t0)} ms ${JSON.stringify(row.error)}`,
        );
      }
      console.log(`chaos kills: ${JSON.stringify(kills.map((kill) => ({ ...kill, at: kill.at - t0 })))}`);
      const timeline = await env.query<{ at: number; run_id: string; type: string; data: Record<string, any> }>(
        "select extract(epoch from created_at) * 1000 as at, run_id, type, data from events where run_id = any($1) and type in ('step_start', 'tool_end', 'run_status', 'run_end') order by created_at, seq",
        [runIds],
      );
      for (const event of timeline) {
        console.log(
          `chaos event ${Math.round(event.at - t0)} ms r${runIds.indexOf(event.run_id)} ${event.type} ${event.data.status ?? event.data.stepIndex ?? ""} ${event.data.callId ?? ""} ${event.data.reason ?? ""}`,
        );
      }
    }

    expect(faults).toEqual(plan.map((fault) => fault.kind));
    expect(
      notTerminal.map((id) => `${id} ${statuses.get(id)}`),
      "runs not terminal",
    ).toEqual([]);
    expect(replayed, "steps started twice").toEqual([]);
    expect(lostEffects, "succeeded calls without their effect").toEqual([]);
    expect(untruthful, "calls that started but are recorded as never run").toEqual([]);
    expect(eventProblems, "event log").toEqual([]);
    expect(historyProblems, "history").toEqual([]);
    expect(selfExits, "workers that ended by themselves").toEqual([]);
  }, 90_000);
});
