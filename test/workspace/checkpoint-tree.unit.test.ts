import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeByteText, encodeByteText } from "../../src/workspace/checkpoint/byte-text.js";
import { openCapturedFileReader, readCapturedFile } from "../../src/workspace/checkpoint/captured-file-reader.js";
import { racyWindowNs } from "../../src/workspace/checkpoint/file-digest.js";
import { linkRefusal } from "../../src/workspace/checkpoint/link-confinement.js";
import { materializeTree } from "../../src/workspace/checkpoint/materialize.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import { applyDelta, diffTrees } from "../../src/workspace/checkpoint/tree-delta.js";
import type { CapturedTree, TreeEntries, TreeEntry } from "../../src/workspace/checkpoint/tree-entry.js";
import { compareTreeKeys, compareTreePaths, sortedTree } from "../../src/workspace/checkpoint/tree-order.js";
import { verifyTree } from "../../src/workspace/checkpoint/verify-tree.js";

/**
 * A workspace's tree captured for a checkpoint and rebuilt from it (SPEC W1): every entry, `.git`
 * and `node_modules` included, names of any bytes, modes, links; walked and written through
 * held descriptors (SPEC S6).
 */
let base: string;
beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-checkpoint-")));
});
afterEach(async () => {
  // Read-only folders of a rebuild: root removes them anyway; a non-root run opens them first.
  execFileSync("chmod", ["-R", "u+rwx", base]);
  await rm(base, { recursive: true, force: true });
});

const asRoot = process.getuid?.() === 0;
const sha256 = (content: string | Buffer) => createHash("sha256").update(content).digest("hex");
const bytesPath = (folder: string, ...names: (string | number[])[]) =>
  Buffer.concat([Buffer.from(folder), ...names.flatMap((name) => [Buffer.from("/"), Buffer.from(name as string)])]);
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@x", "-c", "safe.directory=*", "-C", cwd, ...args], {
    stdio: "pipe",
  }).toString();

/** The blobs a checkpoint would store: the fresh files' bytes, read back through the door. */
async function storeBlobs(root: string, capture: CapturedTree, blobs = new Map<string, Buffer>()): Promise<Map<string, Buffer>> {
  const reader = openCapturedFileReader(root);
  try {
    for (const entry of capture.fresh) {
      const content = await reader.read(entry);
      if (!content) throw new Error(`${entry.path} changed since its capture`);
      blobs.set(entry.sha256, content);
    }
  } finally {
    reader.close();
  }
  return blobs;
}

/** Every kind of entry a workspace holds, and the few a rebuild must refuse or skip. */
function buildWorkspace(ws: string): void {
  mkdirSync(path.join(ws, "src", "nested", "deep"), { recursive: true });
  mkdirSync(path.join(ws, "empty", "inner-empty"), { recursive: true });
  writeFileSync(path.join(ws, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(path.join(ws, "src", "nested", "deep", "x.txt"), "deep\n");
  writeFileSync(path.join(ws, "zero"), "");
  writeFileSync(path.join(ws, "tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 });
  writeFileSync(path.join(ws, "secret"), "private\n", { mode: 0o600 });
  writeFileSync(path.join(ws, "suid"), "#!/bin/sh\n");
  chmodSync(path.join(ws, "suid"), 0o4755);
  mkdirSync(path.join(ws, "shared"));
  chmodSync(path.join(ws, "shared"), 0o3777);
  mkdirSync(path.join(ws, "readonly"));
  writeFileSync(path.join(ws, "readonly", "inside"), "kept\n", { mode: 0o444 });
  chmodSync(path.join(ws, "readonly"), 0o555);
  mkdirSync(path.join(ws, "node_modules", "pkg"), { recursive: true });
  writeFileSync(path.join(ws, "node_modules", "pkg", "index.js"), "module.exports = 1;\n");
  // Names that are not UTF-8, one that looks like the escaped form, one that starts with a BOM.
  writeFileSync(bytesPath(ws, [0x66, 0xff, 0xfe]), "latin\n");
  mkdirSync(bytesPath(ws, [0xe9, 0x74, 0xe9]));
  writeFileSync(bytesPath(ws, [0xe9, 0x74, 0xe9], "in"), "in a folder not named in UTF-8\n");
  writeFileSync(path.join(ws, "%bytes:looks-escaped"), "text\n");
  writeFileSync(path.join(ws, "\ufeffbom"), "bom\n");
  symlinkSync("src/a.ts", path.join(ws, "link-file"));
  symlinkSync("src/nested", path.join(ws, "link-dir"));
  symlinkSync("../a.ts", path.join(ws, "src", "nested", "up"));
  symlinkSync("missing/file", path.join(ws, "dangling"));
  symlinkSync(Buffer.from([0x66, 0xff, 0xfe]), path.join(ws, "link-bytes"));
  symlinkSync("/etc/passwd", path.join(ws, "out-absolute"));
  symlinkSync("../../outside", path.join(ws, "src", "out-relative"));
  execFileSync("mkfifo", [path.join(ws, "fifo")]);
  git(ws, "init", "-q");
  git(ws, "add", "src/a.ts", "src/nested", "tool", "zero");
  git(ws, "commit", "-q", "-m", "one");
}

describe("capturing and rebuilding a workspace's tree", () => {
  it("W1: a workspace captured whole, rebuilt into an empty folder on its owner, verifies field by field; .git works there", async () => {
    const ws = path.join(base, "ws");
    buildWorkspace(ws);
    const capture = await captureTree(ws);
    const { entries } = capture;

    expect(capture.truncated).toBe(false);
    expect(capture.skipped).toEqual([{ path: "fifo", reason: "special", type: "fifo" }]);
    expect([...entries.keys()]).toEqual([...sortedTree(entries.values()).keys()]);
    expect([...entries.keys()].filter((key) => key.startsWith(".git/objects/")).length).toBeGreaterThan(3);
    expect(entries.get(".git/HEAD")).toMatchObject({ kind: "file", sha256: sha256(readFileSync(path.join(ws, ".git", "HEAD"))) });
    expect(entries.get("node_modules/pkg/index.js")?.kind).toBe("file");
    expect(entries.get("empty/inner-empty")).toEqual({ kind: "directory", path: "empty/inner-empty", mode: 0o755 });
    expect(entries.get("zero")).toEqual({ kind: "file", path: "zero", mode: 0o644, size: 0, sha256: sha256("") });
    expect(entries.get("suid")).toMatchObject({ mode: 0o4755 });
    expect(entries.get("shared")).toMatchObject({ mode: 0o3777 });
    expect(entries.get("readonly")).toMatchObject({ mode: 0o555 });
    expect(entries.get("%bytes:f%FF%FE")).toMatchObject({ kind: "file", size: 6 });
    expect(entries.get("%bytes:%E9t%E9/in")).toMatchObject({ kind: "file" });
    expect(entries.get("%bytes:%25bytes:looks-escaped")).toMatchObject({ kind: "file" });
    expect(entries.get("\ufeffbom")).toMatchObject({ kind: "file" });
    expect(entries.get("link-bytes")).toEqual({ kind: "symlink", path: "link-bytes", target: "%bytes:f%FF%FE" });
    expect(entries.get("out-absolute")).toEqual({ kind: "symlink", path: "out-absolute", target: "/etc/passwd" });
    expect(entries.has("fifo")).toBe(false);
    expect(capture.hashed).toBe([...entries.values()].filter((entry) => entry.kind === "file").length);

    const blobs = await storeBlobs(ws, capture);
    const rebuilt = path.join(base, "rebuilt");
    mkdirSync(rebuilt);
    const owner = asRoot ? { uid: 12345, gid: 12346 } : {};
    const result = await materializeTree(rebuilt, entries, { blob: async (digest) => blobs.get(digest) ?? null, ...owner });
    expect(result).toMatchObject({ ok: true, symlinks: 5 });
    if (!result.ok) return;
    expect(result.refused).toEqual([
      { path: "out-absolute", target: "/etc/passwd", reason: "absolute" },
      { path: "src/out-relative", target: "../../outside", reason: "outside" },
    ]);
    expect(lstatSync(path.join(rebuilt, "out-absolute"), { throwIfNoEntry: false })).toBeUndefined();

    expect(await verifyTree(rebuilt, entries, { except: new Set(result.refused.map((link) => link.path)) })).toEqual({ ok: true });
    expect(readlinkSync(path.join(rebuilt, "link-bytes"), { encoding: "buffer" })).toEqual(Buffer.from([0x66, 0xff, 0xfe]));
    expect(readFileSync(bytesPath(rebuilt, [0xe9, 0x74, 0xe9], "in"), "utf8")).toBe("in a folder not named in UTF-8\n");
    if (asRoot) {
      for (const name of ["src", "src/a.ts", "link-dir", "readonly/inside"])
        expect(lstatSync(path.join(rebuilt, name))).toMatchObject({ uid: 12345, gid: 12346 });
      expect(lstatSync(path.join(rebuilt, "suid")).mode & 0o7777).toBe(0o4755);
    }
    expect(git(rebuilt, "log", "--format=%s")).toBe("one\n");
    expect(git(rebuilt, "status", "--porcelain", "--", "src/a.ts", "src/nested", "tool", "zero")).toBe("");
  });

  it("W1: a capture given the previous one hashes only the file that changed, of 2,000, and gives the event loop turns", async () => {
    const ws = path.join(base, "many");
    for (let folder = 0; folder < 20; folder++) {
      mkdirSync(path.join(ws, `d${folder}`), { recursive: true });
      for (let file = 0; file < 100; file++) writeFileSync(path.join(ws, `d${folder}`, `f${file}`), `file ${folder}/${file}\n`);
    }
    // Timestamps within the racy window of a read are not trusted later: let the files age past it first.
    await sleep(Number(racyWindowNs / 1_000_000n) + 20);
    let turns = 0;
    let counting = true;
    const count = () => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const cold = await captureTree(ws);
    counting = false;
    expect(cold.hashed).toBe(2000);
    expect(cold.fresh).toHaveLength(2000);
    expect(turns).toBeGreaterThan(1);

    const again = await captureTree(ws, { previous: cold });
    expect(again.hashed).toBe(0);
    expect(again.fresh).toEqual([]);
    expect(again.entries).toEqual(cold.entries);

    writeFileSync(path.join(ws, "d7", "f42"), "FILE 7/42\n");
    const after = await captureTree(ws, { previous: again });
    expect(after.hashed).toBe(1);
    expect(after.fresh).toEqual([{ kind: "file", path: "d7/f42", mode: 0o644, size: 10, sha256: sha256("FILE 7/42\n") }]);
    expect(await diffTrees(again.entries, after.entries)).toEqual({ upserts: after.fresh, removed: [] });
    expect(after.entries).toEqual((await captureTree(ws)).entries);
  });

  it("W1: a captured file's bytes are answered only while it still hashes to its digest", async () => {
    const ws = path.join(base, "ws");
    mkdirSync(path.join(ws, "a"), { recursive: true });
    writeFileSync(path.join(ws, "a", "f"), "before\n");
    const capture = await captureTree(ws);
    const entry = capture.entries.get("a/f");
    if (entry?.kind !== "file") throw new Error("no file captured");
    expect(await readCapturedFile(ws, entry)).toEqual(Buffer.from("before\n"));
    writeFileSync(path.join(ws, "a", "f"), "after!\n");
    expect(await readCapturedFile(ws, entry)).toBeNull();
    // A folder swapped for a link to where the same file lies is not followed.
    mkdirSync(path.join(base, "elsewhere"));
    writeFileSync(path.join(base, "elsewhere", "f"), "before\n");
    rmSync(path.join(ws, "a"), { recursive: true });
    symlinkSync(path.join(base, "elsewhere"), path.join(ws, "a"));
    expect(await readCapturedFile(ws, entry)).toBeNull();
  });

  it("W1: over random edits on disk, the delta of two captures applied to the first gives the second, and the fast path agrees with a cold capture", async () => {
    const ws = path.join(base, "ws");
    mkdirSync(ws);
    const random = seeded(20261130);
    let previous = await captureTree(ws);
    let reused = 0;
    for (let round = 0; round < 12; round++) {
      for (let edit = 0; edit < 15; edit++) editOnDisk(ws, random);
      const next = await captureTree(ws, { previous });
      const cold = await captureTree(ws);
      expect(next.entries).toEqual(cold.entries);
      reused += cold.hashed - next.hashed;
      const delta = await diffTrees(previous.entries, next.entries);
      const applied = await applyDelta(previous.entries, delta);
      expect(applied).toEqual(next.entries);
      expect([...applied.keys()]).toEqual([...next.entries.keys()]);
      previous = next;
    }
    expect(previous.entries.size).toBeGreaterThan(20);
    // Edits follow one another within the racy window, so most files are read again; some were not.
    expect(reused).toBeGreaterThan(0);
  });
});

describe("diffTrees and applyDelta", () => {
  it("W1: applyDelta(a, diffTrees(a, b)) equals b, order included, over 300 seeded random pairs of trees", async () => {
    const random = seeded(7);
    for (let run = 0; run < 300; run++) {
      const a = randomTree(random, 1 + Math.floor(random() * 40));
      const b = editTree(a, random, Math.floor(random() * 10));
      const delta = await diffTrees(a, b);
      const applied = await applyDelta(a, delta);
      expect(applied).toEqual(b);
      expect([...applied.keys()]).toEqual([...b.keys()]);
      expect(await diffTrees(b, b)).toEqual({ upserts: [], removed: [] });
      // A base out of tree order (not one a capture makes) still gives the tree in order.
      expect([...(await applyDelta(new Map([...a].reverse()), delta)).keys()]).toEqual([...b.keys()]);
      for (const removed of delta.removed) expect(b.has(removed)).toBe(false);
    }
  });

  it("W1: paths and targets of any bytes round-trip through their texts, each has exactly one text, and texts sort as their bytes", () => {
    const random = seeded(99);
    const pool = [..."ab/%", "\u00e9", "\uf000", "\u{1f600}"].map((text) => Buffer.from(text));
    const randomBytes = () =>
      Buffer.concat(
        Array.from({ length: Math.floor(random() * 8) }, () =>
          random() < 0.5 ? Buffer.from([Math.floor(random() * 256)]) : pick(random, pool),
        ),
      );
    let previous = Buffer.alloc(0);
    for (let run = 0; run < 2000; run++) {
      const bytes = randomBytes();
      const text = encodeByteText(bytes);
      expect(decodeByteText(text)).toEqual(bytes);
      expect(JSON.parse(JSON.stringify(text))).toBe(text);
      expect(Math.sign(compareTreeKeys(text, encodeByteText(previous)))).toBe(Math.sign(compareTreePaths(bytes, previous)));
      previous = bytes;
    }
    expect(encodeByteText(Buffer.from("café/a b"))).toBe("café/a b");
    expect(encodeByteText(Buffer.from([0x63, 0x61, 0x66, 0xe9]))).toBe("%bytes:caf%E9");
    expect(encodeByteText(Buffer.from("%bytes:x"))).toBe("%bytes:%25bytes:x");
    expect(decodeByteText("%bytes:abc")).toBeNull();
    expect(decodeByteText("%bytes:%e9")).toBeNull();
    expect(decodeByteText("\ud800")).toBeNull();
    expect(decodeByteText("\ufeffbom")).toEqual(Buffer.from("\ufeffbom"));
  });
});

describe("what a rebuild refuses", () => {
  const tree = (...entries: TreeEntry[]): TreeEntries => sortedTree(entries);
  const file = (at: string, content: string): TreeEntry => ({
    kind: "file",
    path: at,
    mode: 0o644,
    size: content.length,
    sha256: sha256(content),
  });
  const folder = (at: string): TreeEntry => ({ kind: "directory", path: at, mode: 0o755 });
  const link = (at: string, target: string): TreeEntry => ({ kind: "symlink", path: at, target });

  it("W1: a folder that is not empty is refused, and nothing is written into it", async () => {
    const target = path.join(base, "full");
    mkdirSync(target);
    writeFileSync(path.join(target, "already"), "here");
    const result = await materializeTree(target, tree(file("a", "a")), { blob: async () => Buffer.from("a") });
    expect(result).toMatchObject({ ok: false, error: "not_empty" });
    expect(readdirSync(target)).toEqual(["already"]);
    expect(await materializeTree(path.join(base, "missing"), tree(), { blob: async () => null })).toMatchObject({
      ok: false,
      error: "not_a_folder",
    });
  });

  it("W1: a blob whose bytes do not hash to its digest is refused (digest_mismatch), a missing one too (missing_blob)", async () => {
    const wrong = path.join(base, "wrong");
    mkdirSync(wrong);
    const entries = tree(folder("d"), file("d/f", "right"));
    expect(await materializeTree(wrong, entries, { blob: async () => Buffer.from("wrong") })).toMatchObject({
      ok: false,
      error: "digest_mismatch",
      path: "d/f",
    });
    expect(lstatSync(path.join(wrong, "d", "f"), { throwIfNoEntry: false })).toBeUndefined();
    const missing = path.join(base, "missing");
    mkdirSync(missing);
    expect(await materializeTree(missing, entries, { blob: async () => null })).toMatchObject({
      ok: false,
      error: "missing_blob",
      path: "d/f",
    });
  });

  it("W1: a tree that is not a tree (a name through a link, `..`, no parent folder) is refused before anything is written", async () => {
    for (const entries of [
      tree(link("l", "."), file("l/f", "x")),
      tree(folder("d"), file("d/../f", "x")),
      tree(file("no-parent/f", "x")),
      new Map([["a", file("b", "x")]]),
    ]) {
      const target = path.join(base, `t${Math.random().toString(16).slice(2)}`);
      mkdirSync(target);
      expect(await materializeTree(target, entries, { blob: async () => Buffer.from("x") })).toMatchObject({
        ok: false,
        error: "invalid_tree",
      });
      expect(readdirSync(target)).toEqual([]);
    }
  });

  it("W1: a link is written only when, resolved from its own folder through the tree's links, it stays inside", () => {
    const entries = tree(folder("a"), folder("a/b"), link("s", "."), link("deep", "a/b"), link("abs", "/tmp"));
    const refusal = (at: string, target: string) =>
      linkRefusal(
        entries,
        at.split("/").map((name) => Buffer.from(name)),
        Buffer.from(target),
      );
    expect(refusal("a/b/l", "../../x")).toBeNull();
    expect(refusal("a/b/l", "../../../x")).toBe("outside");
    expect(refusal("l", "s/../x")).toBe("outside");
    expect(refusal("l", "deep/../../x")).toBeNull();
    expect(refusal("l", "abs/x")).toBe("outside");
    expect(refusal("l", "/etc")).toBe("absolute");
    expect(refusal("a/l", "missing/../../x")).toBeNull();
    expect(refusal("l", "./a/./b/../..")).toBeNull();
  });
});

/** mulberry32: a small seeded generator, so a failing case can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const names = ["a", "b", "c", "a-b", "é", "%bytes:z", "\ufeff", "\u{1f600}", "\uf000"];

function randomTree(random: () => number, size: number): TreeEntries {
  const entries = new Map<string, TreeEntry>();
  const folders = [""];
  for (let index = 0; index < size; index++) {
    const parent = pick(random, folders);
    const name = random() < 0.15 ? encodeByteText(Buffer.from([0x6e, 0x80 + Math.floor(random() * 64)])) : pick(random, names);
    const at = parent === "" ? name : `${parent}/${name}`;
    if (entries.has(at)) continue;
    const entry = randomEntry(random, at);
    entries.set(at, entry);
    if (entry.kind === "directory") folders.push(at);
  }
  return sortedTree(entries.values());
}

function randomEntry(random: () => number, at: string): TreeEntry {
  const roll = random();
  if (roll < 0.35) return { kind: "directory", path: at, mode: pick(random, [0o755, 0o700, 0o555, 0o1777]) };
  if (roll < 0.85) {
    const size = Math.floor(random() * 100);
    return { kind: "file", path: at, mode: pick(random, [0o644, 0o600, 0o755, 0o4755]), size, sha256: sha256(String(random())) };
  }
  return { kind: "symlink", path: at, target: pick(random, ["a", "../b", "/abs", encodeByteText(Buffer.from([0xff]))]) };
}

/** A tree with `edits` random changes: entries added, changed, turned into another kind, or removed with all below them. */
function editTree(tree: TreeEntries, random: () => number, edits: number): TreeEntries {
  const entries = new Map(tree);
  for (let edit = 0; edit < edits; edit++) {
    const paths = [...entries.keys()];
    const roll = random();
    if (roll < 0.3 || paths.length === 0) {
      const grown = randomTree(random, 4);
      for (const [at, entry] of grown)
        if (!entries.has(at) && (!at.includes("/") || entries.get(at.slice(0, at.lastIndexOf("/")))?.kind === "directory"))
          entries.set(at, entry);
    } else if (roll < 0.6) {
      const at = pick(random, paths);
      for (const below of paths) if (below === at || below.startsWith(`${at}/`)) entries.delete(below);
    } else {
      const at = pick(random, paths);
      const was = entries.get(at) as TreeEntry;
      const changed = randomEntry(random, at);
      // A folder that became something else loses what it held.
      if (was.kind === "directory" && changed.kind !== "directory")
        for (const below of paths) if (below.startsWith(`${at}/`)) entries.delete(below);
      entries.set(at, changed);
    }
  }
  return sortedTree(entries.values());
}

/** One random change on disk: a file written or rewritten, a folder made, a mode changed, a link made, an entry removed. */
function editOnDisk(ws: string, random: () => number): void {
  const existing = listAll(Buffer.from(ws));
  const folders = [Buffer.from(ws), ...existing.filter((at) => lstatSync(at).isDirectory())];
  const name = random() < 0.2 ? Buffer.from([0x6e, 0x80 + Math.floor(random() * 8)]) : Buffer.from(pick(random, ["a", "b", "c", "d"]));
  const fresh = Buffer.concat([pick(random, folders), Buffer.from("/"), name]);
  const taken = lstatSync(fresh, { throwIfNoEntry: false });
  const roll = random();
  if (roll < 0.4 && (!taken || taken.isFile())) writeFileSync(fresh, `content ${random()}`);
  else if (roll < 0.65 && !taken) mkdirSync(fresh);
  else if (roll < 0.72 && !taken) symlinkSync(pick(random, ["a", "../a", "/x"]), fresh);
  else if (roll < 0.9 && existing.length > 0) {
    const at = pick(random, existing);
    if (!lstatSync(at).isSymbolicLink())
      chmodSync(at, lstatSync(at).isDirectory() ? pick(random, [0o755, 0o700]) : pick(random, [0o644, 0o600, 0o755]));
  } else if (existing.length > 0) rmSync(pick(random, existing), { recursive: true, force: true });
}

/** Every entry below a folder, as byte paths (readdir's `recursive` gives no bytes). */
function listAll(folder: Buffer): Buffer[] {
  const found: Buffer[] = [];
  for (const name of readdirSync(folder, { encoding: "buffer" })) {
    const at = Buffer.concat([folder, Buffer.from("/"), name]);
    found.push(at);
    if (lstatSync(at).isDirectory()) found.push(...listAll(at));
  }
  return found;
}
