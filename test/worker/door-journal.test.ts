import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, linkSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createCallLayers, type CallLayers } from "../../src/sandbox/overlay/call-layers.js";
import { readJournal, writeRecords, type JournaledRecord } from "../../src/sandbox/overlay/layer-journal.js";
import { doorJournal } from "../../src/worker/tool-batch/door-journal.js";
import { settleLayer } from "../../src/tools/shell/settle-layer.js";
import { projectWorkspaceFiles } from "../../src/workspace/project-workspace.js";
import type { UpdateJournal, WorkspaceFiles } from "../../src/workspace/workspace-files.js";
import { newId, type CallId, type RunId, type SessionId, type TenantId } from "../../src/ids.js";

/**
 * A door write's journal (SPEC F1, D3): the record of a `write` or `edit` is made and kept in
 * the call's folder before its version is placed, so a worker killed between the place and the
 * stored result leaves the record to the roll-forward; a version that was never placed leaves
 * no record. Whether it was placed is read from the staged file the folder holds.
 */
let root: string;
let workspace: string;
let layers: CallLayers;
let door: WorkspaceFiles;
const owner = {
  tenantId: "ten_a" as TenantId,
  sessionId: "ses_a" as SessionId,
  runId: "run_a" as RunId,
  toolCallId: "cal_a" as CallId,
};
const blobs = {
  put: async (content: Buffer) => createHash("sha256").update(content).digest("hex"),
};
const journal = () => doorJournal({ layers, workspaceDir: workspace, owner, blobs, onError: (message) => expect.fail(message) });
const maxBytes = 1024 * 1024;

/** What a roll-forward of each of the workspace's folders would store, oldest first. */
async function rolledForward(): Promise<JournaledRecord[][]> {
  const found = layers.ofWorkspace(workspace);
  const settled: JournaledRecord[][] = [];
  for (const { dir, meta } of found) {
    if (!meta) throw new Error(`${dir} has no meta.json`);
    const folders = { upperDir: path.join(dir, "upper"), workDir: path.join(dir, "work") };
    settled.push(
      (await settleLayer({ dir, folders, meta, startedAtMs: Date.parse(meta.createdAt) }, { blobs, workspacesDir: root })).records,
    );
  }
  return settled;
}

beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "foya-door-journal-")));
  workspace = path.join(root, "ws");
  await mkdir(workspace);
  await writeFile(path.join(workspace, "kept.txt"), "before\n");
  const support = createCallLayers({ workspacesDir: root, searchPath: process.env.PATH ?? "" });
  if (!support.ok) throw new Error(`call layers are needed here: ${support.reason}`);
  layers = support.layers;
  door = projectWorkspaceFiles(root, workspace);
});
afterEach(() => void execFileSync("rm", ["-rf", root]));

describe("a door write's journal", () => {
  it("F1, D3: a replaced and a created file each have their record, with its id, written in the call's folder before the version is placed; a roll-forward (the worker killed before the result was stored) stores exactly those records", async () => {
    const replaced = await door.update("kept.txt", () => ({ write: Buffer.from("after\n") }), { maxBytes, journal: journal() });
    const created = await door.update("sub/new.txt", () => ({ write: Buffer.from("new\n") }), { maxBytes, journal: journal() });
    if (replaced.kind !== "written" || created.kind !== "written") throw new Error("both are writes");
    expect(replaced.placedWith).toMatchObject({ path: "kept.txt", existedBefore: true, sha256After: sha("after\n") });
    expect(created.placedWith).toMatchObject({ path: "sub/new.txt", existedBefore: false, sha256Before: null, sha256After: sha("new\n") });
    expect(replaced.placedWith?.id).toMatch(/^fch_/);
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("after\n");
    expect(await readFile(path.join(workspace, "sub/new.txt"), "utf8")).toBe("new\n");

    const folders = layers.ofWorkspace(workspace);
    expect(folders.map((folder) => folder.state)).toEqual(["running", "running"]);
    const written = await Promise.all(folders.map((folder) => readJournal(folder.dir)));
    expect(written.map((entry) => entry.kind)).toEqual(["recorded", "recorded"]);
    // The staged versions were placed: the folders hold nothing but their records.
    for (const folder of folders) expect((await readdir(folder.dir)).sort()).toEqual(["meta.json", "records.json"]);
    expect(await rolledForward()).toEqual([[replaced.placedWith], [created.placedWith]]);
    // The roll-forward changed nothing in the workspace.
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("after\n");

    // The call's result is stored: its folders go (off the call's path).
    layers.recorded(owner.toolCallId);
    await vi.waitFor(() => expect(layers.ofWorkspace(workspace)).toEqual([]));
  });

  it("D3: a version journaled and never placed (the worker killed between its record and its rename or link) leaves no record, and the workspace as it was", async () => {
    const killedBeforePlace = (inner: UpdateJournal<JournaledRecord>): UpdateJournal<JournaledRecord> => ({
      folder: () => inner.folder(),
      async beforePlace(version) {
        await inner.beforePlace(version);
        throw new Error("killed");
      },
    });
    await expect(
      door.update("kept.txt", () => ({ write: Buffer.from("after\n") }), { maxBytes, journal: killedBeforePlace(journal()) }),
    ).rejects.toThrow("killed");
    await expect(
      door.update("new.txt", () => ({ write: Buffer.from("new\n") }), { maxBytes, journal: killedBeforePlace(journal()) }),
    ).rejects.toThrow("killed");
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("before\n");
    expect(existsSync(path.join(workspace, "new.txt"))).toBe(false);
    // Each folder holds its record and the version it was about to place.
    for (const folder of layers.ofWorkspace(workspace)) {
      const entry = await readJournal(folder.dir);
      expect(entry.kind === "recorded" && entry.records.length).toBe(1);
    }
    expect(await rolledForward()).toEqual([[], []]);
  });

  it("D3: a new file linked in whose staged name was not removed yet (killed between the link and the unlink) counts as placed", async () => {
    const dir = layers.openJournal(workspace, owner);
    if (dir === null) throw new Error("the journal's folder is on the workspace's file system");
    const record: JournaledRecord = {
      id: newId("fch"),
      path: "linked.txt",
      existedBefore: false,
      modeBefore: null,
      modeAfter: 0o644,
      sha256Before: null,
      sha256After: sha("linked\n"),
      diff: "",
    };
    await writeFile(path.join(dir, "write-1"), "linked\n");
    await writeRecords(dir, [{ ...record, staged: "write-1" }]);
    expect(await rolledForward()).toEqual([[]]);
    linkSync(path.join(dir, "write-1"), path.join(workspace, "linked.txt"));
    expect(await rolledForward()).toEqual([[record]]);
  });

  it("D3: a file put at the name between the door's look and its link is not overwritten: the first version is not placed and leaves no record, the write looks again and its record is of what it replaced", async () => {
    const inner = journal();
    let told = 0;
    const racing: UpdateJournal<JournaledRecord> = {
      folder: () => inner.folder(),
      async beforePlace(version) {
        const record = await inner.beforePlace(version);
        // Someone else creates the file just before the first version is linked in.
        if (told++ === 0) await writeFile(path.join(workspace, "raced.txt"), "theirs\n");
        return record;
      },
    };
    const outcome = await door.update("raced.txt", () => ({ write: Buffer.from("mine\n") }), { maxBytes, journal: racing });
    if (outcome.kind !== "written") throw new Error("a write");
    expect(told).toBe(2);
    expect(await readFile(path.join(workspace, "raced.txt"), "utf8")).toBe("mine\n");
    expect(outcome.placedWith).toMatchObject({ existedBefore: true, sha256Before: sha("theirs\n"), sha256After: sha("mine\n") });
    expect(await rolledForward()).toEqual([[], [outcome.placedWith]]);
  });
});

function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
