import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { StdioEnd } from "../stdio-process-transport.js";
import type { McpErrorCode } from "../mcp-results.js";
import type { McpFailure } from "./contract.js";
import type { Entry, Live } from "./server-pool.js";

/**
 * What a failed connection or request answers (SPEC M3): a stable code and a message the
 * model can act on, never a throw.
 */

export function failure(errorCode: McpErrorCode, message: string): McpFailure {
  return { ok: false, errorCode, message };
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `what`: the message's form (a line on stdout, a response body, an event). */
export function tooLarge(entry: Pick<Entry, "name">, maxMessageBytes: number, what: string, during: string): McpFailure {
  return failure(
    "mcp_message_too_large",
    `The MCP server "${entry.name}" sent ${what} larger than the ${maxMessageBytes} bytes a worker accepts (FOYA_MCP_MAX_MESSAGE_BYTES) ${during}. It was not read; the connection was dropped and will be restarted on a later call.`,
  );
}

/** Why a connection ended, from what its stdio process reported (how it exited, its last stderr). */
export function describeEnd(entry: Pick<Entry, "name">, live: Live, during: string, maxMessageBytes: number): McpFailure {
  const end: StdioEnd | undefined = live.stdio?.end;
  const stderr = live.stdio?.stderr.trim();
  const stderrNote = stderr ? ` Its last stderr output: ${JSON.stringify(stderr.slice(-1000))}` : "";
  const name = entry.name;
  switch (end?.kind) {
    case "too-large":
      return tooLarge(entry, maxMessageBytes, "a line on stdout", during);
    case "protocol":
      return failure(
        "mcp_protocol_error",
        `The MCP server "${name}" broke the protocol ${during}: ${end.message}. The connection was dropped and will be restarted.`,
      );
    case "exited": {
      const how = end.signal ? `was killed by ${end.signal}` : `exited with code ${end.code}`;
      return failure("mcp_unavailable", `The MCP server "${name}" ${how} ${during}. It will be restarted on a later call.${stderrNote}`);
    }
    case "spawn":
      return failure("mcp_unavailable", `The MCP server "${name}" could not be started: ${end.message}.`);
    case "sandbox":
      return failure(
        "mcp_unavailable",
        `The MCP server "${name}" was stopped ${during}: ${end.message}. It will be restarted on a later call.`,
      );
    default:
      return failure(
        "mcp_unavailable",
        `The connection to the MCP server "${name}" closed ${during}. It will be reconnected on a later call.`,
      );
  }
}

/** Why a server did not start: an oversized answer, the start-up limit, how its process ended, or the error. */
export function startupFailure(
  entry: Pick<Entry, "name">,
  live: Live,
  error: unknown,
  timeoutMs: number,
  maxMessageBytes: number,
): McpFailure {
  // An oversized answer is why, not the closure it caused.
  if (live.failure?.errorCode === "mcp_message_too_large") return live.failure;
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return failure("mcp_unavailable", `The MCP server "${entry.name}" did not finish starting within ${timeoutMs} ms.`);
  }
  const end = live.stdio?.end;
  if (end && end.kind !== "closed") return describeEnd(entry, live, "while starting", maxMessageBytes);
  return failure("mcp_unavailable", `The MCP server "${entry.name}" could not be started: ${errorText(error)}.`);
}
