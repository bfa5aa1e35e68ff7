import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { indexTree, legacyTreeDigest, treeDigest, treeMatchesDigest, updateIndex } from "../../src/checkpoints/tree-digest.js";
import { captureTree } from "../../src/workspace/checkpoint/tree-capture.js";
import { diffTrees } from "../../src/workspace/checkpoint/tree-delta.js";
import { captureChangedPaths } from "../../src/workspace/checkpoint/tree-update.js";

/**
 * A checkpoint from the paths a batch changed (SPEC W1): applying what the changed paths hold now
 * to the previous capture gives the same tree, delta and digest as a walk of the whole folder.
 */
let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "tree-update-"));
  await mkdir(path.join(root, "src/lib"), { recursive: true });
  await mkdir(path.join(root, "old/inner"), { recursive: true });
  await writeFile(path.join(root, "src/lib/a.js"), "a\n");
  await writeFile(path.join(root, "src/b.js"), "b\n");
  await writeFile(path.join(root, "old/inner/c.txt"), "c\n");
  await writeFile(path.join(root, "top.txt"), "top\n");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function expectSameAsWalk(change: () => Promise<void>, changed: string[]): Promise<void> {
  const before = await captureTree(root);
  const index = indexTree(before.entries);
  // A second capture of the same tree, for the update that may change it in place.
  const reusable = await captureTree(root);
  await change();
  const update = await captureChangedPaths(root, before, index.children, changed);
  if (update.kind !== "captured") throw new Error(update.reason);
  const reused = await captureChangedPaths(root, reusable, index.children, changed, { reusePrevious: true });
  if (reused.kind !== "captured") throw new Error(reused.reason);
  const walked = await captureTree(root, { previous: before });
  expect([...reused.captured.entries.values()]).toEqual([...walked.entries.values()]);
  expect(reused.delta).toEqual(update.delta);
  expect(updateIndex(index, reused.before, reused.captured.entries, reused.delta)).toEqual(
    updateIndex(index, before.entries, update.captured.entries, update.delta),
  );
  expect([...update.captured.entries.values()]).toEqual([...walked.entries.values()]);
  const walkedDelta = await diffTrees(before.entries, walked.entries);
  expect(update.delta).toEqual(walkedDelta);
  const updated = updateIndex(index, before.entries, update.captured.entries, update.delta);
  expect(updated.digests.get("")).toBe(treeDigest(walked.entries));
  expect(updated.fileBytes).toBe(indexTree(walked.entries).fileBytes);
  // Fresh by path: content the tree held elsewhere is stored again (a blob put twice is one blob), never missed.
  const fresh = new Set(update.captured.fresh.map((file) => file.path));
  for (const file of walked.fresh) expect(fresh.has(file.path), file.path).toBe(true);
}

describe("checkpoint from changed paths", () => {
  it("W1: files rewritten in place (no new path): the tree updated in place is the walk's", async () => {
    await expectSameAsWalk(async () => {
      await writeFile(path.join(root, "src/lib/a.js"), "a, again\n");
      await writeFile(path.join(root, "top.txt"), "top, again\n");
      await rm(path.join(root, "src/b.js"));
    }, ["src/lib/a.js", "top.txt", "src/b.js"]);
  });

  it("W1: a file rewritten and one created under new folders", async () => {
    await expectSameAsWalk(async () => {
      await writeFile(path.join(root, "src/lib/a.js"), "a, rewritten\n");
      await mkdir(path.join(root, "new/deeper"), { recursive: true });
      await writeFile(path.join(root, "new/deeper/n.txt"), "n\n");
    }, ["src/lib/a.js", "new/deeper/n.txt"]);
  });

  it("W1: a folder removed whole, a folder's mode changed, a folder replaced by a file and a link", async () => {
    await expectSameAsWalk(async () => {
      await rm(path.join(root, "old"), { recursive: true });
      await chmod(path.join(root, "src/lib"), 0o700);
      await rm(path.join(root, "src/lib/a.js"));
      await writeFile(path.join(root, "old"), "now a file\n");
      await symlink("src/b.js", path.join(root, "link"));
    }, ["old", "src/lib", "link"]);
  });

  it("W1: a folder moved in whole is captured with everything under it; a path that no longer exists is removed", async () => {
    await expectSameAsWalk(async () => {
      await mkdir(path.join(root, "moved/a/b"), { recursive: true });
      await writeFile(path.join(root, "moved/a/b/x.txt"), "x\n");
      await writeFile(path.join(root, "moved/y.txt"), "top\n");
      await rm(path.join(root, "top.txt"));
    }, ["moved", "top.txt", "never/existed.txt"]);
  });

  it("W1: a path that is no tree path is doubt: the caller walks the folder", async () => {
    const before = await captureTree(root);
    const update = await captureChangedPaths(root, before, indexTree(before.entries).children, ["../outside"]);
    expect(update.kind).toBe("doubt");
  });

  it("W1: the tree digest is per folder and still checks rows written with the first, linear digest", async () => {
    const tree = await captureTree(root);
    expect(treeMatchesDigest(tree.entries, treeDigest(tree.entries))).toBe(true);
    expect(treeMatchesDigest(tree.entries, legacyTreeDigest(tree.entries))).toBe(true);
    await writeFile(path.join(root, "top.txt"), "changed\n");
    const changed = await captureTree(root, { previous: tree });
    expect(treeMatchesDigest(changed.entries, treeDigest(tree.entries))).toBe(false);
  });
});
