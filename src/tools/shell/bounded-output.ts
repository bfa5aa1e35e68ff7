/**
 * Keeps a bounded view of a stream that may be any size (SPEC O1): the first
 * `headBytes` and the last `tailBytes`, plus exact totals. Memory stays at
 * head + tail however much is written. Shell output keeps mostly the tail,
 * where results and final errors are; a small head keeps the first error.
 */
export class BoundedOutput {
  private readonly head: Buffer;
  private headLength = 0;
  private readonly tail: Buffer;
  private tailStart = 0;
  private tailLength = 0;
  private totalBytes = 0;
  private totalNewlines = 0;

  constructor(
    readonly headBytes: number,
    readonly tailBytes: number,
  ) {
    this.head = Buffer.alloc(headBytes);
    this.tail = Buffer.alloc(tailBytes);
  }

  write(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) this.totalNewlines++;
    let rest = chunk;
    if (this.headLength < this.headBytes) {
      const taken = rest.copy(this.head, this.headLength, 0, Math.min(rest.length, this.headBytes - this.headLength));
      this.headLength += taken;
      rest = rest.subarray(taken);
    }
    if (rest.length === 0 || this.tailBytes === 0) return;
    if (rest.length >= this.tailBytes) {
      rest.copy(this.tail, 0, rest.length - this.tailBytes);
      this.tailStart = 0;
      this.tailLength = this.tailBytes;
      return;
    }
    // Ring buffer: write after the current end, wrapping around.
    let end = (this.tailStart + this.tailLength) % this.tailBytes;
    for (let offset = 0; offset < rest.length; ) {
      const room = Math.min(rest.length - offset, this.tailBytes - end);
      rest.copy(this.tail, end, offset, offset + room);
      offset += room;
      end = (end + room) % this.tailBytes;
    }
    const overflow = this.tailLength + rest.length - this.tailBytes;
    if (overflow > 0) {
      this.tailStart = (this.tailStart + overflow) % this.tailBytes;
      this.tailLength = this.tailBytes;
    } else {
      this.tailLength += rest.length;
    }
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /** Lines in the whole stream (a last line without a newline counts too). */
  get lines(): number {
    return this.totalNewlines + (this.totalBytes > 0 && !this.endsWithNewline() ? 1 : 0);
  }

  private endsWithNewline(): boolean {
    if (this.tailLength > 0) return this.tail[(this.tailStart + this.tailLength - 1) % this.tailBytes] === 10;
    return this.headLength > 0 && this.head[this.headLength - 1] === 10;
  }

  private tailBuffer(): Buffer {
    if (this.tailStart + this.tailLength <= this.tailBytes) return this.tail.subarray(this.tailStart, this.tailStart + this.tailLength);
    return Buffer.concat([this.tail.subarray(this.tailStart), this.tail.subarray(0, (this.tailStart + this.tailLength) % this.tailBytes)]);
  }

  /**
   * The kept text. When something was left out, the head is cut back to its
   * last whole line and the tail starts at its first whole line, and a note
   * between them says how many lines and bytes were omitted, of how many.
   */
  render(): string {
    const head = this.head.subarray(0, this.headLength);
    if (this.tailLength === 0 || this.totalBytes === this.headLength + this.tailLength) {
      return Buffer.concat([head, this.tailBuffer()]).toString("utf8");
    }
    const headCut = head.lastIndexOf(10) + 1;
    const keptHead = headCut > 0 ? head.subarray(0, headCut) : head;
    const tail = this.tailBuffer();
    const tailCut = tail.indexOf(10);
    const keptTail = tailCut !== -1 && tailCut + 1 < tail.length ? tail.subarray(tailCut + 1) : tail;
    const omittedBytes = this.totalBytes - keptHead.length - keptTail.length;
    const keptLines = count(keptHead) + count(keptTail) + (keptTail.length > 0 && keptTail[keptTail.length - 1] !== 10 ? 1 : 0);
    const omittedLines = Math.max(0, this.lines - keptLines);
    return (
      keptHead.toString("utf8") +
      `[… ${omittedLines} of ${this.lines} lines and ${omittedBytes} of ${this.totalBytes} bytes omitted …]\n` +
      keptTail.toString("utf8")
    );
  }
}

function count(buffer: Buffer): number {
  let lines = 0;
  for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) lines++;
  return lines;
}
