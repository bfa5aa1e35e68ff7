import { decodeByteText } from "./byte-text.js";
import type { TreeEntries } from "./tree-entry.js";
import { isDots, joinNames } from "./tree-path.js";

/**
 * Whether a symlink a rebuild would write stays inside the workspace (SPEC
 * W1, S6). A checkpoint keeps every link as it was, but a rebuild writes only
 * those whose target, resolved from the link's own folder the way the kernel
 * would, never leaves the root: an absolute target, or `..` past the root, is
 * refused. Links inside the tree met on the way are followed through the
 * tree itself (a link `l -> s/..` where `s -> .` climbs out although its text
 * does not look it); a name the tree does not have is taken as written, so a
 * link dangling inside the workspace is kept.
 */
export type LinkRefusal =
  /** The link's own target is absolute. */
  | "absolute"
  /** Resolved from the link's folder, through the tree's own links, it leaves the root. */
  | "outside";

/** Symlinks followed in one resolution, as the kernel's own limit: more and the kernel answers ELOOP, which leads nowhere. */
const maxHops = 40;
/** Names stepped through at most: a target is at most 4 KiB, so 40 hops of real targets stay below this. */
const maxSteps = 40 * 2048;

export function linkRefusal(tree: TreeEntries, linkNames: readonly Buffer[], target: Buffer): LinkRefusal | null {
  if (target[0] === slash) return "absolute";
  const at = linkNames.slice(0, -1);
  const queue = targetNames(target);
  let hops = 0;
  for (let steps = 0; queue.length > 0; steps++) {
    if (steps > maxSteps) return "outside";
    const name = queue.shift() as Buffer;
    if (isDots(name)) {
      if (at.length === 0) return "outside";
      at.pop();
      continue;
    }
    at.push(name);
    const entry = tree.get(joinNames(at));
    if (entry?.kind !== "symlink") continue;
    if (++hops > maxHops) return null;
    const next = decodeByteText(entry.target);
    if (!next || next[0] === slash) return "outside";
    at.pop();
    queue.unshift(...targetNames(next));
  }
  return null;
}

/** The names of a relative target, `.` and empty names dropped (so a `.`-like name left is `..`). */
function targetNames(target: Buffer): Buffer[] {
  const names: Buffer[] = [];
  let start = 0;
  for (let index = 0; index <= target.length; index++) {
    if (index < target.length && target[index] !== slash) continue;
    const name = target.subarray(start, index);
    start = index + 1;
    if (name.length === 0 || (isDots(name) && name.length === 1)) continue;
    names.push(name);
  }
  return names;
}

const slash = 0x2f;
