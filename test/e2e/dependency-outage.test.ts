import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { readMarkers, releaseMarker } from "../fixtures/test-tools.js";
import { ApiClient, script, textOf, waitFor } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { entryArgs, processGroup, type FoyaProcess } from "../helpers/processes.js";
import { startTcpProxy, targetOf, viaProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { createTestEnv, repoRoot, type TestEnv } from "../helpers/test-env.js";

/**
 * SPEC D9: processes survive their dependencies. The shared Postgres and Redis serve the
 * other test files, so each test takes them away from its own processes only, through a
 * TCP proxy (test/helpers/tcp-proxy.ts) that cuts and resets connections while it drops.
 */

let env: TestEnv;
let client: ApiClient;
const processes = processGroup();
const proxies: TcpProxy[] = [];
/** Put into the processes' DATABASE_URL when it has no password (the test Postgres trusts local connections): it must never be logged. */
const planted = "d9-planted-secret";

beforeAll(async () => {
  env = await createTestEnv();
  client = await env.newTenant();
});
// Each test's processes alone serve its runs: none is left to take another test's jobs.
afterEach(async () => {
  await processes.killAll();
  for (const proxy of proxies.splice(0)) await proxy.close();
});
afterAll(async () => {
  await env?.close();
});

/** How long each outage lasts at least; it also lasts until the process has been refused a few times. */
const outageMs = 2000;

async function proxyTo(dependency: "postgres" | "redis", forwarding: boolean): Promise<{ proxy: TcpProxy; url: string }> {
  const real = dependency === "postgres" ? env.env.DATABASE_URL! : env.env.REDIS_URL!;
  const proxy = await startTcpProxy(targetOf(real, dependency === "postgres" ? 5432 : 6379), { forwarding });
  proxies.push(proxy);
  let url = viaProxy(real, proxy);
  if (dependency === "postgres") {
    const withSecret = new URL(url);
    if (!withSecret.password) withSecret.password = planted;
    url = withSecret.toString();
  }
  return { proxy, url };
}

/** Whether the process has ended, kept current, so a test fails at once instead of at a deadline. */
function watchExit(child: FoyaProcess): () => boolean {
  let ended = false;
  void child.exited.then(() => {
    ended = true;
  });
  return () => ended;
}

/**
 * Takes the dependency away from `child`. `outlasted` waits until the process has been refused
 * three times and the outage has lasted `atLeastMs`; it fails at once, with the log, if the
 * process ended meanwhile.
 */
function startOutage(proxy: TcpProxy, child: FoyaProcess, exited: () => boolean) {
  proxy.drop();
  const droppedAt = Date.now();
  const refusedBefore = proxy.refused;
  return {
    async outlasted(what: string, atLeastMs = outageMs): Promise<void> {
      await waitFor(async () => exited() || (proxy.refused >= refusedBefore + 3 && Date.now() - droppedAt >= atLeastMs), 30_000, what);
      expect(exited(), child.output()).toBe(false);
    },
  };
}

/** The process's "waiting for <dependency>" warnings: one per failed attempt. */
function waitingLines(child: FoyaProcess, dependency: string): string[] {
  return child
    .output()
    .split("\n")
    .filter((line) => line.includes(`"msg":"waiting for ${dependency}:`));
}

/** The worker container's health check (docker-compose.yml), run as compose runs it. */
async function workerHealthcheck(heartbeatFile: string): Promise<{ exitCode: number | undefined; stderr: string }> {
  const result = await execa(process.execPath, entryArgs("src/health/worker-healthcheck.ts"), {
    cwd: repoRoot,
    env: { ...env.env, FOYA_WORKER_HEARTBEAT_FILE: heartbeatFile },
    reject: false,
  });
  return { exitCode: result.exitCode, stderr: String(result.stderr) };
}

async function readyz(base: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}/readyz`);
  return { status: response.status, body: await response.json() };
}

function expectNoSecretsLogged(...children: FoyaProcess[]): void {
  const password = new URL(env.env.DATABASE_URL!).password;
  for (const child of children) {
    expect(child.output()).not.toContain(planted);
    if (password) expect(child.output()).not.toContain(password);
  }
}

/** Nothing lost or doubled: the session's events in strictly increasing order, one run_end per run, a valid history. */
async function expectEachRunEndedOnce(sessionId: string, runIds: string[]): Promise<void> {
  const events = await client.events(sessionId);
  const ids = events.map((event) => Number(event.seq));
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
  expect(new Set(ids).size).toBe(ids.length);
  for (const runId of runIds)
    expect(
      events.filter((event) => event.type === "run_end" && (event.runId ?? event.data?.runId) === runId),
      runId,
    ).toHaveLength(1);
  expectValidHistory(await client.messages(sessionId));
}

describe("dependency outages", () => {
  it("D9: a worker started while Postgres is down waits and then serves; /readyz reports false meanwhile", async () => {
    const { proxy, url } = await proxyTo("postgres", false);
    const processEnv = { ...env.env, DATABASE_URL: url, LOG_LEVEL: "warn" };
    const heartbeatFile = path.join(await mkdtemp(path.join(tmpdir(), "foya-heartbeat-")), "worker.heartbeat");
    const worker = await processes.start("worker", { ...processEnv, FOYA_WORKER_HEARTBEAT_FILE: heartbeatFile }, { until: "spawned" });
    const api = await processes.start("api", processEnv, { until: "listening" });
    const base = api.url!;

    // Each attempt is refused, logged once at warn level, and retried; nobody exits.
    await waitFor(
      async () => waitingLines(worker, "postgres").length >= 2 && waitingLines(api, "postgres").length >= 2,
      15_000,
      "retries to be logged",
    );
    expect(waitingLines(worker, "postgres")[0]).toMatch(/"level":40,.*"msg":"waiting for postgres: [^"]+; retry in \d+ ms"/);
    expect(worker.output()).not.toMatch(/FOYA_WORKER_ID=/);

    const waiting = await readyz(base);
    expect(waiting.status).toBe(503);
    expect(waiting.body).toMatchObject({ status: "unavailable", checks: { startup: "waiting for postgres" } });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const early = await fetch(`${base}/v1/tools`, { headers: { authorization: `Bearer ${client.key}` } });
    expect(early.status).toBe(503);
    expect(early.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await early.json()) as any).error).toEqual({ code: "starting", message: expect.stringContaining("waiting for postgres") });

    // Not serving yet: no heartbeat, so the container's health check fails.
    expect(await workerHealthcheck(heartbeatFile)).toMatchObject({ exitCode: 1, stderr: expect.stringContaining("no heartbeat file") });

    // A run accepted meanwhile (the test's own API reaches Postgres) is served once the worker is.
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "served after the wait" }]]));
    proxy.forward();
    const [, workerPid] = await worker.waitForOutput(/FOYA_WORKER_PID=(\d+)/, 15_000);
    expect(Number(workerPid)).toBe(worker.pid);
    expect(worker.output()).toMatch(/FOYA_WORKER_ID=\S+\nFOYA_WORKER_PID=\d+/);
    expect((await client.waitForRun(run.body.id, 15_000)).status).toBe("completed");
    expect((await workerHealthcheck(heartbeatFile)).exitCode).toBe(0);

    await api.waitForOutput(/FOYA_API_URL=/, 15_000);
    const ready = await waitFor(
      async () => {
        const answer = await readyz(base);
        return answer.status === 200 && answer;
      },
      10_000,
      "/readyz to answer 200",
    );
    expect(ready.body.checks).toEqual({ postgres: "ok", redis: "ok" });
    const served = await ApiClient.forUrl(base, client.key).get(`/v1/runs/${run.body.id}`);
    expect(served.status).toBe(200);
    expect(served.body.status).toBe("completed");
    expectNoSecretsLogged(worker, api);

    // A dead worker's heartbeat names a pid that no longer runs.
    worker.kill("SIGKILL");
    await worker.exited;
    expect(await workerHealthcheck(heartbeatFile)).toMatchObject({
      exitCode: 1,
      stderr: expect.stringContaining(`worker process ${worker.pid} is not running`),
    });
    await rm(path.dirname(heartbeatFile), { recursive: true, force: true });
  });

  it("D9: an API and a worker started while Redis is down wait and then serve; afterwards /readyz follows Redis live", async () => {
    const { proxy, url } = await proxyTo("redis", false);
    const processEnv = { ...env.env, REDIS_URL: url, LOG_LEVEL: "warn" };
    const worker = await processes.start("worker", processEnv, { until: "spawned" });
    const api = await processes.start("api", processEnv, { until: "listening" });
    const base = api.url!;

    await waitFor(
      async () => waitingLines(worker, "redis").length >= 2 && waitingLines(api, "redis").length >= 2,
      15_000,
      "retries to be logged",
    );
    expect(waitingLines(worker, "postgres")).toEqual([]);
    const waiting = await readyz(base);
    expect(waiting.status).toBe(503);
    expect(waiting.body.checks).toEqual({ startup: "waiting for redis" });
    expect(worker.output()).not.toMatch(/FOYA_WORKER_ID=/);

    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "served after redis came" }]]));
    proxy.forward();
    await worker.waitForOutput(/FOYA_WORKER_PID=\d+/, 15_000);
    expect((await client.waitForRun(run.body.id, 15_000)).status).toBe("completed");
    await api.waitForOutput(/FOYA_API_URL=/, 15_000);
    await waitFor(async () => (await readyz(base)).status === 200, 10_000, "/readyz to answer 200");

    // After start-up, readiness is live: Redis away is 503 (the process stays up), back is 200.
    proxy.drop();
    const away = await waitFor(
      async () => {
        const answer = await readyz(base);
        return answer.status === 503 && answer;
      },
      10_000,
      "/readyz to answer 503",
    );
    expect(away.body.checks.postgres).toBe("ok");
    expect(away.body.checks.redis).not.toBe("ok");
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    proxy.forward();
    await waitFor(async () => (await readyz(base)).status === 200, 10_000, "/readyz to answer 200 again");
    expectNoSecretsLogged(worker, api);
  });

  it("D9: a running worker that loses Postgres for a while keeps going: the run in flight, one accepted meanwhile and one started afterwards all complete, once", async () => {
    const { proxy, url } = await proxyTo("postgres", true);
    // Leases outlive the outage, so the call running across it keeps its claim (a shorter lease would be taken over, D3).
    const worker = await processes.start("worker", { ...env.env, DATABASE_URL: url, LOG_LEVEL: "warn", FOYA_LEASE_MS: "15000" });
    const exited = watchExit(worker);

    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const inFlight = await client.startRun(
      sessionId,
      // The call runs until the test ends it after the outage (at most 30 s): across the whole outage, however long it lasts.
      script([
        [{ tool: "marker_sleep", args: { marker: "across-outage", sleepMs: 30_000, until: "across-outage-end" } }],
        [{ text: "tool done" }],
      ]),
    );
    await waitFor(async () => (await readMarkers(workspace, "across-outage")).length === 1, 15_000, "the tool to start");

    // Postgres goes away for this worker: every connection cut, new ones reset.
    const outage = startOutage(proxy, worker, exited);
    const { sessionId: otherSession } = await client.newSession();
    const meanwhile = await client.startRun(otherSession, script([[{ text: "accepted during the outage" }]]));
    await outage.outlasted("the worker to try Postgres and be refused");
    expect((await client.get(`/v1/runs/${inFlight.body.id}`)).body.status).toBe("running");
    proxy.forward();
    await releaseMarker(workspace, "across-outage-end");

    expect((await client.waitForRun(inFlight.body.id, 15_000)).status).toBe("completed");
    expect((await client.waitForRun(meanwhile.body.id, 15_000)).status).toBe("completed");
    const after = await client.startRun(sessionId, script([[{ text: "after the outage" }]]));
    expect((await client.waitForRun(after.body.id, 15_000)).status).toBe("completed");

    expect(exited()).toBe(false);
    expect(await readMarkers(workspace, "across-outage")).toHaveLength(1);
    const toolMessages = await client.toolMessages(sessionId);
    expect(toolMessages.map((message) => message.status)).toEqual(["succeeded"]);
    await expectEachRunEndedOnce(sessionId, [inFlight.body.id, after.body.id]);
    await expectEachRunEndedOnce(otherSession, [meanwhile.body.id]);
    expectNoSecretsLogged(worker);
  });

  it("D3, D9: a tool that finishes while Postgres is away keeps its result: the commit waits for Postgres within the lease and lands once", async () => {
    const { proxy, url } = await proxyTo("postgres", true);
    const worker = await processes.start("worker", { ...env.env, DATABASE_URL: url, LOG_LEVEL: "warn", FOYA_LEASE_MS: "15000" });
    const exited = watchExit(worker);
    const { sessionId } = await client.newSession();
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(
      sessionId,
      script([
        [{ tool: "marker_sleep", args: { marker: "ends-in-outage", sleepMs: 30_000, until: "ends-in-outage-end" } }],
        [{ text: "kept" }],
      ]),
    );
    await waitFor(async () => (await readMarkers(workspace, "ends-in-outage")).length === 1, 15_000, "the tool to start");
    // The tool ends once Postgres is away, and the outage lasts until its result has been refused twice.
    const outage = startOutage(proxy, worker, exited);
    await releaseMarker(workspace, "ends-in-outage-end");
    await waitFor(
      async () => exited() || worker.output().split("the call's result waits to be stored").length > 2,
      15_000,
      "the result's commit to meet the outage twice",
    );
    await outage.outlasted("the worker to be refused", 0);
    proxy.forward();

    expect((await client.waitForRun(run.body.id, 20_000)).status).toBe("completed");
    const toolMessages = await client.toolMessages(sessionId);
    expect(toolMessages.map((message) => [message.status, message.isError ?? false])).toEqual([["succeeded", false]]);
    expect(textOf(toolMessages[0]!)).toBe("marked ends-in-outage");
    expect(await readMarkers(workspace, "ends-in-outage")).toHaveLength(1);
    expect(worker.output()).toContain("the call's result waits to be stored");
    expect(exited()).toBe(false);
    await expectEachRunEndedOnce(sessionId, [run.body.id]);
  });

  it("D9: a worker whose connection is cut in the middle of a transaction survives: that attempt fails, the step runs again and commits once, the worker serves on", async () => {
    const { proxy, url } = await proxyTo("postgres", true);
    const worker = await processes.start("worker", { ...env.env, DATABASE_URL: url, LOG_LEVEL: "warn" });
    const exited = watchExit(worker);
    const { sessionId } = await client.newSession();
    const run = await client.startRun(sessionId, script([[{ text: "streamed slowly", chunks: 20 }]], { chunkDelayMs: 100 }));
    await waitFor(async () => (await client.events(sessionId)).some((event) => event.type === "text_delta"), 15_000, "the step to stream");
    // The test holds the step's row, so the last step's commit (BEGIN, then one statement that
    // also ends the step) waits inside a transaction, on a connection checked out of the pool:
    // the case the pool's own error listener does not cover. The cut lands mid-transaction.
    const locker = new pg.Client({ connectionString: env.env.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("select id from steps where run_id = $1 for no key update", [run.body.id]);
      await waitFor(
        async () =>
          (
            await env.query(
              `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%ended_step%'`,
            )
          ).length === 1,
        15_000,
        "the step's commit to wait inside its transaction",
      );
      proxy.drop();
      await waitFor(async () => proxy.refused >= 1 || exited(), 10_000, "the worker to try Postgres again and be refused");
      expect(exited(), worker.output()).toBe(false);
      await locker.query("rollback");
    } finally {
      await locker.end().catch(() => {});
    }
    proxy.forward();

    expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("completed");
    const after = await client.startRun(sessionId, script([[{ text: "the same worker serves on" }]]));
    expect((await client.waitForRun(after.body.id, 15_000)).status).toBe("completed");
    expect(exited(), worker.output()).toBe(false);
    const messages = await client.messages(sessionId);
    expect(messages.filter((message) => message.role === "assistant").map((message) => message.content.text)).toEqual([
      "streamed slowly",
      "the same worker serves on",
    ]);
    await expectEachRunEndedOnce(sessionId, [run.body.id, after.body.id]);
  });

  it("D9: an API whose connection is cut in the middle of a request's transaction answers 503 unavailable, stays up, and the retry is served", async () => {
    const { proxy, url } = await proxyTo("postgres", true);
    const api = await processes.start("api", { ...env.env, DATABASE_URL: url, LOG_LEVEL: "warn" });
    const exited = watchExit(api);
    const remote = ApiClient.forUrl(api.url!, client.key);
    const { sessionId } = await client.newSession();
    // The test holds the session's row: starting a run (a transaction whose statement takes it)
    // waits inside its transaction, on a connection checked out of the pool, when the cut comes.
    const locker = new pg.Client({ connectionString: env.env.DATABASE_URL });
    await locker.connect();
    let answer: Promise<Awaited<ReturnType<ApiClient["startRun"]>>>;
    try {
      await locker.query("begin");
      await locker.query("select id from sessions where id = $1 for update", [sessionId]);
      answer = remote.startRun(sessionId, script([[{ text: "never stored" }]]));
      await waitFor(
        async () =>
          (
            await env.query(
              `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%"sessions"%'`,
            )
          ).length === 1,
        15_000,
        "the request's transaction to wait on the session's row",
      );
      proxy.drop();
      const cut = await answer;
      expect(cut.status, JSON.stringify(cut.body)).toBe(503);
      expect(cut.body.error.code).toBe("unavailable");
      expect(cut.headers.get("retry-after")).toBe("1");
      await locker.query("rollback");
    } finally {
      await locker.end().catch(() => {});
    }
    expect(exited(), api.output()).toBe(false);
    proxy.forward();

    // The cut transaction left nothing: the retry starts the session's only run.
    const retried = await waitFor(
      async () => {
        const response = await remote.startRun(sessionId, script([[{ text: "stored" }]]));
        return response.status === 202 && response;
      },
      15_000,
      "the API to serve again",
    );
    const counted = await env.query<{ runs: number }>("select count(*)::int as runs from runs where session_id = $1", [sessionId]);
    expect(counted).toEqual([{ runs: 1 }]);
    expect((await remote.get(`/v1/runs/${retried.body.id}`)).body.id).toBe(retried.body.id);
    expect(exited(), api.output()).toBe(false);
    expectNoSecretsLogged(api);
  });

  it("D9: a running worker that loses Redis for a while keeps going: a run accepted meanwhile and one started afterwards complete, once", async () => {
    const { proxy, url } = await proxyTo("redis", true);
    const worker = await processes.start("worker", { ...env.env, REDIS_URL: url, LOG_LEVEL: "warn" });
    const exited = watchExit(worker);
    const { sessionId } = await client.newSession();
    const before = await client.startRun(sessionId, script([[{ text: "before the outage" }]]));
    expect((await client.waitForRun(before.body.id, 15_000)).status).toBe("completed");

    const outage = startOutage(proxy, worker, exited);
    const meanwhile = await client.startRun(sessionId, script([[{ text: "accepted during the outage" }]]));
    await outage.outlasted("the worker to try Redis and be refused");
    // The worker cannot have taken it: its job waits in the Redis the worker cannot reach.
    expect((await client.get(`/v1/runs/${meanwhile.body.id}`)).body.status).not.toBe("completed");
    proxy.forward();

    expect((await client.waitForRun(meanwhile.body.id, 15_000)).status).toBe("completed");
    const after = await client.startRun(sessionId, script([[{ text: "after the outage" }]]));
    expect((await client.waitForRun(after.body.id, 15_000)).status).toBe("completed");
    expect(exited()).toBe(false);
    await expectEachRunEndedOnce(sessionId, [before.body.id, meanwhile.body.id, after.body.id]);
  });

  it("D9: two migrate one-shots started while Postgres is down both wait, then the migrations are applied exactly once", async () => {
    const adminUrl = inject("databaseUrl");
    const databaseName = `foya_test_migrate_${randomBytes(4).toString("hex")}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${databaseName}`);
    try {
      const fresh = new URL(adminUrl);
      fresh.pathname = `/${databaseName}`;
      const proxy = await startTcpProxy(targetOf(fresh.toString(), 5432), { forwarding: false });
      proxies.push(proxy);
      const migrateEnv = { ...env.env, DATABASE_URL: viaProxy(fresh.toString(), proxy), LOG_LEVEL: "warn" };
      const outputs = ["", ""];
      const runs = outputs.map((_, index) => {
        const child = execa(process.execPath, entryArgs("src/db/migrate-cli.ts"), {
          cwd: repoRoot,
          env: migrateEnv,
          all: true,
          reject: false,
          buffer: false,
        });
        child.all?.on("data", (chunk: Buffer) => {
          outputs[index] += chunk.toString();
        });
        return child;
      });
      try {
        await waitFor(
          async () => outputs.every((output) => (output.match(/"msg":"waiting for postgres: [^"]+; retry in \d+ ms"/g) ?? []).length >= 2),
          15_000,
          "both to wait",
        );
        proxy.forward();
        const results = await Promise.all(runs);
        expect(
          results.map((result) => result.exitCode),
          outputs.join("\n"),
        ).toEqual([0, 0]);
        for (const output of outputs) expect(output).toContain("migrations applied");
      } finally {
        for (const child of runs) child.kill("SIGKILL");
      }
      const journal = JSON.parse(await readFile(path.join(repoRoot, "drizzle/meta/_journal.json"), "utf8")) as { entries: unknown[] };
      const direct = new pg.Client({ connectionString: fresh.toString() });
      await direct.connect();
      try {
        const { rows } = await direct.query<{ count: number }>("select count(*)::int as count from drizzle.__drizzle_migrations");
        expect(rows[0]!.count).toBe(journal.entries.length);
      } finally {
        await direct.end();
      }
    } finally {
      await admin.query(`drop database if exists ${databaseName} with (force)`);
      await admin.end();
    }
  });
});
