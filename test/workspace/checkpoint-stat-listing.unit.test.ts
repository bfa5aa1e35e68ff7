import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, linkSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { racyWindowNs } from "../../src/workspace/checkpoint/file-digest.js";
import { listTree } from "../../src/workspace/checkpoint/stat-listing.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import type { CapturedTree } from "../../src/workspace/checkpoint/tree-entry.js";

/**
 * A whole-tree capture from one `find` listing (SPEC W1, S6) gives exactly the tree, stamps,
 * fresh files and skipped entries of the descriptor walk, in the same order; it never follows a
 * symlink, never opens a FIFO, and reads only the files whose stamp moved.
 */
let base: string;
beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-listing-")));
});
afterEach(async () => {
  execFileSync("chmod", ["-R", "u+rwx", base]);
  await rm(base, { recursive: true, force: true });
});

const asRoot = process.getuid?.() === 0;
const bytesPath = (folder: string, ...names: (string | number[])[]) =>
  Buffer.concat([Buffer.from(folder), ...names.flatMap((name) => [Buffer.from("/"), Buffer.from(name as string)])]);

function buildWorkspace(ws: string, outside: string): void {
  mkdirSync(path.join(ws, "src", "nested", "deep"), { recursive: true });
  mkdirSync(path.join(ws, "empty", "inner-empty"), { recursive: true });
  writeFileSync(path.join(ws, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(path.join(ws, "src", "nested", "deep", "x.txt"), "deep\n");
  writeFileSync(path.join(ws, "zero"), "");
  writeFileSync(path.join(ws, "tool"), "#!/bin/sh\n", { mode: 0o755 });
  writeFileSync(path.join(ws, "secret"), "private\n", { mode: 0o600 });
  writeFileSync(path.join(ws, "suid"), "#!/bin/sh\n");
  chmodSync(path.join(ws, "suid"), 0o4755);
  mkdirSync(path.join(ws, "shared"));
  chmodSync(path.join(ws, "shared"), 0o3777);
  mkdirSync(path.join(ws, "readonly"));
  writeFileSync(path.join(ws, "readonly", "inside"), "kept\n", { mode: 0o444 });
  chmodSync(path.join(ws, "readonly"), 0o555);
  // Names find and a parser could trip on: not UTF-8, escaped-looking, a tab, a newline, spaces, a BOM.
  writeFileSync(bytesPath(ws, [0x66, 0xff, 0xfe]), "latin\n");
  mkdirSync(bytesPath(ws, [0xe9, 0x74, 0xe9]));
  writeFileSync(bytesPath(ws, [0xe9, 0x74, 0xe9], "in"), "in a folder not named in UTF-8\n");
  writeFileSync(path.join(ws, "%bytes:looks-escaped"), "text\n");
  writeFileSync(path.join(ws, "tab\tand\nnewline"), "odd\n");
  writeFileSync(path.join(ws, " 1 2 3"), "spaces\n");
  writeFileSync(path.join(ws, "\ufeffbom"), "bom\n");
  writeFileSync(path.join(ws, "café"), "utf-8\n");
  // Sorting: `a`, `a/b`, `a-c`, `a.d` in tree order.
  mkdirSync(path.join(ws, "a", "b"), { recursive: true });
  writeFileSync(path.join(ws, "a-c"), "");
  writeFileSync(path.join(ws, "a.d"), "");
  symlinkSync("src/a.ts", path.join(ws, "link-file"));
  symlinkSync("src/nested", path.join(ws, "link-dir"));
  symlinkSync(outside, path.join(ws, "link-outside"));
  symlinkSync("dangling/target", path.join(ws, "dangling"));
  symlinkSync(Buffer.from([0x66, 0xff, 0x09]), path.join(ws, "link-bytes"));
  execFileSync("mkfifo", [path.join(ws, "fifo")]);
  // A hard link of the owner's own: kept, both names.
  writeFileSync(path.join(ws, "linked"), "twice\n");
  linkSync(path.join(ws, "linked"), path.join(ws, "src", "linked-again"));
}

function expectSameCapture(found: CapturedTree, walked: CapturedTree): void {
  expect([...found.entries.keys()]).toEqual([...walked.entries.keys()]);
  expect([...found.entries.values()]).toEqual([...walked.entries.values()]);
  expect([...found.stamps.entries()]).toEqual([...walked.stamps.entries()]);
  expect(found.fresh).toEqual(walked.fresh);
  expect(found.skipped).toEqual(walked.skipped);
  expect(found.hashed).toBe(walked.hashed);
  expect(found.truncated).toBe(walked.truncated);
}

describe("capturing a tree from a find listing", () => {
  it("W1: the listing gives the descriptor walk's tree, stamps, fresh files and skipped entries, in tree order", async () => {
    const ws = path.join(base, "ws");
    const outside = path.join(base, "outside");
    mkdirSync(outside);
    writeFileSync(path.join(outside, "not-mine"), "outside\n");
    buildWorkspace(ws, outside);
    if (asRoot) {
      // A hard link another user owns: its other name may be outside, so it is skipped.
      writeFileSync(path.join(outside, "theirs"), "theirs\n");
      chownSync(path.join(outside, "theirs"), 4242, 4242);
      linkSync(path.join(outside, "theirs"), path.join(ws, "their-link"));
    }
    await sleep(Number(racyWindowNs / 1_000_000n) + 20);
    const cold = await captureTree(ws, { lister: "descriptors" });
    const coldFound = await captureTree(ws, { lister: "find" });
    expectSameCapture(coldFound, cold);
    expect(cold.entries.size).toBeGreaterThan(25);
    expect(cold.skipped).toContainEqual({ path: "fifo", reason: "special", type: "fifo" });
    if (asRoot) expect(cold.skipped).toContainEqual({ path: "their-link", reason: "hard_link" });
    expect([...cold.entries.keys()].filter((key) => key.startsWith("a"))).toEqual(["a", "a/b", "a-c", "a.d"]);
    expect([...cold.entries.keys()].some((key) => key.includes("not-mine"))).toBe(false);

    // With a previous capture: only what moved is read, and the rest shares its stamps.
    writeFileSync(path.join(ws, "src", "a.ts"), "export const a = 2;\n");
    chmodSync(path.join(ws, "tool"), 0o700);
    rmSync(path.join(ws, "zero"));
    writeFileSync(bytesPath(ws, [0xe9, 0x74, 0xe9], "new"), "new\n");
    await sleep(Number(racyWindowNs / 1_000_000n) + 20);
    const walked = await captureTree(ws, { previous: cold, lister: "descriptors" });
    const found = await captureTree(ws, { previous: cold, lister: "find" });
    expectSameCapture(found, walked);
    // The chmod moved the tool's ctime: read again, same digest, not fresh.
    expect(found.hashed).toBe(3);
    expect(found.fresh.map((entry) => entry.path)).toEqual(["src/a.ts", "%bytes:%E9t%E9/new"]);
  });

  it("W1: a file changed within the racy window keeps no stamp, and is read again next time", async () => {
    const ws = path.join(base, "ws");
    mkdirSync(ws);
    writeFileSync(path.join(ws, "settled"), "one\n");
    await sleep(Number(racyWindowNs / 1_000_000n) + 20);
    const first = await captureTree(ws, { lister: "descriptors" });
    writeFileSync(path.join(ws, "racy"), "just written\n");
    const found = await captureTree(ws, { previous: first, lister: "find" });
    expect(found.stamps.get("settled")).toBe(first.stamps.get("settled"));
    const again = await captureTree(ws, { previous: found, lister: "find" });
    // Read again unless its first read came late enough to keep its stamp (a slow machine).
    expect(again.hashed).toBe(found.stamps.has("racy") ? 0 : 1);
    expect([...again.entries.values()]).toEqual([...(await captureTree(ws, { lister: "descriptors" })).entries.values()]);
  });

  it("W1, S6: find lists the root's entries without following a symlink, and with exact nanosecond times", async () => {
    const ws = path.join(base, "ws");
    const outside = path.join(base, "outside");
    mkdirSync(path.join(outside, "deep"), { recursive: true });
    writeFileSync(path.join(outside, "deep", "secret"), "outside\n");
    mkdirSync(ws);
    symlinkSync(outside, path.join(ws, "escape"));
    writeFileSync(path.join(ws, "file"), "x\n");
    await sleep(Number(racyWindowNs / 1_000_000n) + 20);
    const listing = await listTree(ws, { maxRecords: 100 });
    expect(listing?.top.map((entry) => entry.key)).toEqual(["escape", "file"]);
    expect(listing?.top[0]?.type).toBe("l");
    expect(listing?.top[0]?.target.toString()).toBe(outside);
    const walked = await captureTree(ws, { lister: "descriptors" });
    const file = listing?.top[1];
    const stamp = walked.stamps.get("file");
    if (!file || !stamp) throw new Error("no file listed");
    expect(BigInt(file.mtimeSec) * 1_000_000_000n + BigInt(file.mtimeNsec)).toBe(stamp.mtimeNs);
    expect(BigInt(file.ctimeSec) * 1_000_000_000n + BigInt(file.ctimeNsec)).toBe(stamp.ctimeNs);
    expect(BigInt(file.ino)).toBe(stamp.ino);
    // More entries than allowed: no listing (the descriptor walk decides what is truncated).
    expect(await listTree(ws, { maxRecords: 1 })).toBeNull();
  });
});
