import { z } from "zod";
import { compileGlob } from "../../workspace/glob-pattern.js";
import { defineTool, errorResult, textResult } from "../tool.js";
import { doorRefusal, workspaceFailure } from "./workspace-failure.js";

const maxShown = 1000;
/** Entries looked at before a listing stops, so a huge tree costs a bounded walk. */
const maxVisited = 100_000;
const skipped = new Set(["node_modules", ".git"]);

/**
 * Lists files of the workspace matching a glob, sorted, capped like read
 * (SPEC O1). The workspace door walks only inside the workspace and never
 * follows a link (S6); the glob (matched in linear time) only filters what the
 * walk meets, so no pattern can reach outside.
 */
export const listTool = defineTool({
  name: "list",
  description:
    "List files in the workspace matching a glob pattern (default **/*), sorted. node_modules and .git are skipped; symbolic links are listed, not followed.",
  parameters: z
    .object({
      pattern: z.string().min(1).max(1000).describe('Glob relative to path, e.g. "src/**/*.ts" (default "**/*").').optional(),
      path: z.string().min(1).max(4096).describe("Folder to search from, relative to the workspace root (default the root).").optional(),
    })
    .strict(),
  exposure: "direct",
  sideEffect: "read",
  approvalSubject: (args) => ({ kind: "path", path: args.path ?? "." }),
  parallel: true,
  async refusal(context, args) {
    const glob = compileGlob(args.pattern ?? "**/*");
    if (!glob.ok) return { code: glob.outside ? "path_outside_workspace" : "invalid_pattern", message: glob.message };
    return doorRefusal(() => context.workspace.check(args.path ?? ".", "read"));
  },
  async run(context, args) {
    const pattern = args.pattern ?? "**/*";
    const glob = compileGlob(pattern);
    if (!glob.ok) return errorResult(glob.outside ? "path_outside_workspace" : "invalid_pattern", glob.message);
    const files: string[] = [];
    let outcome;
    try {
      outcome = await context.workspace.walk(
        {
          from: args.path ?? ".",
          skipFolders: skipped,
          enter: (_path, relative) => glob.mayMatchUnder(relative),
          maxEntries: maxVisited,
          signal: context.signal,
        },
        (file) => {
          if (glob.matches(file.relative)) files.push(file.relative);
        },
      );
    } catch (error) {
      return workspaceFailure(error);
    }
    if (outcome.cancelled) return errorResult("cancelled", "The listing was cancelled.");
    files.sort();
    const walkNote = outcome.truncated ? `\n[stopped after looking at ${outcome.visited} entries; narrow the path or pattern]` : "";
    if (files.length === 0) return textResult(`No files match ${pattern}.${walkNote}`);
    const note = files.length > maxShown ? `\n[${files.length - maxShown} of ${files.length} entries not shown]` : "";
    return textResult(files.slice(0, maxShown).join("\n") + note + walkNote);
  },
});
