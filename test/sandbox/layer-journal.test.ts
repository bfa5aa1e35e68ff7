import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CallLayerMeta } from "../../src/sandbox/overlay/call-layers.js";
import { readJournal, writeRecords } from "../../src/sandbox/overlay/layer-journal.js";
import { settleLayer } from "../../src/tools/shell/settle-layer.js";
import type { CallId, RunId, SessionId, TenantId } from "../../src/ids.js";

/**
 * A layer's journal (SPEC X7, D3): the records of a command's changes are written into its
 * folder before the workspace changes, and the folder says when the apply is done, so a
 * worker killed between the apply and the stored result leaves the records to its
 * roll-forward: stored once, under the same ids, and never applied twice.
 */
let root: string;
let workspace: string;
let layerDir: string;
const blobs = new Map<string, Buffer>();
const deps = () => ({
  blobs: {
    put: async (content: Buffer) => {
      const key = createHash("sha256").update(content).digest("hex");
      blobs.set(key, content);
      return key;
    },
  },
  workspacesDir: root,
});

function layer() {
  const meta: CallLayerMeta = {
    tenantId: "ten_a" as TenantId,
    sessionId: "ses_a" as SessionId,
    runId: "run_a" as RunId,
    toolCallId: "cal_a" as CallId,
    workspaceDir: workspace,
    host: "here",
    pid: process.pid,
    processStart: "",
    createdAt: new Date().toISOString(),
  };
  return {
    dir: layerDir,
    folders: { upperDir: path.join(layerDir, "upper"), workDir: path.join(layerDir, "work") },
    meta,
    startedAtMs: Date.now(),
  };
}

beforeEach(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "foya-journal-")));
  workspace = path.join(root, "ws");
  layerDir = path.join(root, ".calls", "layer");
  await mkdir(workspace);
  await mkdir(path.join(layerDir, "upper"), { recursive: true });
  await mkdir(path.join(layerDir, "work"));
  await writeFile(path.join(workspace, "kept.txt"), "before\n");
  // File times move in ticks of a few ms: the layer's start must be after the workspace's files were made.
  await new Promise((resolve) => setTimeout(resolve, 20));
});
afterEach(() => void execFileSync("rm", ["-rf", root]));

describe("a layer's journal", () => {
  it("X7, D3: settling a layer writes its records, with their ids, before the apply and marks the apply done; settling it again (a roll-forward after a kill before its result was stored) answers the same records and changes nothing", async () => {
    await writeFile(path.join(layerDir, "upper", "kept.txt"), "before\nafter\n");
    await writeFile(path.join(layerDir, "upper", "new.txt"), "new\n");
    const first = await settleLayer(layer(), deps());
    expect(first.records.map((record) => record.path).sort()).toEqual(["kept.txt", "new.txt"]);
    expect(first.records.every((record) => record.id.startsWith("fch_"))).toBe(true);
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("before\nafter\n");
    const journal = await readJournal(layerDir);
    expect(journal.kind).toBe("applied");
    expect(journal.kind !== "none" && journal.records).toEqual(first.records);

    // A later call changes the file; the roll-forward of the applied layer must not bring the old version back.
    await writeFile(path.join(workspace, "kept.txt"), "later\n");
    const again = await settleLayer(layer(), deps());
    expect(again.records).toEqual(first.records);
    expect(again.outcome.placed).toBe(0);
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("later\n");
  });

  it("X7, D3: an apply cut short after its records were written is finished by the roll-forward, which answers the records written first (their ids), each change applied once", async () => {
    await writeFile(path.join(layerDir, "upper", "a.txt"), "a\n");
    await writeFile(path.join(layerDir, "upper", "b.txt"), "b\n");
    // What a first settle wrote before its worker died: its records, then one of the two renames.
    const written = [
      {
        id: "fch_written_a",
        path: "a.txt",
        existedBefore: false,
        modeBefore: null,
        modeAfter: 0o644,
        sha256Before: null,
        sha256After: "x",
        diff: "+a",
      },
      {
        id: "fch_written_b",
        path: "b.txt",
        existedBefore: false,
        modeBefore: null,
        modeAfter: 0o644,
        sha256Before: null,
        sha256After: "y",
        diff: "+b",
      },
    ] as const;
    await writeRecords(
      layerDir,
      written.map((record) => ({ ...record, id: record.id as `fch_${string}` })),
    );
    expect((await readJournal(layerDir)).kind).toBe("recorded");
    await rename(path.join(layerDir, "upper", "a.txt"), path.join(workspace, "a.txt"));

    const settled = await settleLayer(layer(), deps());
    expect(settled.records.map((record) => record.id)).toEqual(["fch_written_a", "fch_written_b"]);
    expect(settled.records.every((record) => record.notApplied === undefined)).toBe(true);
    expect(await readFile(path.join(workspace, "a.txt"), "utf8")).toBe("a\n");
    expect(await readFile(path.join(workspace, "b.txt"), "utf8")).toBe("b\n");
    expect(existsSync(path.join(layerDir, "upper", "b.txt"))).toBe(false);
    expect((await readJournal(layerDir)).kind).toBe("applied");
  });

  it("X7: a change the workspace made after an apply was cut short is kept, and the written record of that file says not applied", async () => {
    await writeFile(path.join(layerDir, "upper", "kept.txt"), "the call's\n");
    const record = {
      id: "fch_kept" as const,
      path: "kept.txt",
      existedBefore: true,
      modeBefore: 0o644,
      modeAfter: 0o644,
      sha256Before: "x",
      sha256After: "y",
      diff: "",
    };
    await writeRecords(layerDir, [record]);
    // Made after the command's version: newer, and never overwritten.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await writeFile(path.join(workspace, "kept.txt"), "a person's\n");
    const settled = await settleLayer({ ...layer(), startedAtMs: Date.now() - 10_000 }, deps());
    expect(settled.records).toEqual([{ ...record, notApplied: "changed_since" }]);
    expect(await readFile(path.join(workspace, "kept.txt"), "utf8")).toBe("a person's\n");
  });
});
