import { execa } from "execa";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeStaleWrites } from "../../src/workspace/project-workspace.js";

/**
 * A file the door replaces is never left half-written (SPEC D3, F1): a process rewriting a file
 * through the door is SIGKILLed at a random moment, again and again, and the file always holds
 * one whole version. The door used to write in place (truncate, then the new bytes), and a kill
 * between the two left a truncated file over the last confirmed content.
 */
const size = 8 * 1024 * 1024;
/** Smaller: a creating process makes a new file every few milliseconds until it is killed. */
const createdSize = 2 * 1024 * 1024;
const writer = path.join(import.meta.dirname, "fixtures", "door-writer.ts");
let root: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "foya-door-crash-")));
  await mkdir(path.join(root, "ws"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Starts the writer on `workspace`, lets it write for a random moment past its first write, and SIGKILLs it. */
async function writeThenKill(workspace: string, bytes: number, how: "rewrite" | "create"): Promise<void> {
  const staging = path.join(root, ".trash-staging");
  const child = execa(process.execPath, ["--import", "tsx", writer, workspace, staging, path.join(root, ".trash"), String(bytes), how], {
    reject: false,
    buffer: false,
  });
  await new Promise<void>((resolve) => child.stdout?.on("data", () => resolve()));
  // Somewhere in a later write: each takes a few milliseconds.
  await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 200));
  child.kill("SIGKILL");
  await child;
}

describe("a door write killed halfway", () => {
  it("D3: a process rewriting a file through the door, SIGKILLed at random moments, always leaves one whole version of it", async () => {
    const workspace = path.join(root, "ws");
    for (let kill = 0; kill < 6; kill++) {
      await writeThenKill(workspace, size, "rewrite");
      const content = await readFile(path.join(workspace, "file.bin"));
      expect(content.length).toBe(size);
      const first = content[0];
      expect(first === 0x61 || first === 0x62).toBe(true);
      expect(content.every((byte) => byte === first)).toBe(true);
    }
    // What a killed write left is outside the workspace, in the private staging folder.
    expect(await readdir(workspace)).toEqual(["file.bin"]);
  }, 60_000);

  it("D3: a process creating new files through the door, SIGKILLed at random moments, leaves each file whole or absent", async () => {
    const workspace = path.join(root, "created");
    await mkdir(workspace);
    for (let kill = 0; kill < 3; kill++) {
      await writeThenKill(workspace, createdSize, "create");
      for (const name of await readdir(workspace)) {
        const content = await readFile(path.join(workspace, name));
        expect(content.length, name).toBe(createdSize);
        expect(content.every((byte) => byte === 0x63)).toBe(true);
      }
      // The next process starts again from new-0: those files exist, and it looks again, then replaces them.
      await rm(workspace, { recursive: true });
      await mkdir(workspace);
    }
  }, 60_000);
});

describe("what a killed door write left in the staging folder", () => {
  it("D3: is removed at a worker's start once an hour old; a write in progress and the trash's own entries are kept", async () => {
    const workspaces = await realpath(await mkdtemp(path.join(tmpdir(), "foya-staging-")));
    const staging = path.join(workspaces, ".trash-staging");
    await mkdir(staging);
    const hoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const name of ["write-old", "write-fresh", "parked-entry"]) await writeFile(path.join(staging, name), name);
    await utimes(path.join(staging, "write-old"), hoursAgo, hoursAgo);
    await utimes(path.join(staging, "parked-entry"), hoursAgo, hoursAgo);
    expect(await removeStaleWrites(workspaces)).toBe(1);
    expect((await readdir(staging)).sort()).toEqual(["parked-entry", "write-fresh"]);
    await rm(workspaces, { recursive: true, force: true });
  });
});
