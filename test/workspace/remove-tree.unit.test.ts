import { closeSync, mkdirSync, openSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { removeTreeGradually } from "../../src/workspace/remove-tree.js";

/** A deleted project's files removed for good, in slices, never following a link out of the tree (SPEC F4, S6). */
let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "foya-remove-tree-"));
});
afterEach(async () => rm(base, { recursive: true, force: true }));

const exists = (where: string) =>
  stat(where).then(
    () => true,
    () => false,
  );
const openDescriptors = () => readdirSync("/proc/self/fd").length;

describe("removing a tree in slices", () => {
  it("F4: every entry goes, a link pointing out is removed as a link, and the work is cut into slices that report progress", async () => {
    const tree = path.join(base, "tree");
    mkdirSync(path.join(tree, "a", "b", "c"), { recursive: true });
    for (let i = 0; i < 50; i++) writeFileSync(path.join(tree, "a", `f${i}`), "x");
    writeFileSync(path.join(tree, "a", "b", "c", "deep.txt"), "deep");
    writeFileSync(path.join(base, "outside.txt"), "outside");
    symlinkSync(base, path.join(tree, "a", "up"));
    symlinkSync(path.join(base, "outside.txt"), path.join(tree, "file-link"));
    const progress: number[] = [];
    const removed = await removeTreeGradually(tree, {
      sliceMs: 0,
      betweenSlices: async (removedSoFar) => {
        progress.push(removedSoFar);
      },
    });
    // 50 files, deep.txt, two links, a, b, c and the tree itself.
    expect(removed).toBe(50 + 1 + 2 + 3 + 1);
    expect(await exists(tree)).toBe(false);
    expect(await readFile(path.join(base, "outside.txt"), "utf8")).toBe("outside");
    expect(progress.length).toBeGreaterThan(50);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBeLessThanOrEqual(removed);
  });

  it("F4: a tree of any depth is removed holding a few folders open", async () => {
    const tree = path.join(base, "deep");
    mkdirSync(tree);
    // 3,000 levels: deeper than PATH_MAX allows by path, so made from a descriptor of the folder above.
    let fd = openSync(tree, "r");
    for (let i = 0; i < 3000; i++) {
      mkdirSync(`/proc/self/fd/${fd}/n`);
      const next = openSync(`/proc/self/fd/${fd}/n`, "r");
      closeSync(fd);
      fd = next;
    }
    closeSync(fd);
    const baseline = openDescriptors();
    let most = 0;
    const removed = await removeTreeGradually(tree, {
      sliceMs: 0,
      betweenSlices: async () => {
        most = Math.max(most, openDescriptors() - baseline);
      },
    });
    expect(removed).toBe(3001);
    expect(await exists(tree)).toBe(false);
    // The tree's parent and root, the root's listing, the folder being emptied and its listing: not one per level.
    expect(most).toBeLessThanOrEqual(5);
  });

  it("F4: a removal stopped between slices leaves the rest, and the next removal finishes it", async () => {
    const tree = path.join(base, "tree");
    for (let d = 0; d < 10; d++) {
      mkdirSync(path.join(tree, `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(path.join(tree, `d${d}`, `f${f}`), "x");
    }
    const stop = new AbortController();
    const first = removeTreeGradually(tree, {
      sliceMs: 0,
      signal: stop.signal,
      betweenSlices: async (removedSoFar) => {
        if (removedSoFar >= 300) stop.abort();
      },
    });
    await expect(first).rejects.toThrow(/abort/i);
    expect(await exists(tree)).toBe(true);
    const rest = await removeTreeGradually(tree, { sliceMs: 5 });
    expect(rest).toBeGreaterThan(0);
    expect(rest).toBeLessThan(1000);
    expect(await exists(tree)).toBe(false);
  });

  it("F4: a missing tree is no error", async () => {
    expect(await removeTreeGradually(path.join(base, "never"), { sliceMs: 5 })).toBe(0);
    expect(await removeTreeGradually(path.join(base, "no", "parent"), { sliceMs: 5 })).toBe(0);
  });
});
