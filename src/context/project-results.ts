/**
 * Projection of large tool results (SPEC O2). When a stored result is too big
 * for the request, the model gets its head and tail, how much was left out,
 * and a reference it can pass to `history_read_tool_result` (O3). The full
 * result stays in canonical history untouched. A pure function of the text,
 * the reference and the limit: the same history always compiles to the same
 * bytes, so provider prompt caches keep hitting.
 */

/** Where a tool message sits in its session; the reference names it (`res_<run>_<step>_<call>`). */
export interface ResultPosition {
  runOrdinal: number;
  stepIndex: number;
  callIndex: number;
}

export function referenceOf(position: ResultPosition): string {
  return `res_${position.runOrdinal}_${position.stepIndex}_${position.callIndex}`;
}

export function parseReference(reference: string): ResultPosition | null {
  const match = /^res_(\d{1,9})_(\d{1,9})_(\d{1,9})$/.exec(reference);
  if (!match) return null;
  return { runOrdinal: Number(match[1]), stepIndex: Number(match[2]), callIndex: Number(match[3]) };
}

/**
 * The largest result (in characters) sent whole. Scales with the model's
 * context window: a result may take about 5 % of it (4 characters per token),
 * never less than 4,000 characters. `override` (configuration) wins.
 */
export function projectionLimit(contextWindowTokens: number, override?: number): number {
  if (override !== undefined && override > 0) return override;
  return Math.max(4_000, Math.floor(contextWindowTokens * 4 * 0.05));
}

export interface Projection {
  text: string;
  projected: boolean;
}

/** Head and tail of `text` within `limit` characters, cut at line ends where possible. */
export function projectResult(text: string, reference: string, toolName: string, limit: number): Projection {
  if (text.length <= limit) return { text, projected: false };
  const totalLines = countLines(text);
  const budget = Math.max(0, limit - 600);
  const head = cutAtLineEnd(wholeCharacters(text.slice(0, Math.floor(budget * 0.4))));
  const tail = cutAtLineStart(wholeCharacters(text.slice(text.length - Math.floor(budget * 0.6))));
  const headLines = countLines(head);
  const tailLines = countLines(tail);
  const omittedChars = text.length - head.length - tail.length;
  const omittedLines = Math.max(0, totalLines - headLines - tailLines);
  const note =
    `[Result of ${toolName} too large to send whole: ${text.length} characters, ${totalLines} lines. ` +
    `Showing the first ${headLines} and last ${tailLines} lines. The full result is kept as ${reference}: ` +
    `call history_read_tool_result with reference "${reference}" to inspect it, read a range or search it.]`;
  return {
    text: `${note}\n${head}\n[... ${omittedLines} lines, ${omittedChars} characters left out ...]\n${tail}`,
    projected: true,
  };
}

/** A cut may fall inside a surrogate pair; its lone half is dropped so the request stays valid text. */
function wholeCharacters(piece: string): string {
  let start = 0;
  let end = piece.length;
  if (end > 0 && /[\uDC00-\uDFFF]/.test(piece[0] as string)) start = 1;
  if (end > start && /[\uD800-\uDBFF]/.test(piece[end - 1] as string)) end -= 1;
  return piece.slice(start, end);
}

function countLines(text: string): number {
  if (text.length === 0) return 0;
  let lines = 1;
  for (let at = text.indexOf("\n"); at !== -1 && at < text.length - 1; at = text.indexOf("\n", at + 1)) lines++;
  return lines;
}

/** Drops a trailing partial line, unless that would drop everything. */
function cutAtLineEnd(head: string): string {
  const end = head.lastIndexOf("\n");
  return end > head.length / 2 ? head.slice(0, end) : head;
}

/** Drops a leading partial line, unless that would drop everything. */
function cutAtLineStart(tail: string): string {
  const start = tail.indexOf("\n");
  return start !== -1 && start < tail.length / 2 ? tail.slice(start + 1) : tail;
}

/** The text of a result as the compiler measures and projects it: its text parts, one per line. */
export function resultText(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content
    .filter((part) => part.type === "text")
    .map((part) => part.text ?? "")
    .join("\n");
}

/**
 * References of the tool results in `entries` that are too large to send whole.
 * The step's claim uses it to decide whether `history_read_tool_result` is
 * offered; the compiler projects exactly these.
 */
export function oversizedResults(
  entries: ReadonlyArray<{ message: { role: string; content?: unknown }; position: ResultPosition }>,
  limit: number,
): string[] {
  const references: string[] = [];
  for (const { message, position } of entries) {
    if (message.role !== "tool") continue;
    if (resultText(message.content as Array<{ type: string; text?: string }>).length > limit) references.push(referenceOf(position));
  }
  return references;
}
