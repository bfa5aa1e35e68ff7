import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProjectId, SessionId, TenantId } from "../../src/ids.js";
import { useTestEnv } from "../helpers/test-env.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";

// A stdio MCP server's environment is code too (SPEC M1, S7): NODE_OPTIONS=--require <file>, LD_PRELOAD,
// BASH_ENV... make an allowed program run the tenant's own file. Unsandboxed (FOYA_MCP_SANDBOX=false,
// where such code reached other tenants' rows in Postgres), the operator admits one harmless name for
// node; every other name is refused when the server is configured, and again when it would start.
const here = path.dirname(fileURLToPath(import.meta.url));
const faultyEntry = path.join(here, "../mcp/fixtures/faulty-server.mjs");
const { env, client } = useTestEnv({
  worker: true,
  overrides: {
    FOYA_MCP_SANDBOX: "false",
    FOYA_MCP_STDIO_COMMANDS: `${process.execPath}:FOYA_MCP_PROBE`,
    FOYA_MCP_CONFIG_TTL_MS: "0",
  },
});

let dir: string;
let canary: Canary;
/** What the tenant's payload writes if it ever runs. */
let ranMarker: string;
let payload: string;

beforeAll(async () => {
  // Readable and writable by the tenant's uid, as a workspace file would be.
  dir = await mkdtemp(path.join(tmpdir(), "foya-mcp-env-"));
  await chmod(dir, 0o1777);
  ranMarker = path.join(dir, "payload-ran");
  payload = path.join(dir, "payload.cjs");
  await writeFile(payload, `require("node:fs").writeFileSync(${JSON.stringify(ranMarker)}, String(process.pid));\n`, { mode: 0o644 });
  await writeFile(path.join(dir, "payload.sh"), `echo ran > ${ranMarker}\n`, { mode: 0o755 });
  canary = watch([dir]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The attacks: each sets one variable that would make node (or what it runs) load the tenant's code. */
const attacks = (): Array<[string, string]> => [
  ["NODE_OPTIONS", `--require ${payload}`],
  ["NODE_PATH", dir],
  ["LD_PRELOAD", path.join(dir, "payload.so")],
  ["LD_LIBRARY_PATH", dir],
  ["LD_AUDIT", path.join(dir, "payload.so")],
  ["GCONV_PATH", dir],
  ["GLIBC_TUNABLES", "glibc.malloc.mxfast=0"],
  ["BASH_ENV", path.join(dir, "payload.sh")],
  ["ENV", path.join(dir, "payload.sh")],
  ["BASH_FUNC_node", "() { . payload.sh; }"],
  ["PROMPT_COMMAND", `. ${path.join(dir, "payload.sh")}`],
  ["PYTHONSTARTUP", path.join(dir, "payload.py")],
  ["PYTHONPATH", dir],
  ["PERL5OPT", "-Mpayload"],
  ["RUBYOPT", "-rpayload"],
  ["JAVA_TOOL_OPTIONS", `-javaagent:${path.join(dir, "payload.jar")}`],
  ["npm_config_node_options", `--require ${payload}`],
  ["GIT_CONFIG_COUNT", "1"],
  ["GIT_SSH_COMMAND", path.join(dir, "payload.sh")],
  ["PATH", dir],
];

async function projectOf(): Promise<{ tenantId: TenantId; projectId: ProjectId; sessionId: SessionId }> {
  const { projectId, sessionId } = await client.newSession();
  const [row] = await env.query<{ tenant_id: TenantId }>("select tenant_id from projects where id = $1", [projectId]);
  return { tenantId: row?.tenant_id as TenantId, projectId, sessionId };
}

describe("escape suite: a stdio MCP server's environment", () => {
  it("M1, S7: loader and start-up variables are refused when a server is configured (400), and nothing is stored or run", async () => {
    const { projectId } = await projectOf();
    for (const [name, value] of attacks()) {
      await attempt(
        `configure a stdio server with ${name}`,
        canary,
        async () => {
          const answer = await client.post("/v1/mcp-servers", {
            name: "evil",
            projectId,
            transport: { kind: "stdio", command: process.execPath, args: [faultyEntry], env: { [name]: value } },
          });
          expect(answer.status, `${name}: ${JSON.stringify(answer.body)}`).toBe(400);
          expect(answer.body.error.message).toContain(`environment variable ${name} is never accepted`);
        },
        { escapeClass: "mcp-environment" },
      );
    }
    await attempt(
      "configure a stdio server with a name the operator did not admit",
      canary,
      async () => {
        const answer = await client.post("/v1/mcp-servers", {
          name: "evil",
          projectId,
          transport: { kind: "stdio", command: process.execPath, args: [faultyEntry], env: { OTHER_TOKEN: "x" } },
        });
        expect(answer.status).toBe(400);
        expect(answer.body.error.message).toContain(
          `the environment variable OTHER_TOKEN is not one an operator admitted for "${process.execPath}" (FOYA_MCP_STDIO_COMMANDS: it admits only FOYA_MCP_PROBE)`,
        );
      },
      { escapeClass: "mcp-environment" },
    );
    expect((await client.get(`/v1/mcp-servers?projectId=${projectId}`)).body.servers).toEqual([]);
    expect(existsSync(ranMarker)).toBe(false);
  });

  it("M1, S7: a server stored before the operator's list refused it is not started: its listing says why and the tenant's code never runs; an admitted name still works", async () => {
    const { tenantId, projectId, sessionId } = await projectOf();
    const store = (name: string, transport: { command: string; env: Record<string, string> }) =>
      env.services.store.mcpServers.createMcpServer({
        tenantId,
        projectId,
        name,
        transport: { kind: "stdio", args: [faultyEntry], ...transport },
        startupTimeoutMs: null,
        callTimeoutMs: null,
        deferTools: null,
      });
    // Written straight to the store, as rows written before these rules or this list were.
    await store("preload", { command: process.execPath, env: { NODE_OPTIONS: `--require ${payload}` } });
    await store("loader", { command: process.execPath, env: { LD_PRELOAD: path.join(dir, "payload.so") } });
    await store("shell", { command: process.execPath, env: { BASH_ENV: path.join(dir, "payload.sh") } });
    await store("unlisted", { command: "/bin/sh", env: {} });
    expect(
      (
        await client.post("/v1/mcp-servers", {
          name: "fine",
          projectId,
          transport: {
            kind: "stdio",
            command: process.execPath,
            args: [faultyEntry],
            env: { FOYA_MCP_PROBE: "admitted" },
          },
        })
      ).status,
    ).toBe(201);

    await attempt(
      "start stored servers whose environment loads the tenant's code",
      canary,
      async () => {
        const listed = await client.get(`/v1/tools?session=${sessionId}`);
        expect(listed.status).toBe(200);
        const byName = Object.fromEntries(
          (listed.body.mcpServers as Array<{ name: string; status: string; error?: { code: string; message: string } }>).map((s) => [
            s.name,
            s,
          ]),
        );
        for (const [server, name] of [
          ["preload", "NODE_OPTIONS"],
          ["loader", "LD_PRELOAD"],
          ["shell", "BASH_ENV"],
        ]) {
          expect(byName[server as string], server).toMatchObject({ status: "unavailable", error: { code: "mcp_unavailable" } });
          expect(byName[server as string]?.error?.message).toContain(
            `The MCP server "${server}" is not started: the environment variable ${name} is never accepted`,
          );
          expect(env.services.mcp.status({ tenantId, projectId }, server as string).pid).toBeUndefined();
        }
        expect(byName.unlisted?.error?.message).toContain('"/bin/sh" is not one an operator allowed (FOYA_MCP_STDIO_COMMANDS)');
        expect(existsSync(ranMarker)).toBe(false);
        // Nothing outside changed: the admitted server started and lists its tools.
        expect(byName.fine).toEqual({ name: "fine", projectId, status: "listed" });
        expect(listed.body.tools.map((tool: { name: string }) => tool.name)).toContain("mcp__fine__ok");
        expect(listed.body.tools.map((tool: { name: string }) => tool.name)).not.toContain("mcp__preload__ok");
      },
      { escapeClass: "mcp-environment" },
    );
  });
});
