import { open } from "node:fs/promises";
import path from "node:path";
import { glob } from "tinyglobby";
import { defineTool, errorResult, textResult } from "../tool.js";
import { compileLinePattern } from "../line-pattern.js";
import { resolveToolPath } from "./tool-path.js";

interface GrepArgs {
  pattern: string;
  glob?: string;
  ignoreCase?: boolean;
}

const maxMatches = 500;
const maxLineLength = 300;
/** Files bigger than this are skipped: grep is for source, not for data dumps. */
const maxFileBytes = 4 * 1024 * 1024;

/** Searches workspace files for a regular expression, line by line, capped (SPEC O1). */
export const grepTool = defineTool<GrepArgs>({
  name: "grep",
  description:
    "Search workspace files for a regular expression (JavaScript syntax). Answers path:line: text for each match. node_modules, .git and binary files are skipped.",
  parameters: {
    type: "object",
    properties: {
      pattern: { type: "string", minLength: 1, maxLength: 1000, description: "Regular expression." },
      glob: { type: "string", minLength: 1, maxLength: 1000, description: 'Files to search (default "**/*").' },
      ignoreCase: { type: "boolean" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "read",
  parallel: true,
  async run(context, args) {
    const regex = compileLinePattern(args.pattern, args.ignoreCase === true);
    if (!regex.ok) return errorResult("invalid_pattern", `The pattern is not a valid regular expression: ${regex.message}`);
    const resolved = await resolveToolPath(context, ".");
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    const pattern = args.glob ?? "**/*";
    if (pattern.split("/").includes("..")) return errorResult("path_outside_workspace", "The glob may not climb out with '..'.");
    const files = (await glob(pattern, { cwd: resolved.absolute, ignore: ["**/node_modules/**", "**/.git/**"], dot: true, onlyFiles: true, followSymbolicLinks: false })).sort();
    const matches: string[] = [];
    let total = 0;
    for (const file of files) {
      if (context.signal.aborted) return errorResult("cancelled", "The search was cancelled.");
      const content = await readSmallText(path.join(resolved.absolute, file));
      if (content === null) continue;
      content.split("\n").forEach((line, index) => {
        if (!regex.test(line)) return;
        total++;
        if (matches.length < maxMatches) {
          const shown = line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line;
          matches.push(`${file}:${index + 1}: ${shown}`);
        }
      });
    }
    if (total === 0) return textResult(`No match for /${args.pattern}/ in ${files.length} files.`);
    const note = total > matches.length ? `\n[${total - matches.length} of ${total} matches not shown]` : "";
    return textResult(matches.join("\n") + note);
  },
});

async function readSmallText(absolute: string): Promise<string | null> {
  const handle = await open(absolute, "r").catch(() => null);
  if (!handle) return null;
  try {
    const stat = await handle.stat();
    if (stat.size > maxFileBytes) return null;
    const buffer = await handle.readFile();
    return buffer.includes(0) ? null : buffer.toString("utf8");
  } finally {
    await handle.close();
  }
}
