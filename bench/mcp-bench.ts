/**
 * MCP benchmark (SPEC M1): what calling a tool through an MCP server costs, against a
 * built-in tool through the same executor, measured in one run:
 * - the same echo as an in-process tool, through the same `ToolExecutor.execute`;
 * - server-everything's `echo` over stdio, unconfined and in the bubblewrap sandbox;
 * - a tool of a Streamable HTTP server (SDK, stateless) in this process;
 * and what starting a stdio server costs (spawn + initialize + tools/list), unconfined
 * and sandboxed. Calls are interleaved so every variant sees the same machine load.
 * Needs bwrap; no services.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { createLogger } from "../src/logger.js";
import type { McpScope, McpServerConfig } from "../src/mcp/mcp-config.js";
import { createMcpConnections, type McpConnections } from "../src/mcp/mcp-connections.js";
import { mapMcpTools } from "../src/mcp/mcp-tools.js";
import { defaultProcessLimits } from "../src/core/process-limits.js";
import { identityMode, toolIdentity } from "../src/sandbox/tool-identity.js";
import { createWorkspaceFolder } from "../src/workspace/project-workspace.js";
import { createSandbox } from "../src/sandbox/sandbox-runner.js";
import { findServiceDir } from "../src/sandbox/service-dir.js";
import { builtinTools } from "../src/tools/builtin-tools.js";
import { createToolExecutor, type ToolExecutor } from "../src/tools/execute-tool-call.js";
import { defineTool, textResult, type ToolContext } from "../src/tools/tool.js";
import { createToolRegistry } from "../src/tools/tool-registry.js";
import { distribution, round, type Distribution } from "./support/stats.js";

const calls = Number(process.argv[2] ?? 300);
const starts = Number(process.argv[3] ?? 10);
const warmup = 20;
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const everythingEntry = path.join(path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")), "dist/index.js");
const workspacesDir = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bench-mcp-")));
// A tenant slot no real tenant has: the sandboxed servers run as that uid, as a tenant's would.
const identity = toolIdentity(identityMode(1_000_000_000), 90_000_004);
const workspace = await createWorkspaceFolder(workspacesDir, ["tenant", "project"], identity);
const logger = createLogger("silent");
const scope: McpScope = { tenantId: "ten_bench", projectId: "prj_bench" };

const runner = createSandbox({
  bwrapPath: "bwrap",
  searchPath: "/usr/local/bin:/usr/bin:/bin",
  workspacesDir,
  servicePaths: [findServiceDir()],
  // The servers load packages from the service's node_modules, which the sandbox hides otherwise.
  readOnlyPaths: [path.resolve(here, "../node_modules")],
});
const stdioCommands = new Map([[process.execPath, new Set<string>()]]);
const unconfined = createMcpConnections({ logger, stdioCommands });
const sandboxed = createMcpConnections({
  logger,
  stdioCommands,
  sandbox: { runner, confined: true, placeFor: async () => ({ workspaceDir: workspace, identity, limits: defaultProcessLimits }) },
});
const everything: McpServerConfig = {
  name: "everything",
  transport: { kind: "stdio", command: process.execPath, args: [everythingEntry, "stdio"], env: {} },
};

const httpServer = http.createServer((req, res) => {
  const server = new McpServer({ name: "bench-http", version: "1.0.0" });
  server.registerTool("echo", { description: "Echoes.", inputSchema: { message: z.string() } }, async ({ message }) => ({
    content: [{ type: "text", text: `Echo: ${message}` }],
  }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => void server.close());
  void server.connect(transport).then(() => transport.handleRequest(req, res));
});
await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
const remote: McpServerConfig = {
  name: "remote",
  transport: { kind: "http", url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/mcp`, headers: {} },
};

const context = {
  tenantId: "ten_bench",
  sessionId: "ses_bench",
  runId: "run_bench",
  projectId: "prj_bench",
  approvalMode: "full_access",
  provider: { profile: "scripted", model: "scripted" },
  signal: new AbortController().signal,
  reportProgress: async () => {},
} as unknown as ToolContext;

/** The baseline: the same echo, in process. */
const localEcho = defineTool<{ message: string }>({
  name: "local_echo",
  description: "Echoes.",
  parameters: { type: "object", properties: { message: { type: "string" } }, required: ["message"], additionalProperties: false },
  exposure: "direct",
  sideEffect: "read",
  run: async (_context, args) => textResult(`Echo: ${args.message}`),
});

/** One executor over the built-ins and the MCP tools, as a session's registry view has them. */
async function executorWith(connections: McpConnections, configs: McpServerConfig[]): Promise<ToolExecutor> {
  const mcpTools = [];
  for (const config of configs) {
    const listed = await connections.listTools(scope, config);
    if (!listed.ok) throw new Error(listed.message);
    mcpTools.push(...mapMcpTools({ connections, scope, config }, listed.value).map((d) => d.tool));
  }
  return createToolExecutor(createToolRegistry([...builtinTools({ webFetchAllowPrivate: false }), localEcho, ...mcpTools]));
}

async function timed(executor: ToolExecutor, name: string, args: object, expected: string): Promise<number> {
  const exposed = { ...context, exposedTools: [name] } as ToolContext;
  const start = performance.now();
  const result = await executor.execute(exposed, { callId: "c", name, argumentsRaw: JSON.stringify(args) });
  const elapsed = performance.now() - start;
  const text = result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
  if (result.isError || !text.includes(expected)) throw new Error(`${name} answered ${JSON.stringify(result)}`);
  return elapsed;
}

/** Start-up: disconnect, then the first tools/list spawns and initializes the server again. */
async function startTimes(connections: McpConnections): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < starts; i++) {
    await connections.disconnect(scope, everything.name);
    const start = performance.now();
    const listed = await connections.listTools(scope, everything);
    if (!listed.ok) throw new Error(listed.message);
    times.push(performance.now() - start);
  }
  return times;
}

try {
  const plain = await executorWith(unconfined, [everything, remote]);
  const boxed = await executorWith(sandboxed, [everything]);
  const variants = [
    { name: "in-process echo", run: () => timed(plain, "local_echo", { message: "hi" }, "Echo: hi"), times: [] as number[] },
    { name: "MCP stdio echo", run: () => timed(plain, "mcp__everything__echo", { message: "hi" }, "Echo: hi"), times: [] as number[] },
    {
      name: "MCP stdio echo, sandboxed",
      run: () => timed(boxed, "mcp__everything__echo", { message: "hi" }, "Echo: hi"),
      times: [] as number[],
    },
    { name: "MCP HTTP echo", run: () => timed(plain, "mcp__remote__echo", { message: "hi" }, "Echo: hi"), times: [] as number[] },
  ];
  for (let i = 0; i < warmup; i++) for (const variant of variants) await variant.run();
  for (let i = 0; i < calls; i++) {
    for (let k = 0; k < variants.length; k++) {
      const variant = variants[(i + k) % variants.length]!;
      variant.times.push(await variant.run());
    }
  }
  const unconfinedStarts = await startTimes(unconfined);
  const sandboxedStarts = await startTimes(sandboxed);

  const rounded = (d: Distribution) => ({
    count: d.count,
    mean: round(d.mean),
    p50: round(d.p50),
    p90: round(d.p90),
    p99: round(d.p99),
    max: round(d.max),
  });
  const dists = variants.map((variant) => ({ name: variant.name, d: distribution(variant.times) }));
  const baseline = dists[0]!.d;
  const startDists = [
    { name: "stdio start-up, unconfined", d: distribution(unconfinedStarts) },
    { name: "stdio start-up, sandboxed", d: distribution(sandboxedStarts) },
  ];
  const report = {
    date: new Date().toISOString(),
    callsEach: calls,
    startsEach: starts,
    callsMs: Object.fromEntries(dists.map(({ name, d }) => [name, { ...rounded(d), ratioP50ToInProcess: round(d.p50 / baseline.p50) }])),
    startUpMs: Object.fromEntries(startDists.map(({ name, d }) => [name, rounded(d)])),
  };
  const row = (name: string, d: Distribution, ratio = "") =>
    `${name.padEnd(30)} ${[d.p50, d.p90, d.p99, d.mean].map((v) => v.toFixed(2).padStart(8)).join(" ")} ${ratio}`;
  console.log(`MCP tool calls through the executor, ${calls} each, interleaved (ms)`);
  console.log(`${"".padEnd(30)} ${["p50", "p90", "p99", "mean"].map((h) => h.padStart(8)).join(" ")}  p50 ÷ in-process`);
  for (const { name, d } of dists) console.log(row(name, d, `${round(d.p50 / baseline.p50)}×`));
  console.log(`stdio server start-up (spawn, initialize, tools/list), ${starts} each (ms)`);
  for (const { name, d } of startDists) console.log(row(name, d));
  const results = path.join(here, "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(path.join(results, "mcp.json"), `${JSON.stringify(report, null, 2)}\n`);
} finally {
  await unconfined.close();
  await sandboxed.close();
  httpServer.closeAllConnections();
  await new Promise((resolve) => httpServer.close(resolve));
  await rm(workspacesDir, { recursive: true, force: true });
}
