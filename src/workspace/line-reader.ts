import { isAscii } from "node:buffer";

/**
 * What to take from a text file. Characters are UTF-16 code units, as JavaScript's
 * `string.length` counts them (the read tool's unit); bytes are bytes of the file or of UTF-8.
 */
export interface LineReadOptions {
  /** First line to return, 1-based; values below 1 act as 1. */
  offset: number;
  /** How many lines to return at most. */
  limit: number;
  /** A shown line keeps this many characters; the rest are counted, not stored. */
  maxLineChars: number;
  /**
   * Budget for the shown lines: the UTF-8 bytes of each text plus one for its newline. A
   * line that would pass it is not shown and collection stops. Line numbers and notes are
   * the caller's rendering: leave room for them.
   */
  maxOutputBytes: number;
  /** Bytes of the file read at most, collecting and counting together; beyond it totals are "at least". */
  maxScanBytes: number;
  signal?: AbortSignal;
}

/**
 * The lines taken, and what the caller needs to say what was left out. Lines are split at
 * "\n" only: a "\r" before it stays in the text, and a last line without "\n" is a line.
 * When the scan stops inside a shown line (scan cap or cancel), that line is shown with what
 * was read and its `cut` counts only the characters read. Lines shown short of `limit`
 * with `totalIsExact` false and neither `stoppedByOutputBytes` nor `cancelled` mean the scan
 * cap was reached before the requested lines were.
 */
export interface LineReadResult {
  /** `cut`: characters left out at the end of that line, 0 if none. */
  lines: Array<{ number: number; text: string; cut: number }>;
  /** Lines in the file when `totalIsExact`; otherwise the lines seen so far (the file has at least this many). */
  totalLines: number;
  totalIsExact: boolean;
  scannedBytes: number;
  /** The next line did not fit `maxOutputBytes`: continue from the line after the last one shown. */
  stoppedByOutputBytes: boolean;
  cancelled: boolean;
}

/** Bytes decoded at once, so one huge chunk never becomes one huge string. */
const decodePieceBytes = 64 * 1024;
const newline = 0x0a;

/**
 * Numbers the lines of a UTF-8 text arriving as chunks (a file stream) and takes a window of
 * them, in one pass, in time linear in the bytes read and memory bounded by the window: a
 * tenant's file may be one line of a gigabyte. Lines outside the window are only counted
 * (newline bytes are found without decoding); a shown line keeps `maxLineChars` characters
 * and counts the rest. Invalid UTF-8 becomes U+FFFD; a character split across chunks is
 * decoded whole. Rendering is left to the caller.
 */
export async function readLines(chunks: AsyncIterable<Buffer>, options: LineReadOptions): Promise<LineReadResult> {
  const firstLine = Math.max(1, options.offset);
  const result: LineReadResult = {
    lines: [],
    totalLines: 0,
    totalIsExact: false,
    scannedBytes: 0,
    stoppedByOutputBytes: false,
    cancelled: false,
  };
  let outputBytes = 0;
  let lineNumber = 1;
  let lineHasBytes = false;
  let collecting = options.limit > 0;
  let line = collecting && firstLine === 1 ? new LinePrefix(options.maxLineChars) : null;

  const endLine = () => {
    if (line) {
      const shown = line.finish();
      const bytes = Buffer.byteLength(shown.text) + 1;
      if (outputBytes + bytes > options.maxOutputBytes) {
        result.stoppedByOutputBytes = true;
        collecting = false;
      } else {
        result.lines.push({ number: lineNumber, ...shown });
        outputBytes += bytes;
        if (result.lines.length >= options.limit) collecting = false;
      }
    }
    lineNumber++;
    lineHasBytes = false;
    line = collecting && lineNumber >= firstLine ? new LinePrefix(options.maxLineChars) : null;
  };

  // Ends the scan: counts the line in progress when it has bytes, and shows what was read of it.
  const finish = (exact: boolean): LineReadResult => {
    if (lineHasBytes) endLine();
    result.totalLines = lineNumber - 1;
    result.totalIsExact = exact;
    return result;
  };

  try {
    for await (const chunk of chunks) {
      if (options.signal?.aborted) {
        result.cancelled = true;
        return finish(false);
      }
      const budget = options.maxScanBytes - result.scannedBytes;
      const bytes = chunk.length > budget ? chunk.subarray(0, Math.max(0, budget)) : chunk;
      result.scannedBytes += bytes.length;
      for (let start = 0; start < bytes.length; ) {
        const found = bytes.indexOf(newline, start);
        const end = found === -1 ? bytes.length : found;
        if (end > start) {
          lineHasBytes = true;
          line?.append(bytes.subarray(start, end));
        }
        if (found === -1) break;
        endLine();
        start = found + 1;
      }
      if (bytes.length < chunk.length) return finish(false);
    }
  } catch (error) {
    if (!options.signal?.aborted) throw error;
  }
  if (options.signal?.aborted) {
    result.cancelled = true;
    return finish(false);
  }
  return finish(true);
}

/** The head of one line being read: up to `maxChars` characters kept, the rest counted. */
class LinePrefix {
  private readonly decoder = new TextDecoder("utf-8");
  private text = "";
  private cut = 0;

  constructor(private readonly maxChars: number) {}

  append(bytes: Buffer): void {
    for (let start = 0; start < bytes.length; start += decodePieceBytes) {
      const piece = bytes.subarray(start, start + decodePieceBytes);
      if (this.text.length >= this.maxChars && isAscii(piece)) {
        // Only counting now. An ASCII byte ends any character left open by the last piece,
        // so decoding the first byte settles the decoder and the rest are one unit each.
        this.cut += this.decoder.decode(piece.subarray(0, 1), { stream: true }).length + piece.length - 1;
      } else {
        this.keep(this.decoder.decode(piece, { stream: true }));
      }
    }
  }

  finish(): { text: string; cut: number } {
    this.keep(this.decoder.decode());
    const last = this.text.charCodeAt(this.text.length - 1);
    // A cut never splits a surrogate pair: the high half goes with its low half.
    if (this.cut > 0 && last >= 0xd800 && last <= 0xdbff) return { text: this.text.slice(0, -1), cut: this.cut + 1 };
    return { text: this.text, cut: this.cut };
  }

  private keep(decoded: string): void {
    const room = Math.max(0, this.maxChars - this.text.length);
    if (decoded.length <= room) this.text += decoded;
    else {
      this.text += decoded.slice(0, room);
      this.cut += decoded.length - room;
    }
  }
}
