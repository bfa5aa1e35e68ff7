/**
 * Prompt-cache breakpoints of an Anthropic Messages request (SPEC PR4). The API caches a request's
 * prefix (tools, then system, then messages) up to each block marked with `cache_control`, at most
 * four marks a request, and a later request reads the longest cached prefix it repeats byte for
 * byte. The context compiler makes each step's request a prefix of the next one's, so three marks do:
 *
 * - the end of tools and system: the system prompt's block, or the last tool when there is none;
 * - the end of the request: the last block of its last user turn, written for the next step;
 * - the end of the previous step's request: the last block of the user turn before the last
 *   assistant turn, read back. The API looks for earlier entries only about 20 blocks before a
 *   mark, and one step with many tool calls adds more blocks than that.
 *
 * Marks go on user turns only (text and tool_result blocks), never on an assistant's thinking
 * blocks, which cannot carry one.
 */

const ephemeralCache = { type: "ephemeral" } as const;

/** What a block or tool may carry; every wire block type of the adapter includes it. */
export interface CacheMark {
  cache_control?: typeof ephemeralCache;
}

/** The parts of a wire request the marks go on; the adapter's own types fit it. */
export interface CacheableRequest {
  system?: CacheMark[];
  tools?: readonly CacheMark[];
  messages: Array<{ role: "user" | "assistant"; content: CacheMark[] }>;
}

export function markCacheBreakpoints(request: CacheableRequest): void {
  const system = request.system?.at(-1);
  const lastTool = request.tools?.at(-1);
  if (system) system.cache_control = ephemeralCache;
  // Renderings of a tool set are shared between requests (render-tool-schemas.ts): the marked tool is a copy.
  else if (request.tools && lastTool) request.tools = [...request.tools.slice(0, -1), { ...lastTool, cache_control: ephemeralCache }];

  const { messages } = request;
  const last = messages.length - 1;
  if (messages[last]?.role !== "user") return;
  markLastBlock(messages[last].content);
  const lastAssistant = messages.findLastIndex((message) => message.role === "assistant");
  const previousEnd = messages[lastAssistant - 1];
  if (lastAssistant > 0 && previousEnd?.role === "user") markLastBlock(previousEnd.content);
}

function markLastBlock(content: CacheMark[]): void {
  const block = content.at(-1);
  if (block) content[content.length - 1] = { ...block, cache_control: ephemeralCache };
}
