/**
 * Re-cutting a stream of buffers (a file read in the reader's own pieces) into chunks of one
 * length for the blob store, each chunk a buffer of its own: the source may reuse its buffers.
 */
export async function* fixedChunks(source: AsyncIterable<Buffer>, chunkBytes: number): AsyncIterable<Buffer> {
  let chunk = Buffer.allocUnsafe(chunkBytes);
  let filled = 0;
  for await (const piece of source) {
    for (let offset = 0; offset < piece.length; ) {
      const copied = piece.copy(chunk, filled, offset);
      filled += copied;
      offset += copied;
      if (filled === chunkBytes) {
        yield chunk;
        chunk = Buffer.allocUnsafe(chunkBytes);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield chunk.subarray(0, filled);
}

/** The whole stream in one buffer, or null as soon as it passes `maxBytes` (the rest is not read). */
export async function collectUpTo(source: AsyncIterable<Buffer>, maxBytes: number): Promise<Buffer | null> {
  const pieces: Buffer[] = [];
  let total = 0;
  for await (const piece of source) {
    total += piece.length;
    if (total > maxBytes) return null;
    pieces.push(Buffer.from(piece));
  }
  return Buffer.concat(pieces, total);
}
