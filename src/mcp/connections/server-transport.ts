import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { refusedStdioServer } from "../../core/mcp-stdio-commands.js";
import type { McpTransportConfig } from "../../core/mcp-transport.js";
import type { SandboxInvocation } from "../../sandbox/sandbox-runner.js";
import { boundResponse } from "../bounded-response.js";
import { StdioProcessTransport } from "../stdio-process-transport.js";
import type { McpFailure } from "./contract.js";
import { failure } from "./server-failures.js";
import type { Entry, ServerPool } from "./server-pool.js";

type StdioConfig = Extract<McpTransportConfig, { kind: "stdio" }>;
type HttpConfig = Extract<McpTransportConfig, { kind: "http" }>;

interface Launch {
  command: string;
  args: readonly string[];
  cwd?: string;
  sandbox?: SandboxInvocation;
}

/**
 * The server's transport, or why it cannot be started (the sandbox cannot be set up: never a fallback to running unconfined).
 * `onTooLarge` is told when an HTTP server's response passes `maxMessageBytes` (a stdio server's transport ends itself).
 */
export async function createTransport(
  pool: ServerPool,
  entry: Entry,
  onTooLarge: (what: string) => void,
): Promise<{ transport: Transport; stdio: StdioProcessTransport | undefined } | McpFailure> {
  const transport = entry.config.transport;
  if (transport.kind === "http") return { transport: httpTransport(pool, transport, onTooLarge), stdio: undefined };
  const refused = refusedStdioServer(pool.options.stdioCommands, transport);
  if (refused) return failure("mcp_unavailable", `The MCP server "${entry.name}" is not started: ${refused}.`);
  const launch = await stdioLaunch(pool, entry, transport);
  if ("ok" in launch) return launch;
  const { defaults, logger } = pool;
  const env: Record<string, string> = { ...transport.env };
  if (defaults.stdioPath !== undefined) env.PATH = defaults.stdioPath;
  const stdio = new StdioProcessTransport({
    ...launch,
    env,
    stopGraceMs: defaults.stopGraceMs,
    maxLineBytes: defaults.maxMessageBytes,
    onStderr: (text) => logger.debug({ mcpServer: entry.key, stderr: text.slice(0, 2000) }, "MCP server stderr"),
  });
  return { transport: stdio, stdio };
}

/**
 * Every request goes to an address the guard admits, checked after DNS (a name may resolve
 * elsewhere later: DNS rebinding), with redirects refused; every response is read within
 * `maxMessageBytes`.
 */
function httpTransport(pool: ServerPool, transport: HttpConfig, onTooLarge: (what: string) => void): Transport {
  const guard = pool.options.guardHttp;
  const boundedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (guard) {
      const url = new URL(input instanceof Request ? input.url : input.toString());
      const refused = await guard(url).catch((error: Error) => `${url.hostname} could not be resolved: ${error.message}`);
      if (refused) throw new Error(`the server's address is refused: ${refused}`);
    }
    const response = await fetch(input, guard ? { ...init, redirect: "error" } : init);
    return boundResponse(response, pool.defaults.maxMessageBytes, onTooLarge);
  };
  return new StreamableHTTPClientTransport(new URL(transport.url), {
    requestInit: { headers: { ...transport.headers } },
    fetch: boundedFetch,
  });
}

/** How a stdio server is started: under the sandbox, stepped down to its tenant's uid, or (no sandbox given: tests of the protocol) as is. */
async function stdioLaunch(pool: ServerPool, entry: Entry, transport: StdioConfig): Promise<Launch | McpFailure> {
  const { sandbox } = pool.options;
  const plain: Launch = {
    command: transport.command,
    args: transport.args,
    ...(transport.cwd === undefined ? {} : { cwd: transport.cwd }),
  };
  if (!sandbox) return plain;
  const place = await sandbox.placeFor(entry.scope, entry.name);
  // A server lives for days: no CPU-time limit, which would add its whole lifetime up.
  const limits = { ...place.limits, cpuSeconds: null };
  if (!sandbox.confined) {
    const stepDown = sandbox.runner.stepDown({ identity: place.identity, limits });
    if (!stepDown.ok) return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${stepDown.message}`);
    const [command, ...prefix] = [...stepDown.args, transport.command];
    return { command: command as string, args: [...prefix, ...transport.args], cwd: transport.cwd ?? place.workspaceDir };
  }
  const plan = await sandbox.runner.plan({
    command: execLine(transport.command, transport.args),
    workspaceDir: place.workspaceDir,
    network: transport.network === true,
    view: "confined",
    identity: place.identity,
    limits,
    // A server lives long: the smaller temporary space of background commands.
    lifetime: "background",
  });
  if (!plan.ok) return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${plan.message}`);
  return { command: plan.file, args: plan.args, cwd: place.workspaceDir, sandbox: plan };
}

/** `exec` of the server's argv as one bash line, each word single-quoted: the sandbox runs `bash -c`, and nothing in it is interpreted. */
function execLine(command: string, args: readonly string[]): string {
  return ["exec", ...[command, ...args].map((word) => `'${word.replaceAll("'", `'\\''`)}'`)].join(" ");
}
