/**
 * Live events benchmark (SPEC D5): how long a committed event takes to reach SSE clients.
 *
 *   npm run bench:events
 *
 * An API process (`src/api/main.ts`, as `npm run api` runs it) serves real HTTP SSE streams;
 * this process holds the clients and commits the events: each one a real unit of work
 * (`unitOfWork.transact` → `emit`: the append statement, the commit, then the bus's publish),
 * timed from the moment the transaction committed to the moment a client parsed its frame.
 * Scenarios: 1 client on one session, 100 clients on one session, and 1,000 clients over 100
 * sessions (10 each, commits spread round-robin over the sessions, 5 times as often: half the
 * frames per second of 100 clients on one session, 500 commits per second). Commits are paced (open loop,
 * one every BENCH_EVENTS_INTERVAL_MS) so a server that falls behind shows as growing latency,
 * not as a slower producer. Every client must get every event once, in order, or the run fails.
 * The floor is Redis pub/sub alone, measured in the same run: one subscriber connection, a
 * message of the same size at the same pace, publish → message.
 *
 * Results: stdout and bench/results/events.json. Knobs (env, optional): BENCH_EVENTS_COUNT (300
 * per scenario), BENCH_EVENTS_INTERVAL_MS (10), BENCH_EVENTS_SCENARIOS ("1,100,1000"),
 * BENCH_CPU_PROFILE_DIR (a CPU profile of the API process).
 */
import http from "node:http";
import { loadavg } from "node:os";
import path from "node:path";
import { createParser } from "eventsource-parser";
import { Redis } from "ioredis";
import { createApp } from "../src/api/app.js";
import { loadConfig } from "../src/config.js";
import type { RunId, SessionId, TenantId } from "../src/ids.js";
import { createServices, type Services } from "../src/services.js";
import { createBenchEnv, type BenchEnv } from "./support/bench-env.js";
import { envInt } from "./support/env-int.js";
import { apiCall, writeBenchResult } from "./support/in-process-api.js";
import { watchOtherLoad } from "./support/other-load.js";
import { cleanUpOnSignal, printOutputTails, runBenchmark, startBenchProcess, type BenchProcess } from "./support/processes.js";
import { distribution, ratio, round, roundDistribution, type Distribution } from "./support/stats.js";

const settings = {
  events: envInt("BENCH_EVENTS_COUNT", 300, 100_000),
  intervalMs: envInt("BENCH_EVENTS_INTERVAL_MS", 10, 10_000),
  scenarios: (process.env.BENCH_EVENTS_SCENARIOS ?? "1,100,1000").split(",").map((n) => Number.parseInt(n, 10)),
  /** The text of each `text_delta`: a coalesced delta of a streaming model. */
  text: "The quick brown fox jumps over the lazy dog; ".repeat(2),
};
const aims = { p50Ms: 10, p99Ms: 30 };

interface Session {
  id: SessionId;
  runId: RunId;
}

/** One SSE client: the sequence numbers it got and when, by the bench's clock. */
interface Client {
  sessionId: SessionId;
  received: Array<{ seq: number; at: number }>;
  close(): void;
}

function openClient(baseUrl: string, key: string, sessionId: SessionId, afterSeq: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const received: Client["received"] = [];
    const parser = createParser({
      onEvent: (message) => received.push({ seq: Number(message.id), at: performance.now() }),
    });
    const request = http.get(
      `${baseUrl}/v1/sessions/${sessionId}/events?after=${afterSeq}`,
      { headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" }, agent: false },
      (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`SSE answered ${response.statusCode}`));
          response.resume();
          return;
        }
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => parser.feed(chunk));
        response.on("error", () => undefined);
        resolve({ sessionId, received, close: () => request.destroy() });
      },
    );
    request.on("error", (error) => {
      if (!request.destroyed) reject(error);
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Commits one `text_delta` through a unit of work; answers its seq and when the transaction committed. */
async function commitEvent(services: Services, tenantId: TenantId, session: Session): Promise<{ seq: number; committedAt: number }> {
  let committedAt = 0;
  const [event] = await services.unitOfWork.transact(
    (fx) => fx.emit(tenantId, session.id, [{ runId: session.runId, step: null, body: { type: "text_delta", text: settings.text } }]),
    { afterCommit: () => (committedAt = performance.now()) },
  );
  if (!event) throw new Error("the append answered no event");
  return { seq: event.seq, committedAt };
}

/** What the API process did during a scenario's paced commits (bench/support/process-probe.ts). */
interface ApiWork {
  queries: number;
  queriesPerCommit: number;
  statements: Record<string, number>;
  cpuMsPerFrame: number;
  eventLoopUtilization: number;
}

interface ScenarioResult {
  clients: number;
  sessions: number;
  events: number;
  intervalMs: number;
  deliveries: number;
  latencyMs: Distribution;
  /** Events per second the producer kept up, and frames per second the clients got. */
  commitsPerSecond: number;
  framesPerSecond: number;
  api: ApiWork;
}

async function scenario(
  services: Services,
  api: BenchProcess,
  baseUrl: string,
  tenant: { key: string; tenantId: TenantId },
  sessions: Session[],
  clientsCount: number,
  plan: { events: number; intervalMs: number },
): Promise<ScenarioResult> {
  // Streams start at each session's current end: only this scenario's events count.
  const startSeq = new Map<SessionId, number>();
  for (const row of await services.store.sessions.eventSeqOfSessions(sessions.map((s) => s.id))) startSeq.set(row.id, row.eventSeq);
  const clients: Client[] = [];
  for (let start = 0; start < clientsCount; start += 50) {
    const batch = Array.from({ length: Math.min(50, clientsCount - start) }, (_, i) => {
      const session = sessions[(start + i) % sessions.length] as Session;
      return openClient(baseUrl, tenant.key, session.id, startSeq.get(session.id) ?? 0);
    });
    clients.push(...(await Promise.all(batch)));
  }
  try {
    // A first event per session that every client gets: then every stream is subscribed and live.
    for (const session of sessions) await commitEvent(services, tenant.tenantId, session);
    await waitUntil(() => clients.every((client) => client.received.length >= 1), 60_000, "every client's first event");
    const warm = new Map(clients.map((client) => [client, client.received.length]));

    await api.resetProbe();
    const committed = new Map<string, number>();
    const pending: Array<Promise<void>> = [];
    const started = performance.now();
    for (let i = 0; i < plan.events; i++) {
      const session = sessions[i % sessions.length] as Session;
      pending.push(
        commitEvent(services, tenant.tenantId, session).then(({ seq, committedAt }) => {
          committed.set(`${session.id}:${seq}`, committedAt);
        }),
      );
      const next = started + (i + 1) * plan.intervalMs;
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
    }
    await Promise.all(pending);
    const producedMs = performance.now() - started;
    const perSession = new Map<SessionId, number>();
    for (let i = 0; i < plan.events; i++) {
      const id = (sessions[i % sessions.length] as Session).id;
      perSession.set(id, (perSession.get(id) ?? 0) + 1);
    }
    await waitUntil(
      () => clients.every((client) => client.received.length - (warm.get(client) ?? 0) >= (perSession.get(client.sessionId) ?? 0)),
      120_000,
      "every client to get every event",
    );
    const deliveredMs = performance.now() - started;
    const probe = await api.readProbe();

    const latencies: number[] = [];
    for (const client of clients) {
      const seqs = client.received.map((r) => r.seq);
      const first = startSeq.get(client.sessionId) ?? 0;
      const expected = Array.from({ length: seqs.length }, (_, i) => first + 1 + i);
      if (seqs.some((seq, i) => seq !== expected[i])) throw new Error(`a client of ${client.sessionId} got ${seqs.join(",")}`);
      for (const frame of client.received.slice(warm.get(client) ?? 0)) {
        const at = committed.get(`${client.sessionId}:${frame.seq}`);
        if (at === undefined) throw new Error(`frame ${frame.seq} was never committed`);
        latencies.push(frame.at - at);
      }
    }
    return {
      clients: clientsCount,
      sessions: sessions.length,
      events: plan.events,
      intervalMs: plan.intervalMs,
      deliveries: latencies.length,
      latencyMs: roundDistribution(distribution(latencies)),
      commitsPerSecond: round(plan.events / (producedMs / 1000)),
      framesPerSecond: round(latencies.length / (deliveredMs / 1000)),
      api: {
        queries: probe.queries,
        queriesPerCommit: round(probe.queries / plan.events),
        statements: probe.statements,
        cpuMsPerFrame: round((probe.cpuUserMs + probe.cpuSystemMs) / latencies.length),
        eventLoopUtilization: round(probe.eventLoopUtilization),
      },
    };
  } finally {
    for (const client of clients) client.close();
  }
}

/** Redis pub/sub alone at the same pace and size: the floor of any fan-out through it. */
async function redisFloor(redisUrl: string, payloadBytes: number): Promise<Distribution> {
  const publisher = new Redis(redisUrl);
  const subscriber = new Redis(redisUrl);
  const channel = `foya-bench-events-floor:${process.pid}`;
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  try {
    subscriber.on("message", (_channel: string, message: string) => {
      const at = performance.now();
      const index = Number(message.slice(0, message.indexOf(" ")));
      const sent = sentAt.get(index);
      if (sent !== undefined) latencies.push(at - sent);
    });
    await subscriber.subscribe(channel);
    const filler = "x".repeat(Math.max(0, payloadBytes - 8));
    const started = performance.now();
    for (let i = 0; i < settings.events; i++) {
      sentAt.set(i, performance.now());
      void publisher.publish(channel, `${i} ${filler}`);
      const wait = started + (i + 1) * settings.intervalMs - performance.now();
      if (wait > 0) await sleep(wait);
    }
    await waitUntil(() => latencies.length >= settings.events, 10_000, "every pub/sub message");
  } finally {
    publisher.disconnect();
    subscriber.disconnect();
  }
  return roundDistribution(distribution(latencies));
}

async function main(): Promise<void> {
  let benchEnv: BenchEnv | undefined;
  let services: Services | undefined;
  let api: BenchProcess | undefined;
  const cleanup = async () => {
    await api?.stop(3000).catch(() => undefined);
    await services?.close().catch(() => undefined);
    await benchEnv?.destroy();
  };
  cleanUpOnSignal(cleanup);
  try {
    benchEnv = await createBenchEnv({ maxStepsPerRun: 10, concurrency: 4 });
    const env = {
      ...benchEnv.env,
      // 1,000 streams of one tenant and one key: the per-key rate limit would count each connect.
      FOYA_API_RATE_LIMIT: "0",
      FOYA_API_MAX_STREAMS_PER_TENANT: "5000",
    };
    const config = loadConfig(env);
    services = await createServices(config, { role: "bench" });
    const app = createApp(services);
    const admin = config.api.adminToken ?? "";
    const created = await apiCall<{ apiKey: string; tenant: { id: TenantId } }>(app, admin, "POST", "/v1/tenants", {
      name: "events-bench",
    });
    const tenant = { key: created.apiKey, tenantId: created.tenant.id };
    const project = await apiCall<{ id: string }>(app, tenant.key, "POST", "/v1/projects", { name: "events-bench" });
    // No worker runs: each session's run stays queued, and the events are the bench's own commits.
    const newSession = async (): Promise<Session> => {
      const session = await apiCall<{ id: SessionId }>(app, tenant.key, "POST", "/v1/sessions", { projectId: project.id });
      const run = await apiCall<{ id: RunId }>(app, tenant.key, "POST", `/v1/sessions/${session.id}/runs`, { input: "hello" });
      return { id: session.id, runId: run.id };
    };

    const profileDir = process.env.BENCH_CPU_PROFILE_DIR;
    api = await startBenchProcess({
      label: "api",
      entry: "src/api/main.ts",
      env: { ...env, FOYA_MIGRATE_ON_START: "false" },
      readyMarker: /FOYA_API_URL=\S+/,
      ...(profileDir ? { nodeArgs: ["--cpu-prof", "--cpu-prof-dir", path.resolve(profileDir)] } : {}),
    });
    const baseUrl = /FOYA_API_URL=(\S+)/.exec(api.output())?.[1] as string;

    const load = await watchOtherLoad();
    const loadBefore = loadavg()[0] as number;
    console.log(
      `events bench: ${settings.events} commits per scenario, one every ${settings.intervalMs} ms; load average ${loadBefore.toFixed(2)}`,
    );
    const payloadBytes = JSON.stringify([
      {
        seq: 1,
        sessionId: "ses_x",
        runId: "run_x",
        step: null,
        type: "text_delta",
        data: { type: "text_delta", text: settings.text },
        at: new Date().toISOString(),
      },
    ]).length;
    const floor = await redisFloor(benchEnv.redisUrl, payloadBytes);

    const results: ScenarioResult[] = [];
    for (const clients of settings.scenarios) {
      const sessionsCount = clients >= 1000 ? 100 : 1;
      const sessions = await Promise.all(Array.from({ length: sessionsCount }, () => newSession()));
      // Over 100 sessions, commits come 5 times as often (and 5 times as many): each session gets one
      // every 20 intervals, and the process sends half as many frames per second as with 100 clients on one session.
      const plan = sessionsCount > 1 ? { events: settings.events * 5, intervalMs: settings.intervalMs / 5 } : settings;
      const result = await scenario(services, api, baseUrl, tenant, sessions, clients, plan);
      results.push(result);
      console.log(
        `  ${clients} clients / ${sessionsCount} sessions: p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms (${result.deliveries} deliveries); API: ${result.api.queries} queries, ${result.api.cpuMsPerFrame} ms CPU per frame, event loop ${Math.round(result.api.eventLoopUtilization * 100)}% busy`,
      );
    }
    const floorAfter = await redisFloor(benchEnv.redisUrl, payloadBytes);
    const otherLoad = await load.finish();
    const loadAfter = loadavg()[0] as number;

    const rows = results.map((r) => ({
      ...r,
      p50VsRedis: round(ratio(r.latencyMs.p50, floor.p50)),
      p99VsRedis: round(ratio(r.latencyMs.p99, floor.p99)),
      meetsAim: r.latencyMs.p50 <= aims.p50Ms && r.latencyMs.p99 <= aims.p99Ms,
    }));
    console.log(
      "\n| clients / sessions | commit → client p50 / p90 / p99 / max | × Redis p50 / p99 | commits/s | frames/s | aim (≤ 10 / 30 ms) |",
    );
    console.log("|---|---|---|---|---|---|");
    for (const r of rows) {
      const d = r.latencyMs;
      console.log(
        `| ${r.clients} / ${r.sessions} | ${d.p50} / ${d.p90} / ${d.p99} / ${d.max} ms | ${r.p50VsRedis}× / ${r.p99VsRedis}× | ${r.commitsPerSecond} | ${r.framesPerSecond} | ${r.meetsAim ? "yes" : "no"} |`,
      );
    }
    console.log(
      `| Redis pub/sub alone (floor), before / after | ${floor.p50} / ${floor.p99} ms; ${floorAfter.p50} / ${floorAfter.p99} ms | 1× | | | |`,
    );
    console.log(
      `load average ${loadBefore.toFixed(2)} → ${loadAfter.toFixed(2)}; other processes used ${otherLoad === undefined ? "?" : `${Math.round(otherLoad * 100)}%`} of the CPUs`,
    );
    writeBenchResult("events", {
      settings: { events: settings.events, intervalMs: settings.intervalMs, textBytes: settings.text.length },
      aims,
      redisFloorMs: { before: floor, after: floorAfter },
      scenarios: rows,
      loadAverage: { before: round(loadBefore), after: round(loadAfter) },
      otherLoadShare: otherLoad === undefined ? null : round(otherLoad),
    });
  } catch (error) {
    if (api) printOutputTails([api]);
    throw error;
  } finally {
    await cleanup();
  }
}

runBenchmark(main);
