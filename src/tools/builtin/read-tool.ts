import { open } from "node:fs/promises";
import { defineTool, errorResult, textResult } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface ReadArgs {
  path: string;
  offset?: number;
  limit?: number;
}

const maxBytes = 256 * 1024;
const defaultLineLimit = 2000;

/** Reads a text file of the workspace with line numbers; keeps the head and says what it left out. */
export const readTool = defineTool<ReadArgs>({
  name: "read",
  description:
    "Read a text file from the project workspace. Returns numbered lines. Use offset (1-based line) and limit to page through long files.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace root.", minLength: 1 },
      offset: { type: "integer", minimum: 1, description: "First line to return (1-based)." },
      limit: { type: "integer", minimum: 1, maximum: 10000, description: "How many lines to return." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "read",
  parallel: true,
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path);
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    let handle;
    try {
      handle = await open(resolved.absolute, "r");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return errorResult("file_not_found", `No file at "${args.path}".`);
      if (code === "EISDIR") return errorResult("is_directory", `"${args.path}" is a directory.`);
      return errorResult("read_failed", `Could not read "${args.path}": ${code ?? (error as Error).message}`);
    }
    try {
      const stat = await handle.stat();
      if (stat.isDirectory()) return errorResult("is_directory", `"${args.path}" is a directory.`);
      const buffer = Buffer.alloc(Math.min(stat.size, maxBytes));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const head = buffer.subarray(0, bytesRead);
      if (head.includes(0)) return textResult(`"${args.path}" is a binary file of ${stat.size} bytes; not shown.`);
      const lines = head.toString("utf8").split("\n");
      // Drop the empty piece after a final newline, or the last line the byte cap cut short.
      if (lines.length > 1 && (stat.size > bytesRead || lines.at(-1) === "")) lines.pop();
      const start = (args.offset ?? 1) - 1;
      const selected = lines.slice(start, start + (args.limit ?? defaultLineLimit));
      const numbered = selected.map((line, i) => `${String(start + i + 1).padStart(6)}\t${line}`).join("\n");
      const shownBytes = Buffer.byteLength(selected.join("\n"));
      const omittedBytes = stat.size - shownBytes;
      const note =
        omittedBytes > 0 && (stat.size > bytesRead || start + selected.length < lines.length || start > 0)
          ? `\n[showing lines ${start + 1}-${start + selected.length}; ${omittedBytes} of ${stat.size} bytes not shown]`
          : "";
      return textResult(numbered + note);
    } finally {
      await handle.close();
    }
  },
});
