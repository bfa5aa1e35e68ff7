import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { maxArtifactBytes } from "../../artifacts/artifact-store.js";
import { sniffImageMediaType } from "../../artifacts/media-types.js";
import { defineTool, errorResult, textResult, type ToolResult } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface ReadArgs {
  path: string;
  offset?: number;
  limit?: number;
}

const defaultLineLimit = 2000;
const maxLineChars = 2000;
const maxOutputBytes = 256 * 1024;
/** Lines are counted to the end for files up to this size, so the note can say "of how many". */
const maxCountedBytes = 64 * 1024 * 1024;

/**
 * Reads a text file of the workspace with line numbers (SPEC O1): offset and
 * limit page through it; lines, line length and bytes are capped keeping the
 * head, and a note says what was left out of how much. Images (by their bytes)
 * are returned as images (I1); other binary files are described, not dumped.
 */
export const readTool = defineTool<ReadArgs>({
  name: "read",
  description:
    "Read a file from the project workspace. Text files return numbered lines; use offset (1-based line) and limit to page through long files. PNG, JPEG, GIF and WebP images are returned as images.",
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
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  parallel: true,
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path);
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    let size: number;
    try {
      const handle = await open(resolved.absolute, "r");
      try {
        const stat = await handle.stat();
        if (stat.isDirectory()) return errorResult("is_directory", `"${args.path}" is a directory.`);
        size = stat.size;
        const probe = Buffer.alloc(Math.min(size, 8192));
        await handle.read(probe, 0, probe.length, 0);
        // Images are told by their bytes, not their name; the engine stores them as artifacts (I1).
        const imageType = sniffImageMediaType(probe);
        if (imageType) return await imageResult(args.path, imageType, size, () => handle.readFile());
        if (probe.includes(0)) return textResult(`"${args.path}" is a binary file of ${size} bytes; not shown.`);
      } finally {
        await handle.close();
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return errorResult("file_not_found", `No file at "${args.path}".`);
      if (code === "EISDIR") return errorResult("is_directory", `"${args.path}" is a directory.`);
      // The path is echoed short: a path long enough to fail is no use to the model whole.
      const shown = args.path.length > 200 ? `${args.path.slice(0, 200)}… (${args.path.length} characters)` : args.path;
      return errorResult("read_failed", `Could not read "${shown}": ${code ?? (error as Error).message}`);
    }

    const first = (args.offset ?? 1) - 1;
    const limit = args.limit ?? defaultLineLimit;
    const shown: string[] = [];
    let outputBytes = 0;
    let shownFileBytes = 0;
    let lineNumber = 0;
    let cutLines = 0;
    let stoppedByBytes = false;
    let partial = "";
    let reachedEnd = true;
    const take = (line: string) => {
      if (lineNumber >= first && shown.length < limit && !stoppedByBytes) {
        const text = line.length > maxLineChars ? `${line.slice(0, maxLineChars)}… [line cut: ${line.length - maxLineChars} more characters]` : line;
        if (line.length > maxLineChars) cutLines++;
        const rendered = `${String(lineNumber + 1).padStart(6)}\t${text}`;
        if (outputBytes + Buffer.byteLength(rendered) + 1 > maxOutputBytes) stoppedByBytes = true;
        else {
          shown.push(rendered);
          outputBytes += Buffer.byteLength(rendered) + 1;
          shownFileBytes += Buffer.byteLength(line.length > maxLineChars ? line.slice(0, maxLineChars) : line) + 1;
        }
      }
      lineNumber++;
    };
    const stream = createReadStream(resolved.absolute, { encoding: "utf8", signal: context.signal });
    for await (const chunk of stream as AsyncIterable<string>) {
      const pieces = (partial + chunk).split("\n");
      partial = pieces.pop() ?? "";
      for (const piece of pieces) take(piece);
      const done = shown.length >= limit || stoppedByBytes;
      if (done && (size > maxCountedBytes || lineNumber > first + limit + 1_000_000)) {
        reachedEnd = false;
        stream.destroy();
        break;
      }
    }
    if (reachedEnd && partial.length > 0) take(partial);

    const total = reachedEnd ? `${lineNumber}` : `at least ${lineNumber}`;
    const notes: string[] = [];
    if (shown.length === 0) return textResult(`"${args.path}" has ${total} lines; none from line ${first + 1}.`);
    const last = first + shown.length;
    if (first > 0 || last < lineNumber || !reachedEnd) notes.push(`showing lines ${first + 1}-${last} of ${total}; ${Math.max(0, size - shownFileBytes)} of ${size} bytes not shown`);
    if (stoppedByBytes) notes.push(`output capped at ${maxOutputBytes} bytes; continue with offset ${last + 1}`);
    if (cutLines > 0) notes.push(`${cutLines} long lines cut at ${maxLineChars} characters`);
    return textResult(shown.join("\n") + (notes.length ? `\n[${notes.join("; ")}]` : ""));
  },
});

/** An image file as an image part, with a line saying what it is; too large an image is described instead. */
async function imageResult(displayPath: string, mediaType: string, size: number, readBytes: () => Promise<Buffer>): Promise<ToolResult> {
  if (size > maxArtifactBytes) {
    return errorResult("image_too_large", `"${displayPath}" is a ${mediaType} image of ${size} bytes; images over ${maxArtifactBytes} bytes are not returned.`);
  }
  const data = await readBytes();
  return {
    content: [
      { type: "text", text: `"${displayPath}": ${mediaType} image, ${data.length} bytes` },
      { type: "image-data", mediaType, data },
    ],
  };
}
