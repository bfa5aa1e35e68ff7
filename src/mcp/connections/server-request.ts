import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { McpScope, McpServerConfig } from "../mcp-config.js";
import { acquire } from "./connect-server.js";
import type { McpCallOptions, McpFailure, McpOutcome } from "./contract.js";
import { describeEnd, errorText, failure } from "./server-failures.js";
import { drop, entryFor, type Entry, type Live, type ServerPool } from "./server-pool.js";

/** One request on a live connection, given its time limit and the signal that ends it. */
export type RequestWork<T> = (live: Live, timeoutMs: number, signal: AbortSignal | undefined) => Promise<T>;

/**
 * Sends one request to a server, connecting it first when it is not (SPEC M3). Every failure is
 * an answer: a cancel, the server down, a timeout or a broken connection (dropped, to be
 * restarted on a later request), or the server's own refusal (the connection stays).
 */
export async function request<T>(
  pool: ServerPool,
  target: { scope: McpScope; config: McpServerConfig },
  what: string,
  signal: AbortSignal | undefined,
  work: RequestWork<T>,
): Promise<McpOutcome<T>> {
  const { config } = target;
  if (pool.closed) return failure("mcp_unavailable", `The MCP server "${config.name}" is unavailable: the worker is shutting down.`);
  if (signal?.aborted) return failure("cancelled", "The call was cancelled.");
  const entry = entryFor(pool, target.scope, config);
  const acquired = await acquire(pool, entry);
  if (!acquired.ok) return acquired;
  const live = acquired.value;
  const timeoutMs = config.callTimeoutMs ?? pool.defaults.callTimeoutMs;
  // The SDK never removes the abort listener it adds to a request's signal: each request gets
  // a signal of its own, linked to the caller's for its duration only, so a run's signal
  // does not collect one listener per call.
  const linked = linkSignal(signal);
  try {
    const value = await work(live, timeoutMs, linked.signal);
    entry.failures = 0;
    return { ok: true, value };
  } catch (error) {
    if (signal?.aborted) return failure("cancelled", "The call was cancelled.");
    if (live.dropped) return live.failure ?? describeEnd(entry, live, `during ${what}`, pool.defaults.maxMessageBytes);
    return failedRequest(pool, { entry, live }, error, { what, timeoutMs });
  } finally {
    linked.release();
  }
}

/** Why a request failed; every failure but the server's own refusal drops the connection. */
function failedRequest(
  pool: ServerPool,
  on: { entry: Entry; live: Live },
  error: unknown,
  request: { what: string; timeoutMs: number },
): McpFailure {
  const { entry, live } = on;
  if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout && error.code !== ErrorCode.ConnectionClosed)
    return failure("mcp_request_failed", `The MCP server "${entry.name}" refused ${request.what}: ${error.message}`);
  const down = brokenConnection(pool, on, error, request);
  drop(pool, entry, live, down);
  return down;
}

function brokenConnection(
  pool: ServerPool,
  on: { entry: Entry; live: Live },
  error: unknown,
  request: { what: string; timeoutMs: number },
): McpFailure {
  const { entry } = on;
  const { what } = request;
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
    return failure(
      "mcp_timeout",
      `The MCP server "${entry.name}" did not answer ${what} within ${request.timeoutMs} ms. The connection was dropped and will be restarted on a later call.`,
    );
  if (error instanceof McpError) return describeEnd(entry, on.live, `during ${what}`, pool.defaults.maxMessageBytes);
  if (error instanceof Error && (error.name === "ZodError" || "issues" in error))
    return failure(
      "mcp_protocol_error",
      `The MCP server "${entry.name}" answered ${what} with a malformed message. The connection was dropped and will be restarted on a later call.`,
    );
  return failure(
    "mcp_unavailable",
    `The MCP server "${entry.name}" could not be reached for ${what}: ${errorText(error)}. It will be reconnected on a later call.`,
  );
}

/** The SDK's request options: the time limit, the signal, and progress notifications as text. */
export function requestOptions(timeoutMs: number, options: McpCallOptions | undefined, signal: AbortSignal | undefined) {
  const onProgress = options?.onProgress;
  return {
    timeout: timeoutMs,
    maxTotalTimeout: timeoutMs,
    ...(signal ? { signal } : {}),
    ...(onProgress
      ? {
          onprogress: (progress: { progress: number; total?: number; message?: string }) => {
            const amount = progress.total === undefined ? `${progress.progress}` : `${progress.progress}/${progress.total}`;
            onProgress(progress.message ? `${progress.message} (${amount})` : `progress ${amount}`);
          },
        }
      : {}),
  };
}

/** A signal that follows `parent` until `release()`; none without a parent. */
function linkSignal(parent: AbortSignal | undefined): { signal: AbortSignal | undefined; release(): void } {
  if (!parent) return { signal: undefined, release: () => {} };
  const controller = new AbortController();
  const follow = () => controller.abort(parent.reason);
  if (parent.aborted) follow();
  else parent.addEventListener("abort", follow, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener("abort", follow) };
}
