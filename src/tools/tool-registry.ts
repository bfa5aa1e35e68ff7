import type { FunctionToolSchema } from "../providers/provider.js";
import type { RunMode } from "../db/schema.js";
import type { AnyTool } from "./tool.js";

/**
 * Maps names to tools from every source (SPEC R1) and computes what a Step
 * exposes (R3, R4). Rendered schema lists are cached by the exposed name set,
 * so the same set serializes byte-identically and costs nothing the second time (R2).
 */
export interface ToolRegistry {
  get(name: string): AnyTool | undefined;
  list(): readonly AnyTool[];
  /** Sorted by name: registered ∩ exposure ∩ allow-list ∩ run mode. */
  exposedFor(session: { toolAllowList: readonly string[] | null; runMode: RunMode }): readonly AnyTool[];
  schemasFor(tools: readonly AnyTool[]): readonly FunctionToolSchema[];
}

export function createToolRegistry(tools: readonly AnyTool[]): ToolRegistry {
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`tool "${tool.name}" registered twice`);
    byName.set(tool.name, tool);
  }
  const sorted = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const schemaCache = new Map<string, readonly FunctionToolSchema[]>();

  return {
    get: (name) => byName.get(name),
    list: () => sorted,
    exposedFor({ toolAllowList, runMode }) {
      const allowed = toolAllowList ? new Set(toolAllowList) : null;
      return sorted.filter(
        (tool) =>
          tool.exposure === "direct" &&
          (allowed === null || allowed.has(tool.name)) &&
          (runMode === "normal" || tool.sideEffect === "read"),
      );
    },
    schemasFor(exposed) {
      const key = exposed.map((t) => t.name).join("\u0000");
      let schemas = schemaCache.get(key);
      if (!schemas) {
        schemas = Object.freeze(
          exposed.map((tool) => Object.freeze({ name: tool.name, description: tool.description, parameters: tool.parameters })),
        );
        schemaCache.set(key, schemas);
      }
      return schemas;
    },
  };
}
