import { pathToFileURL } from "node:url";
import type { AnyTool } from "./tool.js";

/** Loads extra tool sources named in configuration; each module exports `tools: AnyTool[]`. */
export async function loadToolModules(paths: readonly string[]): Promise<AnyTool[]> {
  const loaded: AnyTool[] = [];
  for (const modulePath of paths) {
    const module = (await import(pathToFileURL(modulePath).href)) as { tools?: unknown };
    if (!Array.isArray(module.tools)) throw new Error(`tool module ${modulePath} does not export a "tools" array`);
    loaded.push(...(module.tools as AnyTool[]));
  }
  return loaded;
}
