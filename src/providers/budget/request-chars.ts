import type { ReasoningBlock } from "../../core/history.js";
import type { FunctionToolSchema, ProviderRequest, RequestMessage } from "../provider.js";

/**
 * The size of a request in characters, what a budget turns into estimated input tokens (SPEC
 * PR3) at the ratio the profile's reported usage taught it. Text and reasoning count as written,
 * tool schemas as their JSON, and an image as `imageChars` whatever its bytes: providers bill
 * images by their pixels, about 1,600 tokens for a large one.
 */
const imageChars = 6400;

/** Tool lists are frozen and come back the same while the exposed set is unchanged: measured once. */
const toolChars = new WeakMap<readonly FunctionToolSchema[], number>();

export function requestChars(request: ProviderRequest): number {
  let chars = request.system?.length ?? 0;
  for (const message of request.messages) chars += messageChars(message);
  let tools = toolChars.get(request.tools);
  if (tools === undefined) {
    tools = request.tools.reduce(
      (sum, tool) => sum + tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length,
      0,
    );
    toolChars.set(request.tools, tools);
  }
  return chars + tools;
}

function messageChars(message: RequestMessage): number {
  switch (message.role) {
    case "user":
      return message.text.length;
    case "assistant": {
      const calls = message.toolCalls.reduce((sum, call) => sum + call.name.length + call.argumentsRaw.length, message.text.length);
      return (message.reasoning ?? []).reduce((sum, block) => sum + reasoningChars(block), calls);
    }
    case "tool":
      return message.content.reduce((sum, part) => sum + (part.type === "text" ? part.text.length : imageChars), message.name.length);
    default: {
      const unreachable: never = message;
      return unreachable;
    }
  }
}

/** The reasoning text a block sends back (PR5); a signature or an encrypted block is not text the model reads again. */
function reasoningChars(block: ReasoningBlock): number {
  if (block.format === "openai-chat") return block.text.length;
  return block.wire.type === "thinking" ? block.wire.thinking.length : 0;
}
