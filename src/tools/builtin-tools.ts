import type { AnyTool } from "./tool.js";
import { readTool } from "./builtin/read-tool.js";
import { writeTool } from "./builtin/write-tool.js";

export function builtinTools(): AnyTool[] {
  return [readTool, writeTool];
}
