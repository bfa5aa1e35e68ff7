import { execFileSync } from "node:child_process";
import { execa } from "execa";
import { closeSync, constants, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setAttributeSync } from "@napi-rs/xattr";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyLayer } from "../../src/sandbox/overlay/apply-upper.js";
import { planLayer } from "../../src/sandbox/overlay/upper-changes.js";
import { timeSlices, type TimeSlices } from "../../src/core/time-slices.js";
import { childPath, rootPath } from "../../src/workspace/entry-path.js";
import { openFolderHandles } from "../../src/workspace/folder-handles.js";
import { trashPlacer } from "../../src/workspace/project-trash.js";

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
/** Time slices that also measure the longest stretch of CPU time between two pauses. */
function cpuMeasuredSlices(): TimeSlices & { longestMs(): number; pauses(): number } {
  const inner = timeSlices();
  let start = process.cpuUsage();
  let longest = 0;
  let pauses = 0;
  const used = () => {
    const { user, system } = process.cpuUsage(start);
    return (user + system) / 1000;
  };
  return {
    spent: inner.spent,
    async pause() {
      longest = Math.max(longest, used());
      pauses++;
      await inner.pause();
      start = process.cpuUsage();
    },
    longestMs: () => Math.max(longest, used()),
    pauses: () => pauses,
  };
}

/**
 * Waits until the file system's clock has moved on: what is made after this is strictly newer than
 * everything made before (timestamps move in ticks of a few ms). Layers are told apart from later
 * workspace changes by these times, and a test makes both within a millisecond.
 */
async function nextTick(): Promise<void> {
  const probe = path.join(root, "tick");
  let writes = 0;
  await writeFile(probe, String(writes));
  const first = (await stat(probe)).ctimeMs;
  while ((await stat(probe)).ctimeMs <= first) await writeFile(probe, String(++writes));
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
async function settle(overrides: Partial<typeof limits> = {}, slices: TimeSlices = timeSlices()) {
  const sides = { upper: openFolderHandles(upper), workspace: openFolderHandles(workspace) };
  try {
    const plan = await planLayer({ ...sides, startedAtMs: Date.now(), limits: { ...limits, ...overrides }, slices });
    const outcome = await applyLayer(
      plan,
      sides,
      { placer: trashPlacer(trash), workspaceDir: workspace, bundleAt: childPath(rootPath, Buffer.from(".replaced-by-call")) },
      slices,
    );
    return {
      plan,
      outcome,
      records: Object.fromEntries(
        plan.files.map((f) => [
          f.path,
          {
            before: f.before.kind === "file" ? f.before.content.toString() : null,
            after: f.after.kind === "file" ? f.after.content.toString() : null,
            ...(f.notApplied ? { notApplied: true } : {}),
          },
        ]),
      ),
    };
  } finally {
    sides.upper.close();
    sides.workspace.close();
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
// rm -rf walks by descriptor: the trees of these tests can be deeper than a path can name.
afterEach(() => void execFileSync("rm", ["-rf", root]));

/** Makes folders `chain` below `base` one at a time by descriptor (their path is too long to name at once), then `files` at the bottom. */
function makeDeep(base: string, chain: readonly string[], files: Record<string, string>): void {
  let fd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const name of chain) {
      mkdirSync(`/proc/self/fd/${fd}/${name}`, { recursive: true });
      const next = openSync(`/proc/self/fd/${fd}/${name}`, constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
    for (const [at, content] of Object.entries(files)) {
      mkdirSync(path.dirname(`/proc/self/fd/${fd}/${at}`), { recursive: true });
      writeFileSync(`/proc/self/fd/${fd}/${at}`, content);
    }
  } finally {
    closeSync(fd);
  }
}

function readDeep(base: string, names: readonly string[]): string {
  let fd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const name of names.slice(0, -1)) {
      const next = openSync(`/proc/self/fd/${fd}/${name}`, constants.O_RDONLY | constants.O_DIRECTORY);
      closeSync(fd);
      fd = next;
    }
    return readFileSync(`/proc/self/fd/${fd}/${names[names.length - 1]}`, "utf8");
  } finally {
    closeSync(fd);
  }
}

describe("a layer's upper folder", () => {
  it("X7: whiteouts remove a file and a whole folder (each file recorded, the folder in the trash); changed and new files are recorded and placed", async () => {
    await put(workspace, { "a.txt": "a1", "gone.txt": "bye", "dir/x": "x", "dir/sub/y": "y", "keep/k": "k" });
    await nextTick();
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
    await nextTick();
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
    await nextTick();
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

  it("X7: past a hundred replaced files kept by no record, their old versions go to the trash as one folder, at their paths", async () => {
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`src/m${i % 3}/f${i}.txt`, `old ${i}`]));
    await put(workspace, files);
    await nextTick();
    await put(upper, Object.fromEntries(Object.keys(files).map((at) => [at, "new"])));
    const { plan } = await settle({ maxFiles: 10 });
    expect(plan.summarized.overLimit).toBe(140);
    expect(await trashed()).toEqual([".replaced-by-call"]);
    const [entry] = await readdir(path.join(trash, "Trash", "files"));
    const kept = path.join(trash, "Trash", "files", entry!);
    const keptFiles = (await readdir(kept, { recursive: true })).filter((name) => name.endsWith(".txt"));
    expect(keptFiles).toHaveLength(140);
    for (const name of keptFiles) expect(await readFile(path.join(kept, name), "utf8")).toBe(files[name]);
    for (const at of Object.keys(files)) expect(await readFile(path.join(workspace, at), "utf8")).toBe("new");
  });

  it("S6, X7: a workspace folder swapped for a symlink before the call made its folder is never followed: the upper folder replaces the link, which goes to the trash", async () => {
    const outside = path.join(root, "outside");
    await mkdir(outside);
    await symlink(outside, path.join(workspace, "sub"));
    await nextTick();
    await put(upper, { "sub/planted": "p" });
    await settle();
    expect(await readdir(outside)).toEqual([]);
    expect(await readFile(path.join(workspace, "sub/planted"), "utf8")).toBe("p");
    expect(await trashed()).toEqual(["sub"]);
  });

  it("S6, X7: a workspace folder swapped for a symlink after the call made its folder is never followed: the newer link stays, the call's folder goes to the trash", async () => {
    const outside = path.join(root, "outside");
    await mkdir(outside);
    await put(workspace, { "sub/old": "o" });
    await nextTick();
    await put(upper, { "sub/planted": "p" });
    await nextTick();
    await rm(path.join(workspace, "sub"), { recursive: true });
    await symlink(outside, path.join(workspace, "sub"));
    const { plan } = await settle();
    expect(await readdir(outside)).toEqual([]);
    expect((await lstat(path.join(workspace, "sub"))).isSymbolicLink()).toBe(true);
    expect(plan.notApplied).toEqual(["sub"]);
    expect(await trashed()).toEqual(["sub"]);
    const [entry] = await readdir(path.join(trash, "Trash", "files"));
    expect(await readFile(path.join(trash, "Trash", "files", entry!, "planted"), "utf8")).toBe("p");
  });
});

describe("a layer's apply is atomic per file", () => {
  it("X7: a file the apply replaces is never seen half-written, empty or missing: a reader in another process sees its old content or its new one", async () => {
    const size = 4 * 1024 * 1024;
    await put(workspace, { "big.txt": "o".repeat(size) });
    for (let i = 0; i < 300; i++) await put(workspace, { [`other/f${i}`]: "before" });
    await nextTick();
    await put(upper, { "big.txt": "n".repeat(size) });
    for (let i = 0; i < 300; i++) await put(upper, { [`other/f${i}`]: "after" });
    const stop = path.join(root, "stop-reading");
    const reader = execa(
      "python3",
      [
        "-c",
        `import os, sys
seen = set()
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    try:
        data = open(sys.argv[1], "rb").read()
        seen.add((len(data), data[:1].decode(), data[-1:].decode()))
    except FileNotFoundError:
        seen.add(("missing",))
print(sorted(seen, key=str), flush=True)`,
        path.join(workspace, "big.txt"),
        stop,
      ],
      { reject: false },
    );
    await new Promise<void>((resolve) => reader.stdout?.once("data", () => resolve()));
    await settle();
    // Let the reader see the new content a few times before it stops.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await writeFile(stop, "");
    const { stdout, stderr } = await reader;
    expect(stderr).toBe("");
    const seen = stdout.split("\n").find((line) => line.startsWith("["));
    expect(seen).toBe(`[(${size}, 'n', 'n'), (${size}, 'o', 'o')]`);
  });
});

describe("a layer settled after the workspace changed (never over a newer change)", () => {
  it("X7, D3: a file changed in the workspace after the call made its version keeps the newer content; the call's version is recorded as not applied", async () => {
    await put(workspace, { "a.txt": "v1", "b.txt": "b1" });
    await nextTick();
    await put(upper, { "a.txt": "v1 + call", "b.txt": "b1 + call" });
    await nextTick();
    await writeFile(path.join(workspace, "a.txt"), "v1 + later");
    const { plan, records } = await settle();
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("v1 + later");
    expect(await readFile(path.join(workspace, "b.txt"), "utf8")).toBe("b1 + call");
    expect(records).toEqual({
      "a.txt": { before: "v1 + later", after: "v1 + call", notApplied: true },
      "b.txt": { before: "b1", after: "b1 + call" },
    });
    expect(plan.notApplied).toEqual(["a.txt"]);
    expect(await trashed()).toEqual([]);
  });

  it("X7: a deletion of a file the workspace changed since is recorded, not made", async () => {
    await put(workspace, { "g.txt": "old" });
    await nextTick();
    whiteout("g.txt");
    await nextTick();
    await writeFile(path.join(workspace, "g.txt"), "rewritten later");
    const { records } = await settle();
    expect(await readFile(path.join(workspace, "g.txt"), "utf8")).toBe("rewritten later");
    expect(records).toEqual({ "g.txt": { before: "rewritten later", after: null, notApplied: true } });
  });

  it("X7: a file the call copied up from the workspace, deleted there since, is not brought back; a file the call renamed to a new name is placed", async () => {
    await put(workspace, { "kept/c.txt": "c", "moved/old.txt": "o" });
    await nextTick();
    await put(upper, { "kept/c.txt": "c + call", "moved/new.txt": "o" });
    setAttributeSync(path.join(upper, "kept/c.txt"), "trusted.overlay.origin", "copied up");
    setAttributeSync(path.join(upper, "moved/new.txt"), "trusted.overlay.origin", "copied up from old.txt");
    whiteout("moved/old.txt");
    await nextTick();
    await rm(path.join(workspace, "kept/c.txt"));
    const { plan, records } = await settle();
    expect(await readdir(path.join(workspace, "kept"))).toEqual([]);
    expect(await readdir(path.join(workspace, "moved"))).toEqual(["new.txt"]);
    expect(plan.notApplied).toEqual(["kept/c.txt"]);
    expect(records).toEqual({
      "kept/c.txt": { before: null, after: "c + call", notApplied: true },
      "moved/old.txt": { before: "o", after: null },
      "moved/new.txt": { before: null, after: "o" },
    });
  });
});

describe("a layer of any shape is applied (names as bytes, any depth, bounded descriptors, linear and sliced)", () => {
  it("X7: names that are not valid UTF-8 are applied and summarized, and what they replace goes to the trash under its exact bytes", async () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]); // "café.txt" in Latin-1
    const other = Buffer.from([0x6e, 0xfe]);
    const at = (base: string, name: Buffer) => Buffer.concat([Buffer.from(`${base}/`), name]);
    writeFileSync(at(workspace, latin1), "old");
    await put(workspace, { "plain.txt": "p1" });
    await nextTick();
    writeFileSync(at(upper, latin1), "new");
    writeFileSync(at(upper, other), "created");
    await put(upper, { "plain.txt": "p2" });
    const { plan, records } = await settle();
    expect(records).toEqual({ "plain.txt": { before: "p1", after: "p2" } });
    expect(plan.summarized.unnamed).toBe(2);
    expect(readFileSync(at(workspace, latin1), "utf8")).toBe("new");
    expect(readFileSync(at(workspace, other), "utf8")).toBe("created");
    const info = await readdir(path.join(trash, "Trash", "info"));
    expect(info).toHaveLength(1);
    expect(await readFile(path.join(trash, "Trash", "info", info[0]!), "utf8")).toContain("caf%E9.txt");
  });

  it("X7: a tree whose paths are twice PATH_MAX long is planned and applied, in the workspace and in the layer", async () => {
    // 150 names of 60 bytes: 9,150 bytes of path, where any walk by path fails at 4,096 (ENAMETOOLONG).
    const name = "n".repeat(59);
    const chain = Array.from({ length: 150 }, () => name);
    makeDeep(workspace, chain, { f: "before\n" });
    await nextTick();
    makeDeep(upper, chain, { f: "after\n", "new/x": "new\n" });
    const { plan, records } = await settle();
    const bottom = chain.join("/");
    expect(records[`${bottom}/f`]).toEqual({ before: "before\n", after: "after\n" });
    expect(records[`${bottom}/new/x`]).toEqual({ before: null, after: "new\n" });
    expect(plan.moves.flat()).toHaveLength(2);
    expect(readDeep(workspace, [...chain, "f"])).toBe("after\n");
    expect(readDeep(workspace, [...chain, "new", "x"])).toBe("new\n");
  });

  it("X7: a layer that changed 2,000 folders is applied holding a bounded number of descriptors, and the event loop is never held for 100 ms", async () => {
    const folders = 2_000;
    for (let index = 0; index < folders; index++) {
      mkdirSync(path.join(workspace, `f${index}`));
      writeFileSync(path.join(workspace, `f${index}`, "x"), "1");
    }
    await nextTick();
    for (let index = 0; index < folders; index++) {
      mkdirSync(path.join(upper, `f${index}`));
      writeFileSync(path.join(upper, `f${index}`, "x"), "2");
    }
    const openDescriptors = () => readdirSync("/proc/self/fd").length;
    const baseline = openDescriptors();
    let most = baseline;
    const sampler = setInterval(() => {
      most = Math.max(most, openDescriptors());
    }, 5);
    const slices = cpuMeasuredSlices();
    try {
      const { plan } = await settle({ maxFiles: 100 }, slices);
      expect(plan.moves.flat()).toHaveLength(folders);
    } finally {
      clearInterval(sampler);
    }
    expect(most - baseline).toBeLessThan(80);
    // The bound: no other request waits more than 100 ms. Measured as CPU time between two pauses,
    // which is what this code holds the event loop for, whatever else the machine is doing.
    expect(slices.longestMs()).toBeLessThan(100);
    expect(slices.pauses()).toBeGreaterThan(1);
    for (const index of [0, 999, 1_999]) expect(await readFile(path.join(workspace, `f${index}`, "x"), "utf8")).toBe("2");
  });
});
