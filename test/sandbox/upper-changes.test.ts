import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setAttributeSync } from "@napi-rs/xattr";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyLayer } from "../../src/sandbox/overlay/apply-upper.js";
import { openStrictFolders } from "../../src/sandbox/overlay/strict-folders.js";
import { planLayer } from "../../src/sandbox/overlay/upper-changes.js";

/**
 * The reading and applying of a layer's upper folder (SPEC X7), on folders laid out the way
 * overlayfs leaves them (whiteouts are character devices 0,0; an opaque folder carries
 * trusted.overlay.opaque=y), so each rule is exercised without a command. Needs root (mknod,
 * trusted xattrs), as the worker that layers calls does.
 */
let root: string;
let workspace: string;
let upper: string;
let trash: string;
const limits = { maxFiles: 100, maxBytes: 1024 * 1024, maxFileBytes: 64 * 1024 };

async function put(base: string, files: Record<string, string>): Promise<void> {
  for (const [at, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(base, at)), { recursive: true });
    await writeFile(path.join(base, at), content);
  }
}
const whiteout = (at: string) => execFileSync("mknod", [path.join(upper, at), "c", "0", "0"]);
async function trashed(): Promise<string[]> {
  const info = path.join(trash, "Trash", "info");
  const names = await readdir(info).catch(() => [] as string[]);
  const paths = await Promise.all(
    names.map(async (name) => decodeURI(/^Path=(.*)$/m.exec(await readFile(path.join(info, name), "utf8"))![1]!)),
  );
  return paths.map((p) => path.relative(workspace, p)).sort();
}
async function settle(overrides: Partial<typeof limits> = {}) {
  const folders = openStrictFolders(workspace);
  try {
    const plan = await planLayer({ upperDir: upper, folders, startedAtMs: Date.now() + 60_000, limits: { ...limits, ...overrides } });
    const outcome = applyLayer(plan, folders, { root: trash, workspaceDir: workspace });
    return {
      plan,
      outcome,
      records: Object.fromEntries(
        plan.files.map((f) => [
          f.path,
          {
            before: f.before.kind === "file" ? f.before.content.toString() : null,
            after: f.after.kind === "file" ? f.after.content.toString() : null,
          },
        ]),
      ),
    };
  } finally {
    folders.close();
  }
}

beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "foya-upper-")));
  workspace = path.join(root, "ws");
  upper = path.join(root, "upper");
  trash = path.join(root, "trash");
  await mkdir(workspace);
  await mkdir(upper);
});
afterEach(async () => rm(root, { recursive: true, force: true }));

describe("a layer's upper folder", () => {
  it("X7: whiteouts remove a file and a whole folder (each file recorded, the folder in the trash); changed and new files are recorded and placed", async () => {
    await put(workspace, { "a.txt": "a1", "gone.txt": "bye", "dir/x": "x", "dir/sub/y": "y", "keep/k": "k" });
    await put(upper, { "a.txt": "a2", "keep/new": "n", "fresh/deep/f": "f" });
    whiteout("gone.txt");
    whiteout("dir");
    const { records, outcome } = await settle();
    expect(records).toEqual({
      "a.txt": { before: "a1", after: "a2" },
      "gone.txt": { before: "bye", after: null },
      "dir/x": { before: "x", after: null },
      "dir/sub/y": { before: "y", after: null },
      "keep/new": { before: null, after: "n" },
      "fresh/deep/f": { before: null, after: "f" },
    });
    expect(outcome.unplaced).toEqual([]);
    expect((await readdir(workspace)).sort()).toEqual(["a.txt", "fresh", "keep"]);
    expect(await readFile(path.join(workspace, "fresh/deep/f"), "utf8")).toBe("f");
    expect(await trashed()).toEqual(["dir", "gone.txt"]);
  });

  it("X7: an opaque folder replaces the workspace's whole: files only there are deleted, a file of the same name is modified", async () => {
    await put(workspace, { "d/old": "old", "d/same": "s1" });
    await put(upper, { "d/same": "s2", "d/new": "n" });
    setAttributeSync(path.join(upper, "d"), "trusted.overlay.opaque", "y");
    const { records } = await settle();
    expect(records).toEqual({
      "d/old": { before: "old", after: null },
      "d/same": { before: "s1", after: "s2" },
      "d/new": { before: null, after: "n" },
    });
    expect((await readdir(path.join(workspace, "d"))).sort()).toEqual(["new", "same"]);
  });

  it("X7: a replaced file past the recording limits goes to the trash before the new version is placed, so nothing is lost", async () => {
    await put(workspace, { "one.txt": "first 1", "two.txt": "first 2" });
    await put(upper, { "one.txt": "second 1", "two.txt": "second 2" });
    const { plan, records } = await settle({ maxFiles: 1 });
    expect(Object.keys(records)).toHaveLength(1);
    expect(plan.summarized.overLimit).toBe(1);
    const unrecorded = records["one.txt"] ? "two.txt" : "one.txt";
    expect(await trashed()).toEqual([unrecorded]);
    const [entry] = await readdir(path.join(trash, "Trash", "files"));
    expect(await readFile(path.join(trash, "Trash", "files", entry!), "utf8")).toBe(`first ${unrecorded === "one.txt" ? 1 : 2}`);
    expect(await readFile(path.join(workspace, unrecorded), "utf8")).toBe(`second ${unrecorded === "one.txt" ? 1 : 2}`);
  });

  it("S6, X7: a workspace folder swapped for a symlink is never followed: the upper folder replaces the link, which goes to the trash", async () => {
    const outside = path.join(root, "outside");
    await mkdir(outside);
    await put(workspace, { "sub/old": "o" });
    await put(upper, { "sub/planted": "p" });
    await rm(path.join(workspace, "sub"), { recursive: true });
    const { symlink } = await import("node:fs/promises");
    await symlink(outside, path.join(workspace, "sub"));
    await settle();
    expect(await readdir(outside)).toEqual([]);
    expect(await readFile(path.join(workspace, "sub/planted"), "utf8")).toBe("p");
    expect(await trashed()).toEqual(["sub"]);
  });
});
