import { fstatSync } from "node:fs";
import { timeSlices } from "../../core/time-slices.js";
import { childPath, type EntryPath, rootPath } from "../entry-path.js";
import { openFolderHandles } from "../folder-handles.js";
import { readingContext, readPieces, readVerified } from "./file-digest.js";
import type { FileEntry } from "./tree-entry.js";
import { splitNames } from "./tree-path.js";

/**
 * The bytes of files a capture found new (`CapturedTree.fresh`), read later
 * to be stored as blobs (SPEC W1). Each is reached again through the door
 * (folders by descriptor, never through a symlink; the file checked on its
 * own descriptor) and answered only if it still hashes to the captured
 * digest: null means it changed since, and the checkpoint must be taken again.
 */
export interface CapturedFileReader {
  read(entry: FileEntry): Promise<Buffer | null>;
  /**
   * The file's bytes as they are read, never whole in memory (a large file streamed to the blob
   * store): empty when it is gone, at most one byte past its captured size. Its digest is the
   * consumer's to check: content that does not hash to `entry.sha256` changed since.
   */
  stream(entry: FileEntry): AsyncIterable<Buffer>;
  close(): void;
}

/** Folder paths remembered for reuse of held descriptors; past this the memory starts afresh. */
const maxRememberedFolders = 10_000;

export function openCapturedFileReader(root: string, options: { signal?: AbortSignal } = {}): CapturedFileReader {
  const folders = openFolderHandles(root);
  const context = readingContext(fstatSync(folders.folder(rootPath) as number).uid, timeSlices(), options.signal);
  // The same EntryPath object for the same folder, so the handles' held descriptors are found again.
  const known = new Map<string, EntryPath>();
  const folderPath = (names: Buffer[]): EntryPath => {
    let at = rootPath;
    let key = "";
    for (const name of names) {
      key += `/${name.toString("hex")}`;
      let next = known.get(key);
      if (!next) {
        if (known.size >= maxRememberedFolders) known.clear();
        next = childPath(at, name);
        known.set(key, next);
      }
      at = next;
    }
    return at;
  };
  return {
    async read(entry) {
      const names = splitNames(entry.path);
      const name = names?.pop();
      if (!names || !name) return null;
      const fd = folders.folder(folderPath(names));
      if (fd === null) return null;
      return readVerified(fd, name, context, entry);
    },
    async *stream(entry) {
      const names = splitNames(entry.path);
      const name = names?.pop();
      if (!names || !name) return;
      const fd = folders.folder(folderPath(names));
      if (fd === null) return;
      yield* readPieces(fd, name, context, entry);
    },
    close: () => folders.close(),
  };
}

/** One file's bytes, as `CapturedFileReader.read`; for many, open one reader. */
export async function readCapturedFile(root: string, entry: FileEntry): Promise<Buffer | null> {
  const reader = openCapturedFileReader(root);
  try {
    return await reader.read(entry);
  } finally {
    reader.close();
  }
}
