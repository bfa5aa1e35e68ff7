import { emptySha256 } from "./tree-entry.js";

/**
 * The blobs of a rebuild's files, asked for a few ahead of the writes (SPEC
 * W1): the store answers over the network, and waiting for each blob just
 * before its file is written would make a rebuild of 10,000 files 10,000
 * round trips long. Answers come back in the order of `digests`. The empty
 * file's blob is never asked for.
 */
export interface BlobWindow {
  /** The next digest's blob (null when the store has none). */
  next(): Promise<Buffer | null>;
}

export function blobWindow(digests: readonly string[], fetch: (sha256: string) => Promise<Buffer | null>, ahead: number): BlobWindow {
  const pending: Promise<Buffer | null>[] = [];
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
      fill();
      const answer = pending.shift();
      if (!answer) throw new Error("blobWindow: more blobs asked for than digests given");
      fill();
      return answer;
    },
  };
}
