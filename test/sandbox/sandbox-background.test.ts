import { existsSync } from "node:fs";
import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CommandId, RunId, SessionId, TenantId } from "../../src/ids.js";
import type { Confinement } from "../../src/sandbox/confinement.js";
import type { ProcessLimits } from "../../src/core/process-limits.js";
import { createSandbox, type SandboxRunner } from "../../src/sandbox/sandbox-runner.js";
import { toolIdentity } from "../../src/sandbox/tool-identity.js";
import { createCallProcesses } from "../../src/tools/shell/create-call-processes.js";
import { startBackgroundCommands, type BackgroundCommands } from "../../src/worker/background-commands.js";
import { script, waitFor } from "../helpers/api-client.js";
import { repoRoot, useTestEnv } from "../helpers/test-env.js";
import { killAll, livingSlirp4netns, slirp4netnsLeftAfter, survivorsAfter, uniqueMarker } from "./host-processes.js";
import type { ProcessIdentity } from "../../src/core/process-identity.js";

// Background commands (B1) started directly on a BackgroundCommands with the service's sandbox runner, on the real database.
const { env, client } = useTestEnv();
const toolPath = "/usr/local/bin:/usr/bin:/bin";
const markers = new Set<string>();
let commands: BackgroundCommands;
let owner: { tenantId: TenantId; sessionId: SessionId; runId: RunId; cwd: string };
let identity: ProcessIdentity;
let outside: string;

beforeAll(async () => {
  outside = await realpath(await mkdtemp(path.join(tmpdir(), "foya-sbx-bg-outside-")));
  commands = startBackgroundCommands({ store: env.services.store, workerId: "sandbox-test", leaseMs: 2000, onError: () => {} });
  const { sessionId } = await client.newSession();
  const run = await client.startRun(sessionId, script([[{ text: "ok" }]]));
  const [row] = await env.query<{ tenant_id: TenantId }>("select tenant_id from runs where id = $1", [run.body.id]);
  owner = { tenantId: row!.tenant_id, sessionId, runId: run.body.id, cwd: await env.workspaceOf(sessionId) };
  identity = toolIdentity(env.services.identityMode, (await env.services.tenantSettings.get(owner.tenantId)).toolUidSlot);
});

afterAll(async () => {
  await commands?.stop();
  await killAll(markers);
  await rm(outside, { recursive: true, force: true });
});

const sandboxed = (network: boolean): Confinement => ({ kind: "sandbox", network });
/** Starts a command as the worker does: the call's processes built from the tenant's identity and limits, and a runner. */
const start = (
  command: string,
  confinement: Confinement = sandboxed(false),
  runner: SandboxRunner = env.services.sandbox,
  on: BackgroundCommands = commands,
  limits: Partial<ProcessLimits> = {},
) =>
  on.start({
    ...owner,
    command,
    processes: createCallProcesses({
      runner,
      toolPath,
      workspaceDir: owner.cwd,
      confinement,
      identity,
      limits: { ...env.config.toolLimits, ...limits },
    }),
  });
const row = async (id: string) =>
  (
    await env.query<{ status: string; exit_code: number | null; signal: string | null; output: string }>(
      "select status, exit_code, signal, output from commands where id = $1",
      [id],
    )
  )[0];
const ended = (id: string) =>
  waitFor(
    async () => {
      const found = await row(id);
      return found && found.status !== "running" && found;
    },
    20_000,
    `command ${id} to end`,
  );

describe("sandboxed background commands", () => {
  it("B1, S7: background commands are capped per tenant across workers, and live at most the tenant's lifetime limit", async () => {
    const other = startBackgroundCommands({ store: env.services.store, workerId: "sandbox-test-second", leaseMs: 2000, onError: () => {} });
    const marker = uniqueMarker();
    markers.add(marker);
    try {
      const capped = { backgroundCommands: 2, backgroundSeconds: 600 };
      const first = (await start(`sleep ${marker}`, sandboxed(false), env.services.sandbox, commands, capped)) as { id: CommandId };
      const second = (await start(`sleep ${marker}`, sandboxed(false), env.services.sandbox, other, capped)) as { id: CommandId };
      expect(first.id && second.id).toBeTruthy();
      // A third, on either worker, is refused before anything is recorded.
      for (const on of [commands, other])
        expect(await start("echo three", sandboxed(false), env.services.sandbox, on, capped)).toMatchObject({
          code: "too_many_commands",
          error: expect.stringContaining("its limit"),
        });
      commands.cancel(first.id);
      other.cancel(second.id);
      await ended(first.id);
      await ended(second.id);
      // Past its lifetime a command is killed, and its output says why.
      const short = (await start(`sleep ${marker}`, sandboxed(false), env.services.sandbox, commands, { backgroundSeconds: 1 })) as {
        id: CommandId;
      };
      const done = await ended(short.id);
      expect(done).toMatchObject({ status: "killed" });
      expect(done.output).toContain("[stopped: background commands live at most 1 s]");
      expect(await survivorsAfter(marker, 1000)).toEqual([]);
    } finally {
      await other.stop();
    }
  });

  it("S3: a background command runs in the sandbox: the workspace is writable, nothing outside is", async () => {
    const target = path.join(outside, "bg.txt");
    const started = await start(`echo made > made.txt && echo pwned > ${target}`);
    expect(started).toHaveProperty("id");
    const done = await ended((started as { id: CommandId }).id);
    expect(done).toMatchObject({ status: "failed", exit_code: 1 });
    expect(done.output).toContain("No such file or directory");
    expect(await readFile(path.join(owner.cwd, "made.txt"), "utf8")).toBe("made\n");
    expect(existsSync(target)).toBe(false);
  });

  it("B2: a command killed by a signal inside the sandbox is reported killed, not as an exit code", async () => {
    const started = (await start("echo started; kill -9 $$")) as { id: CommandId };
    expect(await ended(started.id)).toMatchObject({ status: "killed", signal: "SIGKILL", exit_code: null });
  });

  it("C1: cancelling a sandboxed background command kills its whole process tree", async () => {
    const marker = uniqueMarker();
    markers.add(marker);
    const started = (await start(`sleep ${marker} & (sleep ${marker} &); setsid sleep ${marker} & wait`)) as { id: CommandId };
    await waitFor(async () => (await survivorsAfter(marker, 0)).length >= 4, 10_000, "the process tree to start");
    expect(commands.cancel(started.id)).toBe(true);
    expect(await ended(started.id)).toMatchObject({ status: "cancelled" });
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
  });

  it("S3: a network-granted background command has its own connected network, not the host's loopback; slirp4netns ends with it", async () => {
    const started = (await start(
      "cat /proc/net/route; exec 3<>/dev/tcp/127.0.0.1/5432 && echo postgres; exec 3<>/dev/tcp/10.0.2.2/6379 && echo redis",
      sandboxed(true),
    )) as { id: CommandId };
    const done = await ended(started.id);
    expect(done).toMatchObject({ status: "failed", exit_code: 1 });
    expect(done.output).toMatch(/^tap0\t00000000\t0202000A/m);
    expect(done.output).toContain("/dev/tcp/127.0.0.1/5432: Connection refused");
    expect(done.output).toContain("/dev/tcp/10.0.2.2/6379: Network is unreachable");
    expect(done.output).not.toMatch(/^(postgres|redis)$/m);
    expect(await slirp4netnsLeftAfter(1000)).toEqual([]);

    // Cancelled while it runs: the command's tree and slirp4netns are gone.
    const marker = uniqueMarker();
    markers.add(marker);
    const running = (await start(`sleep ${marker} & setsid sleep ${marker} & wait`, sandboxed(true))) as { id: CommandId };
    await waitFor(async () => (await survivorsAfter(marker, 0)).length >= 4, 10_000, "the process tree to start");
    expect((await livingSlirp4netns()).length).toBeGreaterThanOrEqual(1);
    expect(commands.cancel(running.id)).toBe(true);
    expect(await ended(running.id)).toMatchObject({ status: "cancelled" });
    expect(await survivorsAfter(marker, 1000)).toEqual([]);
    expect(await slirp4netnsLeftAfter(1000)).toEqual([]);
  });

  it("S3: a network-granted background command is refused before anything is recorded when slirp4netns is missing", async () => {
    const broken = startBackgroundCommands({
      store: env.services.store,
      workerId: "sandbox-test-no-slirp",
      leaseMs: 2000,
      onError: () => {},
    });
    const runner = createSandbox({
      bwrapPath: "bwrap",
      slirp4netnsPath: "/nonexistent/slirp4netns",
      searchPath: toolPath,
      workspacesDir: env.config.workspaces.dir,
      servicePaths: [repoRoot],
    });
    try {
      const refused = await start("echo ran", sandboxed(true), runner, broken);
      expect(refused).toMatchObject({
        code: "sandbox_unavailable",
        error: expect.stringContaining("install the Debian package slirp4netns"),
      });
      expect(await env.query("select id from commands where owner_worker = 'sandbox-test-no-slirp'")).toEqual([]);
      // Without the network grant it is not needed.
      const plain = (await start("echo ran", sandboxed(false), runner, broken)) as { id: CommandId };
      await waitFor(async () => (await row(plain.id))?.status === "exited", 20_000, "the command without network");
    } finally {
      await broken.stop();
    }
  });

  it("S3, S8: without a usable sandbox nothing is recorded or started, Full Access included, and the refusal says why", async () => {
    const target = path.join(outside, "never.txt");
    const broken = startBackgroundCommands({
      store: env.services.store,
      workerId: "sandbox-test-broken",
      leaseMs: 2000,
      onError: () => {},
    });
    const runner = createSandbox({
      bwrapPath: "/nonexistent/bwrap",
      searchPath: toolPath,
      workspacesDir: env.config.workspaces.dir,
      servicePaths: [repoRoot],
    });
    try {
      for (const confinement of [sandboxed(false), { kind: "full_access" } as const]) {
        const refused = await start(`echo ran > ${target}`, confinement, runner, broken);
        expect(refused, confinement.kind).toMatchObject({
          code: "sandbox_unavailable",
          error: expect.stringContaining("install the Debian package bubblewrap"),
        });
      }
      expect(await env.query("select id from commands where owner_worker = 'sandbox-test-broken'")).toEqual([]);
      expect(existsSync(target)).toBe(false);
    } finally {
      await broken.stop();
    }
  });
});
