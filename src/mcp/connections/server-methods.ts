import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolResult } from "../../tools/tool.js";
import type { McpScope, McpServerConfig } from "../mcp-config.js";
import { mapCallToolResult } from "../mcp-results.js";
import type { McpCallOptions, McpConnections, McpListOptions, McpOutcome } from "./contract.js";
import type { ServerPool } from "./server-pool.js";
import { request, requestOptions } from "./server-request.js";

type Target = { scope: McpScope; config: McpServerConfig };

const maxPages = 50;

/** A server's tool list, read once per connection (again after it says the list changed) and shared by every caller. */
export function listTools(pool: ServerPool, target: Target, options?: McpListOptions): Promise<McpOutcome<McpTool[]>> {
  return request(pool, target, "tools/list", options?.signal, (live, timeoutMs, signal) => {
    live.tools ??= paginate(async (cursor) => {
      const answer = await live.client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
      return { items: answer.tools, nextCursor: answer.nextCursor };
    });
    const tools = live.tools;
    tools.catch(() => {
      if (live.tools === tools) live.tools = undefined;
    });
    return untilAborted(tools, signal);
  });
}

/** A tool call's result; a failure is an is_error result the model can act on. */
export async function callTool(
  pool: ServerPool,
  target: Target,
  call: { tool: string; args: Record<string, unknown> },
  options?: McpCallOptions,
): Promise<ToolResult> {
  const outcome = await request(pool, target, `the call of its tool "${call.tool}"`, options?.signal, (live, timeoutMs, signal) =>
    live.client.callTool({ name: call.tool, arguments: call.args }, undefined, requestOptions(timeoutMs, options, signal)),
  );
  if (!outcome.ok)
    return {
      content: [{ type: "text", text: outcome.message }],
      isError: true,
      errorCode: outcome.errorCode === "mcp_request_failed" ? "mcp_tool_error" : outcome.errorCode,
    };
  return mapCallToolResult(outcome.value as Record<string, unknown>, pool.defaults);
}

export function listResources(pool: ServerPool, target: Target, options?: McpListOptions): ReturnType<McpConnections["listResources"]> {
  return request(pool, target, "resources/list", options?.signal, (live, timeoutMs, signal) =>
    paginate(async (cursor) => {
      const answer = await live.client.listResources(cursor ? { cursor } : undefined, {
        timeout: timeoutMs,
        ...(signal ? { signal } : {}),
      });
      return { items: answer.resources, nextCursor: answer.nextCursor };
    }),
  );
}

export function readResource(
  pool: ServerPool,
  target: Target,
  uri: string,
  options?: McpCallOptions,
): ReturnType<McpConnections["readResource"]> {
  return request(pool, target, `the read of resource ${JSON.stringify(uri)}`, options?.signal, async (live, timeoutMs, signal) => {
    const answer = await live.client.readResource({ uri }, requestOptions(timeoutMs, options, signal));
    return answer.contents;
  });
}

export function listPrompts(pool: ServerPool, target: Target, options?: McpListOptions): ReturnType<McpConnections["listPrompts"]> {
  return request(pool, target, "prompts/list", options?.signal, (live, timeoutMs, signal) =>
    paginate(async (cursor) => {
      const answer = await live.client.listPrompts(cursor ? { cursor } : undefined, { timeout: timeoutMs, ...(signal ? { signal } : {}) });
      return { items: answer.prompts, nextCursor: answer.nextCursor };
    }),
  );
}

export function getPrompt(
  pool: ServerPool,
  target: Target,
  prompt: { name: string; args?: Record<string, string> },
  options?: McpCallOptions,
): ReturnType<McpConnections["getPrompt"]> {
  const { name, args } = prompt;
  return request(pool, target, `prompt ${JSON.stringify(name)}`, options?.signal, (live, timeoutMs, signal) =>
    live.client.getPrompt({ name, ...(args ? { arguments: args } : {}) }, requestOptions(timeoutMs, options, signal)),
  );
}

async function paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const answer = await fetchPage(cursor);
    items.push(...answer.items);
    if (!answer.nextCursor) break;
    cursor = answer.nextCursor;
  }
  return items;
}

/** `promise`, or a rejection once `signal` aborts, whichever comes first; the promise itself goes on. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
