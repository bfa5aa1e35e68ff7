import { z } from "zod";
import { defineTool, errorResult, textResult } from "../tool.js";
import { compileLinePattern } from "../line-pattern.js";

/** The tool the context compiler offers while a projected result is in the request (SPEC O3). */
export const historyReadToolName = "history_read_tool_result";

const historyReadArguments = z
  .object({
    reference: z.string().min(1).max(100).describe('The reference from the note, e.g. "res_3_2_0".'),
    operation: z.enum(["inspect", "read", "search"]),
    startLine: z.int().min(1).optional(),
    endLine: z.int().min(1).optional(),
    startByte: z.int().min(0).optional(),
    endByte: z.int().min(0).optional(),
    pattern: z.string().min(1).max(1000).optional(),
    regex: z.boolean().describe("Treat pattern as a JavaScript regular expression (default: plain text).").optional(),
    ignoreCase: z.boolean().optional(),
    contextLines: z.int().min(0).max(20).optional(),
  })
  .strict();
type HistoryReadArgs = z.input<typeof historyReadArguments>;

const maxReadLines = 2000;
const maxOutputChars = 64 * 1024;
const maxMatches = 100;

/**
 * Reads the full text of a tool result that the request showed only in part
 * (SPEC O2, O3): `inspect` (size, lines, type), `read` (a line or byte range,
 * capped), `search` (text or regular expression, with context lines, capped).
 * Bad references, ranges and patterns are is_error results the model can fix.
 */
export const historyReadTool = defineTool({
  name: historyReadToolName,
  description:
    "Read a tool result that was too large to show whole. Pass the reference from the note in the shortened result. operation: inspect (size, lines, type), read (startLine/endLine, 1-based and inclusive, or startByte/endByte), search (pattern, as text or with regex true, with contextLines).",
  parameters: historyReadArguments,
  exposure: "contextual",
  sideEffect: "read",
  parallel: true,
  async run(context, args) {
    const result = await context.history.readToolResult(args.reference);
    if (!result)
      return errorResult(
        "unknown_reference",
        `No tool result "${args.reference}" in this session's history. Use the reference from the note exactly.`,
      );
    const { text } = result;
    const lines = text.split("\n");
    switch (args.operation) {
      case "inspect":
        return textResult(
          [
            `reference: ${args.reference}`,
            `tool: ${result.name}${result.isError ? " (an error result)" : ""}`,
            `characters: ${text.length}`,
            `bytes (UTF-8): ${Buffer.byteLength(text)}`,
            `lines: ${lines.length}`,
            `type: ${looksLikeJson(text) ? "JSON" : "text"}`,
          ].join("\n"),
        );
      case "read":
        return readRange(text, lines, args);
      case "search":
        return search(lines, args);
    }
  },
});

function readRange(text: string, lines: string[], args: HistoryReadArgs) {
  const byLines = args.startLine !== undefined || args.endLine !== undefined;
  const byBytes = args.startByte !== undefined || args.endByte !== undefined;
  if (byLines && byBytes) return errorResult("invalid_range", "Give a line range or a byte range, not both.");
  if (byBytes) {
    const bytes = Buffer.from(text);
    const start = args.startByte ?? 0;
    const end = Math.min(args.endByte ?? bytes.length, bytes.length, start + maxOutputChars);
    if (start >= bytes.length) return errorResult("invalid_range", `startByte ${start} is past the end (${bytes.length} bytes).`);
    if (end <= start) return errorResult("invalid_range", "endByte must be greater than startByte.");
    const note = end < (args.endByte ?? bytes.length) ? `\n[capped at ${maxOutputChars} bytes; continue from startByte ${end}]` : "";
    return textResult(`${bytes.subarray(start, end).toString("utf8")}${note}`);
  }
  const start = args.startLine ?? 1;
  const wantedEnd = args.endLine ?? Math.min(lines.length, start + maxReadLines - 1);
  if (start > lines.length) return errorResult("invalid_range", `startLine ${start} is past the end (${lines.length} lines).`);
  if (wantedEnd < start) return errorResult("invalid_range", "endLine must not be before startLine.");
  let end = Math.min(wantedEnd, lines.length, start + maxReadLines - 1);
  let out = "";
  for (let line = start; line <= end; line++) {
    const next = `${String(line).padStart(6)}\t${lines[line - 1]}\n`;
    if (out.length + next.length > maxOutputChars) {
      end = line - 1;
      break;
    }
    out += next;
  }
  const capped =
    end < Math.min(wantedEnd, lines.length)
      ? `[capped: continue from startLine ${end + 1} of ${lines.length}]`
      : `[lines ${start}-${end} of ${lines.length}]`;
  return textResult(`${out}${capped}`);
}

function search(lines: string[], args: HistoryReadArgs) {
  if (!args.pattern) return errorResult("invalid_arguments", "search needs a pattern.");
  let matcher: (line: string) => boolean;
  if (args.regex) {
    const expression = compileLinePattern(args.pattern, args.ignoreCase === true);
    if (!expression.ok) return errorResult("invalid_pattern", `The regular expression is invalid: ${expression.message}`);
    matcher = expression.test;
  } else {
    const needle = args.ignoreCase ? args.pattern.toLowerCase() : args.pattern;
    matcher = (line) => (args.ignoreCase ? line.toLowerCase() : line).includes(needle);
  }
  const around = args.contextLines ?? 2;
  const hits: number[] = [];
  let total = 0;
  for (const [index, line] of lines.entries()) {
    if (!matcher(line)) continue;
    total++;
    if (hits.length < maxMatches) hits.push(index);
  }
  if (total === 0) return textResult(`No line matches ${JSON.stringify(args.pattern)} (searched ${lines.length} lines).`);
  // Context windows of nearby hits merge, so no line is printed twice.
  let out = "";
  let printedUpTo = -1;
  for (const hit of hits) {
    const from = Math.max(hit - around, printedUpTo + 1);
    const to = Math.min(hit + around, lines.length - 1);
    if (from > printedUpTo + 1 && out.length > 0) out += "--\n";
    for (let index = from; index <= to; index++) out += `${String(index + 1).padStart(6)}${index === hit ? ":" : "-"}\t${lines[index]}\n`;
    printedUpTo = to;
    if (out.length > maxOutputChars) {
      out = `${out.slice(0, maxOutputChars)}\n[output capped at ${maxOutputChars} characters]\n`;
      break;
    }
  }
  const more = total > hits.length ? ` (showing the first ${hits.length})` : "";
  return textResult(`${out}[${total} matching lines${more}]`);
}

function looksLikeJson(text: string): boolean {
  const trimmed = text.trim();
  if (!(trimmed.startsWith("{") || trimmed.startsWith("["))) return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}
