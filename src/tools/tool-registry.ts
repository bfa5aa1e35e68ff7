import type { FunctionToolSchema } from "../providers/provider.js";
import type { AnyTool } from "./tool.js";
import { buildToolSearchIndex, type ToolSearchIndex } from "./tool-search-index.js";
import type { RunMode } from "../core/session.js";

/** The tool that activates deferred tools; exposed only while the session has some to find. */
export const toolSearchName = "tool_search";

export interface SessionToolScope {
  toolAllowList: readonly string[] | null;
  runMode: RunMode;
}

/**
 * Maps names to tools from every source (SPEC R1) and computes what a Step
 * exposes (R3, R4). Rendered schema lists are cached by the exposed name set,
 * so the same set serializes byte-identically and costs nothing the second time (R2).
 */
export interface ToolRegistry {
  get(name: string): AnyTool | undefined;
  list(): readonly AnyTool[];
  /**
   * Sorted by name: registered ∩ exposure ∩ allow-list ∩ run mode, where deferred
   * tools count only once `activated` names them (R3, R4, R5).
   */
  exposedFor(scope: SessionToolScope, activated?: readonly string[], contextual?: readonly string[]): readonly AnyTool[];
  /** Deferred tools the scope may use, ranked for `query` (R5). */
  searchDeferred(query: string, scope: SessionToolScope, limit: number): readonly AnyTool[];
  schemasFor(tools: readonly AnyTool[]): readonly FunctionToolSchema[];
}

export function createToolRegistry(tools: readonly AnyTool[]): ToolRegistry {
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`tool "${tool.name}" registered twice`);
    byName.set(tool.name, tool);
  }
  const sorted = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const deferred = sorted.filter((tool) => tool.exposure === "deferred");
  const schemaCache = new Map<string, readonly FunctionToolSchema[]>();
  let searchIndex: ToolSearchIndex | undefined;

  const inScope = (tool: AnyTool, scope: SessionToolScope): boolean =>
    (scope.toolAllowList === null || scope.toolAllowList.includes(tool.name)) && (scope.runMode === "normal" || tool.sideEffect === "read");
  const hasDeferredFor = (scope: SessionToolScope): boolean => deferred.some((tool) => inScope(tool, scope));

  return {
    get: (name) => byName.get(name),
    list: () => sorted,
    exposedFor(scope, activated = [], contextual = []) {
      return sorted.filter((tool) => {
        if (!inScope(tool, scope)) return false;
        if (tool.name === toolSearchName) return hasDeferredFor(scope);
        if (tool.exposure === "deferred") return activated.includes(tool.name);
        if (tool.exposure === "contextual") return contextual.includes(tool.name);
        return tool.exposure === "direct";
      });
    },
    searchDeferred(query, scope, limit) {
      searchIndex ??= buildToolSearchIndex(deferred);
      const names = searchIndex.search(query, { limit, allowed: (name) => inScope(byName.get(name) as AnyTool, scope) });
      return names.map((name) => byName.get(name) as AnyTool);
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
