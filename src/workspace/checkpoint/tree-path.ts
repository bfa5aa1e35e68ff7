import { decodeByteText, encodeByteText, isEscapedText } from "./byte-text.js";

/**
 * A tree path's names as bytes (SPEC W1). Trees may come back from the store,
 * so a path is taken apart strictly: it must be a byte text of names joined
 * by `/`, none empty, `.` or `..`.
 */
export function splitNames(path: string): Buffer[] | null {
  const bytes = decodeByteText(path);
  if (!bytes || bytes.length === 0) return null;
  const names: Buffer[] = [];
  let start = 0;
  for (let index = 0; index <= bytes.length; index++) {
    if (index < bytes.length && bytes[index] !== slash) continue;
    const name = bytes.subarray(start, index);
    if (name.length === 0 || isDots(name)) return null;
    names.push(name);
    start = index + 1;
  }
  return names;
}

/** The tree path of `names` (at least one). */
export function joinNames(names: readonly Buffer[]): string {
  const parts: Buffer[] = [];
  for (const [index, name] of names.entries()) {
    if (index > 0) parts.push(slashBytes);
    parts.push(name);
  }
  return encodeByteText(Buffer.concat(parts));
}

/** The folder holding a tree path, `""` for the root; an escaped path's parent is its bytes' parent, spelled as `encodeByteText` spells it. */
export function parentPath(path: string): string {
  if (!isEscapedText(path)) {
    const slash = path.lastIndexOf("/");
    return slash < 0 ? "" : path.slice(0, slash);
  }
  const bytes = decodeByteText(path);
  const slash = bytes ? bytes.lastIndexOf(0x2f) : -1;
  return bytes && slash >= 0 ? encodeByteText(bytes.subarray(0, slash)) : "";
}

/** `.` or `..`. */
export function isDots(name: Uint8Array): boolean {
  return (name.length === 1 && name[0] === dot) || (name.length === 2 && name[0] === dot && name[1] === dot);
}

const slash = 0x2f;
const dot = 0x2e;
const slashBytes = Buffer.from("/");
