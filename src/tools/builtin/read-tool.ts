import { z } from "zod";
import { maxArtifactBytes } from "../../store/artifacts.js";
import { sniffImageMediaType } from "../../artifacts/media-types.js";
import { readLines } from "../../workspace/line-reader.js";
import type { OpenedFile } from "../../workspace/workspace-files.js";
import { defineTool, errorResult, textResult, type ToolResult } from "../tool.js";
import { doorRefusal, workspaceFailure } from "./workspace-failure.js";

const defaultLineLimit = 2000;
const maxLineChars = 2000;
const maxOutputBytes = 256 * 1024;
/**
 * Bytes looked at per call, collecting and counting together: lines are
 * counted to the end within it (so the note can say "of how many"), and a
 * read further into a huge file stops there and says so. Scanning is linear:
 * about half a second for the whole budget.
 */
const maxScanBytes = 512 * 1024 * 1024;
/** Room for the line numbers and tabs the lines are shown with (at most 8 bytes a line). */
const numberingBytes = 8 * 10_000;

/**
 * Reads a text file of the workspace with line numbers (SPEC O1): offset and
 * limit page through it; lines, line length and bytes are capped keeping the
 * head, in one linear pass with bounded memory (a 1 GB line costs a scan, not
 * a gigabyte), and a note says what was left out of how much. Images (by their
 * bytes) are returned as images (I1); other binary files are described, not
 * dumped. The file comes through the workspace door (S6).
 */
export const readTool = defineTool({
  name: "read",
  description:
    "Read a file from the project workspace. Text files return numbered lines; use offset (1-based line) and limit to page through long files. PNG, JPEG, GIF and WebP images are returned as images.",
  parameters: z
    .object({
      path: z.string().min(1).max(4096).describe("Path relative to the workspace root."),
      offset: z.int().min(1).describe("First line to return (1-based).").optional(),
      limit: z.int().min(1).max(10_000).describe("How many lines to return.").optional(),
    })
    .strict(),
  exposure: "direct",
  sideEffect: "read",
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  refusal: (context, args) => doorRefusal(() => context.workspace.check(args.path, "read")),
  parallel: true,
  async run(context, args) {
    let file: OpenedFile;
    try {
      file = await context.workspace.openFile(args.path);
    } catch (error) {
      return workspaceFailure(error);
    }
    try {
      const probe = await file.head(Math.min(file.size, 8192));
      // Images are told by their bytes, not their name; the engine stores them as artifacts (I1).
      const imageType = sniffImageMediaType(probe);
      if (imageType) return await imageResult(file, imageType, context.signal);
      if (probe.includes(0)) return textResult(`"${file.path}" is a binary file of ${file.size} bytes; not shown.`);
      const first = args.offset ?? 1;
      const read = await readLines(file.chunks({ signal: context.signal }), {
        offset: first,
        limit: args.limit ?? defaultLineLimit,
        maxLineChars,
        maxOutputBytes: maxOutputBytes - numberingBytes,
        maxScanBytes,
        signal: context.signal,
      });
      if (read.cancelled) return errorResult("cancelled", "The read was cancelled.");
      return textResult(render(file, first, read));
    } finally {
      await file.close();
    }
  },
});

function render(file: OpenedFile, first: number, read: Awaited<ReturnType<typeof readLines>>): string {
  const total = read.totalIsExact ? `${read.totalLines}` : `at least ${read.totalLines}`;
  const scanNote = read.totalIsExact ? "" : ` [stopped after reading ${read.scannedBytes} of ${file.size} bytes]`;
  if (read.lines.length === 0) return `"${file.path}" has ${total} lines; none from line ${first}.${scanNote}`;
  let shownBytes = 0;
  const shown = read.lines.map((line) => {
    shownBytes += Buffer.byteLength(line.text) + 1;
    return `${String(line.number).padStart(6)}\t${line.text}${line.cut > 0 ? `… [line cut: ${line.cut} more characters]` : ""}`;
  });
  const last = read.lines[read.lines.length - 1]?.number ?? first;
  const notes: string[] = [];
  const cut = read.lines.filter((line) => line.cut > 0).length;
  if (first > 1 || last < read.totalLines || !read.totalIsExact)
    notes.push(`showing lines ${first}-${last} of ${total}; ${Math.max(0, file.size - shownBytes)} of ${file.size} bytes not shown`);
  if (read.stoppedByOutputBytes) notes.push(`output capped at ${maxOutputBytes} bytes; continue with offset ${last + 1}`);
  if (cut > 0) notes.push(`${cut} long lines cut at ${maxLineChars} characters`);
  return shown.join("\n") + (notes.length ? `\n[${notes.join("; ")}]` : "");
}

/** An image file as an image part, with a line saying what it is; too large an image is described instead. */
async function imageResult(file: OpenedFile, mediaType: string, signal: AbortSignal): Promise<ToolResult> {
  if (file.size > maxArtifactBytes) {
    return errorResult(
      "image_too_large",
      `"${file.path}" is a ${mediaType} image of ${file.size} bytes; images over ${maxArtifactBytes} bytes are not returned.`,
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of file.chunks({ end: maxArtifactBytes, signal })) chunks.push(chunk);
  const data = Buffer.concat(chunks);
  return {
    content: [
      { type: "text", text: `"${file.path}": ${mediaType} image, ${data.length} bytes` },
      { type: "image-data", mediaType, data },
    ],
  };
}
