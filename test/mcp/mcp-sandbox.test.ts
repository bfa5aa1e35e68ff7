import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, type ApiClient } from "../helpers/api-client.js";
import { processGroup } from "../helpers/processes.js";
import { createTestEnv, repoRoot, type TestEnv } from "../helpers/test-env.js";
import { createLogger } from "../../src/logger.js";
import { createMcpConnections } from "../../src/mcp/mcp-connections.js";
import { createSandbox } from "../../src/sandbox/sandbox-runner.js";
import { testIdentity } from "../helpers/tool-context.js";
import { sandboxedMcpOverrides, testStdioCommands } from "./mcp-test-helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const probeEntry = path.join(here, "fixtures/probe-server.mjs");

let env: TestEnv;
let client: ApiClient;
const processes = processGroup();

beforeAll(async () => {
  env = await createTestEnv(sandboxedMcpOverrides);
  client = await env.newTenant("tenant", { fullAccess: true });
});
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

/** Only this worker process takes jobs: the one before it is stopped first. */
async function onlyWorker(extra: Record<string, string>): Promise<void> {
  await processes.killAll();
  await processes.start("worker", { ...env.env, ...extra });
}

interface ProbeReport {
  env: Record<string, string>;
  cwd: string;
  pids: number;
  secretsSeen: number;
  parentEnviron: boolean;
  uid: number;
  paths: Record<string, boolean>;
  ports: Record<string, string>;
}

/** Runs the probe server's tool in a new session (of `projectId`, or a new project) and answers its report. */
async function probe(server: string, projectId?: string): Promise<{ report: ProbeReport; sessionId: string }> {
  const sessionId = projectId
    ? (await client.post<{ id: string }>("/v1/sessions", { projectId, approvalMode: "full_access" })).body.id
    : (await client.newSession({ approvalMode: "full_access" })).sessionId;
  const args = {
    paths: [path.join(repoRoot, "package.json"), path.join(repoRoot, ".git"), "/root", "/etc/passwd"],
    ports: [postgresPort(), redisPort()],
  };
  const run = await client.startRun(sessionId, script([[{ tool: `mcp__${server}__probe`, args }], [{ text: "done" }]]));
  expect((await client.waitForRun(run.body.id, 60_000)).status).toBe("completed");
  const message = (await client.messages(sessionId)).find((m) => m.role === "tool")?.content;
  expect(message, JSON.stringify(message)).toMatchObject({ status: "succeeded" });
  return { report: JSON.parse(message.content[0].text) as ProbeReport, sessionId };
}

const postgresPort = () => Number(new URL(env.env.DATABASE_URL as string).port || 5432);
const redisPort = () => Number(new URL(env.env.REDIS_URL as string).port || 6379);

describe("stdio MCP servers in the sandbox", () => {
  it("M1, S7: unconfined (FOYA_MCP_SANDBOX=false), a stdio server still runs as its tenant's uid, never root: the worker's environment stays out of reach", async () => {
    await onlyWorker({ FOYA_MCP_SANDBOX: "false" });
    expect(
      (
        await client.post("/v1/mcp-servers", {
          name: "loose",
          transport: { kind: "stdio", command: process.execPath, args: [probeEntry], env: { PROBE: "1" } },
        })
      ).status,
    ).toBe(201);
    const { report } = await probe("loose");
    // Its configured environment, and the PATH the service gives every server (FOYA_TOOL_PATH); nothing of the worker's.
    expect(report.env).toEqual({ PROBE: "1", PATH: expect.stringContaining("/usr/bin") });
    // Unconfined, it sees the host's processes; but as another uid than the worker's, /proc/<worker>/environ is closed to it.
    expect(report.parentEnviron).toBe(process.getuid?.() !== 0);
    if (process.getuid?.() === 0) expect(report.uid).not.toBe(0);
  });

  it("M1, S3: a sandboxed stdio server sees no process of the host, no secret, no service file and no loopback service; it works in its project's workspace", async () => {
    await onlyWorker({});
    const { projectId } = await client.newSession();
    const created = await client.post("/v1/mcp-servers", {
      name: "boxed",
      projectId,
      transport: { kind: "stdio", command: process.execPath, args: [probeEntry], env: { PROBE: "1" } },
    });
    expect(created.status).toBe(201);
    expect(created.body.transport).toMatchObject({ network: false });
    const { report, sessionId } = await probe("boxed", projectId);

    // Its configured environment, the service's PATH, and what the sandbox's `bash -c exec` adds (PWD, SHLVL); nothing of the worker's.
    expect(report.env).toEqual({ PROBE: "1", PATH: expect.stringContaining("/usr/bin"), PWD: report.cwd, SHLVL: "0" });
    expect(report.parentEnviron).toBe(false);
    expect(report.secretsSeen).toBe(0);
    // Its own PID namespace: a handful of processes, none of the host's.
    expect(report.pids).toBeLessThan(10);
    expect(report.paths[path.join(repoRoot, "package.json")]).toBe(false);
    expect(report.paths[path.join(repoRoot, ".git")]).toBe(false);
    expect(report.paths["/root"]).toBe(false);
    expect(report.paths["/etc/passwd"]).toBe(true);
    expect(report.ports[String(postgresPort())]).not.toBe("connected");
    expect(report.ports[String(redisPort())]).not.toBe("connected");
    const workspace = await env.workspaceOf(sessionId);
    expect(report.cwd).toBe(workspace);
    expect(await readFile(path.join(workspace, "probe-wrote-this.txt"), "utf8")).toBe("hello from the sandbox\n");
  });

  it("M1, S3: a network-granted sandboxed server still cannot reach the host's loopback services", async () => {
    const created = await client.post("/v1/mcp-servers", {
      name: "netted",
      transport: { kind: "stdio", command: process.execPath, args: [probeEntry], env: {}, network: true },
    });
    expect(created.status).toBe(201);
    expect(created.body.transport).toMatchObject({ network: true });
    const { report } = await probe("netted");
    expect(report.secretsSeen).toBe(0);
    expect(Object.values(report.ports).every((outcome) => outcome !== "connected")).toBe(true);
    // A tenant-wide server works in a folder of the tenant's own, not in any project's workspace.
    expect(report.cwd).toMatch(/\/_mcp\/netted$/);
  });

  it("M3: a stdio server the sandbox cannot confine is not started: its requests fail with the sandbox's reason, never unconfined", async () => {
    const runner = createSandbox({
      bwrapPath: "/nonexistent/bwrap",
      searchPath: "/usr/bin:/bin",
      workspacesDir: env.config.workspaces.dir,
      servicePaths: [repoRoot],
    });
    const mcp = createMcpConnections({
      logger: createLogger("silent"),
      stdioCommands: testStdioCommands,
      sandbox: {
        runner,
        confined: true,
        placeFor: async () => ({ workspaceDir: env.config.workspaces.dir, identity: testIdentity, limits: env.config.toolLimits }),
      },
    });
    try {
      const config = { name: "nobwrap", transport: { kind: "stdio" as const, command: process.execPath, args: [probeEntry], env: {} } };
      const listed = await mcp.listTools({ tenantId: "ten_x", projectId: null }, config);
      expect(listed).toMatchObject({ ok: false, errorCode: "mcp_unavailable" });
      expect(listed.ok ? "" : listed.message).toContain("Sandbox unavailable");
      const called = await mcp.callTool({ tenantId: "ten_x", projectId: null }, config, "probe", { paths: [], ports: [] });
      expect(called).toMatchObject({ isError: true, errorCode: "mcp_unavailable" });
      expect(mcp.status({ tenantId: "ten_x", projectId: null }, "nobwrap").pid).toBeUndefined();
    } finally {
      await mcp.close();
    }
  });
});
