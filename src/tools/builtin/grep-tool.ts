import { z } from "zod";
import { compileGlob } from "../../workspace/glob-pattern.js";
import { defineTool, errorResult, textResult } from "../tool.js";
import { compileLinePattern } from "../line-pattern.js";
import { workspaceFailure } from "./workspace-failure.js";

const maxMatches = 500;
const maxLineLength = 300;
/** Files bigger than this are skipped: grep is for source, not for data dumps. */
const maxFileBytes = 4 * 1024 * 1024;
const maxVisited = 100_000;
const skipped = new Set(["node_modules", ".git"]);

/**
 * Searches workspace files for a regular expression, line by line, capped
 * (SPEC O1). Files come from the workspace door's walk (inside only, links
 * never followed, each file read from the folder the walk holds: S6); the
 * pattern and the glob both run in linear time.
 */
export const grepTool = defineTool({
  name: "grep",
  description:
    "Search workspace files for a regular expression (RE2 syntax, like JavaScript's without backreferences or lookaround). Answers path:line: text for each match. node_modules, .git, symbolic links and binary files are skipped.",
  parameters: z
    .object({
      pattern: z.string().min(1).max(1000).describe("Regular expression."),
      glob: z.string().min(1).max(1000).describe('Files to search (default "**/*").').optional(),
      ignoreCase: z.boolean().optional(),
    })
    .strict(),
  exposure: "direct",
  sideEffect: "read",
  parallel: true,
  async refusal(_context, args) {
    const glob = compileGlob(args.glob ?? "**/*");
    return glob.ok ? null : { code: glob.outside ? "path_outside_workspace" : "invalid_pattern", message: glob.message };
  },
  async run(context, args) {
    const regex = compileLinePattern(args.pattern, args.ignoreCase === true);
    if (!regex.ok) return errorResult("invalid_pattern", `The pattern is not a valid regular expression: ${regex.message}`);
    const glob = compileGlob(args.glob ?? "**/*");
    if (!glob.ok) return errorResult(glob.outside ? "path_outside_workspace" : "invalid_pattern", glob.message);
    const matches: string[] = [];
    let total = 0;
    let searched = 0;
    let outcome;
    try {
      outcome = await context.workspace.walk(
        { skipFolders: skipped, enter: (path) => glob.mayMatchUnder(path), maxEntries: maxVisited, signal: context.signal },
        async (file) => {
          if (file.kind !== "file" || !glob.matches(file.path)) return;
          const content = await file.read(maxFileBytes);
          if (content === null || content.includes(0)) return;
          searched++;
          content
            .toString("utf8")
            .split("\n")
            .forEach((line, index) => {
              if (!regex.test(line)) return;
              total++;
              if (matches.length < maxMatches)
                matches.push(`${file.path}:${index + 1}: ${line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line}`);
            });
        },
      );
    } catch (error) {
      return workspaceFailure(error);
    }
    if (outcome.cancelled) return errorResult("cancelled", "The search was cancelled.");
    const walkNote = outcome.truncated ? `\n[stopped after looking at ${outcome.visited} entries; narrow the glob]` : "";
    if (total === 0) return textResult(`No match for /${args.pattern}/ in ${searched} files.${walkNote}`);
    const note = total > matches.length ? `\n[${total - matches.length} of ${total} matches not shown]` : "";
    return textResult(matches.join("\n") + note + walkNote);
  },
});
