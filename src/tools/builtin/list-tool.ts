import { glob } from "tinyglobby";
import { defineTool, errorResult, textResult } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface ListArgs {
  pattern?: string;
  path?: string;
}

const maxEntries = 1000;
const ignored = ["**/node_modules/**", "**/.git/**"];

/** Lists files of the workspace matching a glob, sorted, capped like read (SPEC O1). */
export const listTool = defineTool<ListArgs>({
  name: "list",
  description: "List files in the workspace matching a glob pattern (default **/*), sorted. node_modules and .git are skipped.",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", minLength: 1, maxLength: 1000, description: 'Glob, e.g. "src/**/*.ts" (default "**/*").' },
      path: { type: "string", minLength: 1, description: "Folder to search from, relative to the workspace root (default the root)." },
    },
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "read",
  approvalSubject: (args) => ({ kind: "path", path: args.path ?? "." }),
  parallel: true,
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path ?? ".");
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    const pattern = args.pattern ?? "**/*";
    if (pattern.split("/").includes("..")) return errorResult("path_outside_workspace", "The pattern may not climb out with '..'.");
    let files: string[];
    try {
      files = await glob(pattern, { cwd: resolved.absolute, ignore: ignored, dot: true, onlyFiles: true, followSymbolicLinks: false, expandDirectories: false });
    } catch (error) {
      return errorResult("list_failed", `Could not list "${pattern}": ${(error as Error).message}`);
    }
    files.sort();
    if (files.length === 0) return textResult(`No files match ${pattern}.`);
    const shown = files.slice(0, maxEntries).join("\n");
    const note = files.length > maxEntries ? `\n[${files.length - maxEntries} of ${files.length} entries not shown]` : "";
    return textResult(shown + note);
  },
});
