import type { FunctionToolSchema } from "./provider.js";

/**
 * Provider wire formats of a tool set (SPEC R2). The registry hands out one
 * frozen, name-sorted list per exposed set; each rendering is cached against
 * that list, so an unchanged set costs nothing and serializes byte-identically
 * step after step, which keeps provider prompt caches warm.
 */
export interface OpenAIFunctionTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

const openAICache = new WeakMap<readonly FunctionToolSchema[], readonly OpenAIFunctionTool[]>();
const anthropicCache = new WeakMap<readonly FunctionToolSchema[], readonly AnthropicTool[]>();

export function toOpenAITools(schemas: readonly FunctionToolSchema[]): readonly OpenAIFunctionTool[] {
  let rendered = openAICache.get(schemas);
  if (!rendered) {
    rendered = schemas.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    openAICache.set(schemas, rendered);
  }
  return rendered;
}

export function toAnthropicTools(schemas: readonly FunctionToolSchema[]): readonly AnthropicTool[] {
  let rendered = anthropicCache.get(schemas);
  if (!rendered) {
    rendered = schemas.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }));
    anthropicCache.set(schemas, rendered);
  }
  return rendered;
}
