/**
 * A path inside a tree as a chain of names kept as bytes (SPEC X7, S6): a
 * file name on Linux is any bytes but `/` and NUL, not necessarily UTF-8, so
 * a walk that must handle every name a command can make keeps them as the
 * kernel gives them. Nodes share their parents, so a walk of n entries holds
 * n nodes however deep the tree is, and a path is only spelled out when
 * something needs it (a record, a trash entry, a message).
 */
export interface EntryPath {
  readonly parent: EntryPath | null;
  /** The last name; empty for the root. */
  readonly name: Buffer;
  /** 0 for the root. */
  readonly depth: number;
}

export const rootPath: EntryPath = { parent: null, name: Buffer.alloc(0), depth: 0 };

export function childPath(parent: EntryPath, name: Buffer): EntryPath {
  return { parent, name, depth: parent.depth + 1 };
}

/** The names from the root down, as bytes. */
export function namesOf(entry: EntryPath): Buffer[] {
  const names: Buffer[] = new Array(entry.depth);
  for (let at: EntryPath | null = entry; at?.parent; at = at.parent) names[at.depth - 1] = at.name;
  return names;
}

/** The path's bytes, `a/b/c`, relative to the root. */
export function bytesOf(entry: EntryPath): Buffer {
  const names = namesOf(entry);
  const parts: Buffer[] = [];
  for (const [index, name] of names.entries()) {
    if (index > 0) parts.push(slash);
    parts.push(name);
  }
  return Buffer.concat(parts);
}

const slash = Buffer.from("/");
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The path as text, or null when a name is not valid UTF-8 (such a path cannot be stored as text or shown faithfully). */
export function textOf(entry: EntryPath): string | null {
  try {
    return strictUtf8.decode(bytesOf(entry));
  } catch {
    return null;
  }
}

/** For messages: the path as text, invalid bytes shown as `\xNN`. */
export function shownOf(entry: EntryPath): string {
  const text = textOf(entry);
  if (text !== null) return text;
  let shown = "";
  for (const byte of bytesOf(entry))
    shown += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, "0")}`;
  return shown;
}

/** Whether the path is one of `ancestors` or lies below one: O(depth), whatever the set's size. */
export function isAtOrBelow(entry: EntryPath, ancestors: ReadonlySet<EntryPath>): boolean {
  for (let at: EntryPath | null = entry; at; at = at.parent) if (ancestors.has(at)) return true;
  return false;
}

/** The shallowest entry on the path whose name is one of `names` (compared as bytes), or null. */
export function passesThrough(entry: EntryPath, names: readonly Buffer[]): EntryPath | null {
  let found: EntryPath | null = null;
  for (let at: EntryPath | null = entry; at?.parent; at = at.parent) if (names.some((name) => name.equals(at.name))) found = at;
  return found;
}

/** A host path plus a relative path's bytes, for fs calls (which take Buffers as paths). */
export function hostPathOf(base: string, entry: EntryPath): Buffer {
  return entry.depth === 0 ? Buffer.from(base) : Buffer.concat([Buffer.from(`${base}/`), bytesOf(entry)]);
}

/** `/proc/self/fd/<fd>/<name>` with the name as bytes. */
export function viaDescriptorBytes(fd: number, name?: Buffer): Buffer {
  return name === undefined ? Buffer.from(`/proc/self/fd/${fd}`) : Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), name]);
}
