import { emptySha256 } from "./tree-entry.js";

/**
 * The blobs of a rebuild's files, asked for a few ahead of the writes (SPEC
 * W1): the store answers over the network, and waiting for each blob just
 * before its file is written would make a rebuild of 10,000 files 10,000
 * round trips long. Answers come back in the order of `digests`. The empty
 * file's blob is never asked for. The window is refilled once half of it is
 * used, all at once, so a fetcher that coalesces what is asked in one turn
 * makes one query per half window.
 */
export interface BlobWindow<Blob> {
  /** The next digest's blob (null when the store has none). */
  next(): Promise<Blob | Buffer | null>;
}

export function blobWindow<Blob>(
  digests: readonly string[],
  fetch: (sha256: string) => Promise<Blob | null>,
  ahead: number,
): BlobWindow<Blob> {
  const pending: Promise<Blob | Buffer | null>[] = [];
  let started = 0;
  const fill = () => {
    while (started < digests.length && pending.length < Math.max(1, ahead)) {
      const digest = digests[started++] as string;
      const answer = digest === emptySha256 ? Promise.resolve(Buffer.alloc(0)) : fetch(digest);
      // Awaited later, in order; a rejection before then is not an unhandled one (it is thrown at its turn).
      answer.catch(() => {});
      pending.push(answer);
    }
  };
  return {
    async next() {
      if (pending.length === 0) fill();
      const answer = pending.shift();
      if (!answer) throw new Error("blobWindow: more blobs asked for than digests given");
      if (pending.length <= Math.floor(ahead / 2)) fill();
      return answer;
    },
  };
}
