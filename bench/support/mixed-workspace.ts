import { randomBytes } from "node:crypto";
import { lchownSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * A project's workspace filled directly on disk with files of mixed sizes, as a repository with
 * some data in it would be: of every 20 files one is large (about 1.1 MB at 100 MB over 1,000
 * files), five are medium (about 150 KB) and the rest small (about 10 KB), each ±25 %, spread
 * evenly over 10 × 10 folders (`pkg<i>/mod<j>/file<k>.txt`). Random base64 text, so every file is
 * its own blob; owned by the workspace folder's owner, as a tool would have left them.
 */
export interface MixedWorkspace {
  root: string;
  files: number;
  bytes: number;
  largest: number;
  smallest: number;
  /** A small file of the tree, for a call that reads it. */
  sampleFile: string;
}

const leaves = { top: 10, inner: 10 };
/** Relative weights of the three kinds of file: large, medium, small. */
const weights = { large: 110, medium: 15, small: 1 };

/** Random base64 text of `size` bytes in lines of 76 characters (100 MB in well under a second). */
function randomText(size: number): Buffer {
  const text = Buffer.from(randomBytes(Math.ceil((size * 3) / 4) + 3).toString("base64"));
  for (let i = 76; i < size; i += 77) text[i] = 0x0a;
  return text.subarray(0, size);
}

function weightOf(index: number): number {
  const kind = index % 20 === 0 ? weights.large : index % 20 <= 5 ? weights.medium : weights.small;
  // ±25 %, the same for a given index in every run.
  return kind * (0.75 + ((index * 7919) % 1001) / 2000);
}

export function populateMixedWorkspace(root: string, options: { files: number; totalBytes: number }): MixedWorkspace {
  const { uid, gid } = statSync(root);
  const weightSum = Array.from({ length: options.files }, (_, index) => weightOf(index)).reduce((sum, weight) => sum + weight, 0);
  const leafCount = leaves.top * leaves.inner;
  let bytes = 0;
  let largest = 0;
  let smallest = Number.POSITIVE_INFINITY;
  let sampleFile = "";
  for (let leaf = 0; leaf < leafCount; leaf++) {
    const topFolder = path.join(root, `pkg${Math.floor(leaf / leaves.inner)}`);
    const folder = path.join(topFolder, `mod${leaf % leaves.inner}`);
    for (const made of [topFolder, folder]) {
      mkdirSync(made, { recursive: true, mode: 0o755 });
      lchownSync(made, uid, gid);
    }
    for (let index = leaf; index < options.files; index += leafCount) {
      const size = Math.max(1, Math.round((options.totalBytes * weightOf(index)) / weightSum));
      const file = path.join(folder, `file${index}.txt`);
      writeFileSync(file, randomText(size), { mode: 0o644 });
      lchownSync(file, uid, gid);
      bytes += size;
      largest = Math.max(largest, size);
      smallest = Math.min(smallest, size);
      if (index === 6) sampleFile = path.relative(root, file);
    }
  }
  return { root, files: options.files, bytes, largest, smallest, sampleFile };
}
