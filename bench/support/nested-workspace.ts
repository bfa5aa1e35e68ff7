import { randomBytes } from "node:crypto";
import { lchownSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * A project's workspace filled directly on disk for a benchmark: `files` text files of 8 to
 * 12 KB (about 10 KB on average, random base64 lines, so every file is its own blob) spread
 * evenly over 10 × 10 folders two levels deep (`pkg<i>/mod<j>/file<k>.txt`), owned by the
 * workspace folder's owner as a tool would have left them.
 */
export interface NestedWorkspace {
  root: string;
  files: number;
  folders: number;
  bytes: number;
  /** A file in the middle of the tree, for a benchmark's one-file change. */
  middleFile: string;
  owner: { uid: number; gid: number };
}

const topFolders = 10;
const innerFolders = 10;

/** Text of `size` bytes: random base64 in lines of 76 characters. */
export function textOfSize(size: number, head = ""): Buffer {
  const lines: string[] = head ? [head] : [];
  let length = head ? head.length + 1 : 0;
  while (length < size) {
    const line = randomBytes(57).toString("base64");
    lines.push(line);
    length += line.length + 1;
  }
  return Buffer.from(`${lines.join("\n")}\n`).subarray(0, size);
}

export function populateNestedWorkspace(root: string, files: number): NestedWorkspace {
  const { uid, gid } = statSync(root);
  const leaves = topFolders * innerFolders;
  let bytes = 0;
  let folders = 0;
  for (let top = 0; top < topFolders; top++) {
    const topFolder = path.join(root, `pkg${top}`);
    mkdirSync(topFolder, { mode: 0o755 });
    lchownSync(topFolder, uid, gid);
    folders++;
    for (let inner = 0; inner < innerFolders; inner++) {
      const folder = path.join(topFolder, `mod${inner}`);
      mkdirSync(folder, { mode: 0o755 });
      lchownSync(folder, uid, gid);
      folders++;
      const leaf = top * innerFolders + inner;
      // Files numbered across the whole tree; leaf `leaf` holds every `leaves`-th one.
      for (let index = leaf; index < files; index += leaves) {
        const size = 8_000 + ((index * 7919) % 4_001);
        const file = path.join(folder, `file${index}.txt`);
        writeFileSync(file, textOfSize(size), { mode: 0o644 });
        lchownSync(file, uid, gid);
        bytes += size;
      }
    }
  }
  const middle = Math.floor(files / 2);
  const middleLeaf = middle % leaves;
  const middleFile = `pkg${Math.floor(middleLeaf / innerFolders)}/mod${middleLeaf % innerFolders}/file${middle}.txt`;
  return { root, files, folders, bytes, middleFile, owner: { uid, gid } };
}
