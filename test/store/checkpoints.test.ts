import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CheckpointId, newId, type ProjectId, type SessionId, type TenantId } from "../../src/ids.js";
import {
  CheckpointBaseMovedError,
  CheckpointBlobsMissingError,
  type CheckpointRow,
  type CheckpointStat,
  fullCheckpointEvery,
  type NewCheckpoint,
  type StoredChange,
  type StoredEntry,
} from "../../src/store/checkpoints.js";
import type { StoreTx } from "../../src/store/store.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";

/**
 * `store.checkpoints`: a project's workspace trees (SPEC W1) as a chain of deltas with a full tree
 * every `fullCheckpointEvery`, numbered per project and written under the project's lock; read
 * only by their tenant (D8). Each test keeps the tree it wrote in a Map of its own and compares
 * what the store rebuilds with it.
 */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

/** A project the test writes checkpoints of, with the tree as the test made it and each checkpoint's tree as it stood. */
interface Tracked {
  tenantId: TenantId;
  projectId: ProjectId;
  sessionId: SessionId;
  tree: Map<string, StoredEntry>;
  latest: CheckpointRow | undefined;
  treeAt: Map<CheckpointId, Map<string, StoredEntry>>;
}

const tracked = (ids: { tenantId: TenantId; projectId: ProjectId; sessionId: SessionId }): Tracked => ({
  ...ids,
  tree: new Map(),
  latest: undefined,
  treeAt: new Map(),
});

async function newProject(): Promise<Tracked> {
  return tracked(await db.newSession());
}

/** A second project of the same tenant (its own chain). */
async function siblingProject(of: Tracked): Promise<Tracked> {
  const project = await db.store.projects.insertProject({
    id: newId("prj"),
    tenantId: of.tenantId,
    name: "q",
    workspacePath: "/nonexistent",
  });
  if (!project) throw new Error("project insert returned nothing");
  return tracked({ tenantId: of.tenantId, projectId: project.id, sessionId: of.sessionId });
}

let inode = 1000;
/** A host stat whose nanosecond times are past 2^53: they must come back as the same strings. */
const stat = (): CheckpointStat => ({ dev: "66306", ino: String(inode++), mtimeNs: "1735689600123456789", ctimeNs: "1735689600987654321" });
const sha = (content: string) => createHash("sha256").update(content).digest("hex");

const file = (path: string, content = path, mode = 0o644): StoredChange => ({
  removed: false,
  path,
  kind: "file",
  mode,
  size: Buffer.byteLength(content),
  sha256: sha(content),
  target: null,
  stat: stat(),
});
const directory = (path: string): StoredChange => ({
  removed: false,
  path,
  kind: "directory",
  mode: 0o755,
  size: 0,
  sha256: null,
  target: null,
  stat: null,
});
const symlink = (path: string, target: string): StoredChange => ({
  removed: false,
  path,
  kind: "symlink",
  mode: 0o777,
  size: 0,
  sha256: null,
  target,
  stat: null,
});
const removed = (path: string): StoredChange => ({ removed: true, path });

function applied(tree: ReadonlyMap<string, StoredEntry>, changes: readonly StoredChange[]): Map<string, StoredEntry> {
  const next = new Map(tree);
  for (const change of changes) {
    if (change.removed) {
      next.delete(change.path);
      continue;
    }
    const { path, kind, mode, size, sha256, target, stat } = change;
    next.set(path, { path, kind, mode, size, sha256, target, stat });
  }
  return next;
}

function header(project: Tracked, tree: ReadonlyMap<string, StoredEntry>): NewCheckpoint {
  let fileBytes = 0;
  for (const entry of tree.values()) if (entry.kind === "file") fileBytes += entry.size;
  return {
    tenantId: project.tenantId,
    projectId: project.projectId,
    sessionId: project.sessionId,
    runId: null,
    stepIndex: project.treeAt.size,
    reason: "batch",
    entryCount: tree.size,
    fileBytes,
    treeDigest: sha(JSON.stringify([...tree.values()].sort((a, b) => (a.path < b.path ? -1 : 1)))),
  };
}

/** The worker's call, on a transaction: the changes since `baseId` and the whole tree they make. */
function insert(
  tx: StoreTx,
  project: Tracked,
  tree: ReadonlyMap<string, StoredEntry>,
  baseId: CheckpointId | null,
  changes: readonly StoredChange[],
) {
  return tx.checkpoints.insertCheckpoint(header(project, tree), { baseId, changes, whole: () => [...tree.values()] });
}

/** Applies `changes` to the project's tree and writes its checkpoint in a transaction of its own, against the latest unless told. */
async function take(project: Tracked, changes: readonly StoredChange[], baseId = project.latest?.id ?? null): Promise<CheckpointRow> {
  const tree = applied(project.tree, changes);
  const row = await db.store.transaction((tx) => insert(tx, project, tree, baseId, changes));
  project.tree = tree;
  project.latest = row;
  project.treeAt.set(row.id, tree);
  return row;
}

/** The rows a checkpoint holds, by path: what was written for it alone. */
async function rowsOf(id: CheckpointId) {
  return byPath(
    await db.query<{ path: string; removed: boolean }>("select path, removed from checkpoint_entries where checkpoint_id = $1", [id]),
  );
}

/** Sorted here, not by the database's collation. */
const byPath = (changes: Iterable<{ path: string; removed?: boolean }>) =>
  [...changes].map((change) => ({ path: change.path, removed: change.removed === true })).sort((a, b) => (a.path < b.path ? -1 : 1));

const startTree = [
  directory("src"),
  directory("docs"),
  file("src/a.ts", "export const a = 1;\n"),
  file("src/b.ts", "export const b = 2;\n"),
  file("docs/readme.md", "# readme\n"),
  file("run.sh", "#!/bin/sh\necho hi\n", 0o755),
  symlink("latest", "src/a.ts"),
  // A size past 2^32: the column is a bigint and comes back as the same number.
  { ...file("huge.bin", "stand-in"), size: 6_000_000_000 },
];

/** Twenty checkpoints of one project: adds, changes, mode and kind changes, removals, and a path removed then added back. */
const chainSteps: readonly (readonly StoredChange[])[] = [
  startTree,
  [file("src/a.ts", "export const a = 10;\n")],
  [file("src/c.ts", "export const c = 3;\n")],
  [removed("src/b.ts")],
  [file("run.sh", "#!/bin/sh\necho hi\n", 0o644)],
  [removed("docs/readme.md"), removed("docs")],
  [file("src/b.ts", "export const b = 'back';\n")],
  [symlink("latest", "src/c.ts")],
  [directory("node_modules"), directory("node_modules/x"), file("node_modules/x/index.js", "module.exports = 1;\n")],
  // A symlink become a file: one upsert of its path.
  [file("latest", "now a file\n")],
  ...Array.from({ length: 10 }, (_, index): StoredChange[] => {
    const step = index + 10;
    const changes: StoredChange[] = [file("src/a.ts", `export const a = ${step};\n`), file(`gen/${step}.txt`, `generated ${step}\n`)];
    if (step === 10) changes.push(directory("gen"));
    if (step >= 12) changes.push(removed(`gen/${step - 2}.txt`));
    // Removed at step 5 and added back after the full tree at step 16 (the 17th checkpoint).
    if (step === 17) changes.push(directory("docs"), file("docs/readme.md", "# readme, again\n"));
    if (step === 18) changes.push(removed("src/c.ts"), removed("node_modules/x/index.js"));
    return changes;
  }),
];

async function writeChain(project: Tracked): Promise<CheckpointRow[]> {
  const rows: CheckpointRow[] = [];
  for (const changes of chainSteps) rows.push(await take(project, changes));
  return rows;
}

function treeAt(project: Tracked, id: CheckpointId): Map<string, StoredEntry> {
  const tree = project.treeAt.get(id);
  if (!tree) throw new Error(`no tree tracked for ${id}`);
  return tree;
}

/** Until a transaction of this database waits for an advisory lock (the project's checkpoint lock). */
async function someoneWaitsForTheLock(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await db.query<{ waiting: number }>(
      `select count(*)::int as waiting from pg_locks l join pg_database d on d.oid = l.database
       where l.locktype = 'advisory' and not l.granted and d.datname = current_database()`,
    );
    if ((row?.waiting ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("no transaction waited for the checkpoint lock");
}

describe("store.checkpoints", () => {
  it("W1: seq counts 1, 2, 3… per project, each project on its own; another project's checkpoints never become a project's latest", async () => {
    const first = await newProject();
    const second = await siblingProject(first);
    const seqs = { first: [] as number[], second: [] as number[] };
    for (let index = 0; index < 4; index++) {
      seqs.first.push((await take(first, [file(`f${index}.txt`)])).seq);
      const latestOfFirst = first.latest;
      seqs.second.push((await take(second, [file(`s${index}.txt`)])).seq);
      if (index % 2 === 1) seqs.second.push((await take(second, [file(`s${index}b.txt`)])).seq);
      expect(await db.store.checkpoints.latestCheckpoint(first.tenantId, first.projectId)).toEqual(latestOfFirst);
      expect(await db.store.checkpoints.latestCheckpoint(second.tenantId, second.projectId)).toEqual(second.latest);
    }
    expect(seqs).toEqual({ first: [1, 2, 3, 4], second: [1, 2, 3, 4, 5, 6] });
    // A delta's base is its own project's latest, never the other project's.
    expect(first.latest?.baseId).not.toBeNull();
    expect(await db.store.checkpoints.checkpointTree(first.latest?.id as CheckpointId)).toEqual(first.tree);
    expect(await db.store.checkpoints.checkpointTree(second.latest?.id as CheckpointId)).toEqual(second.tree);
  });

  it("W1: the header is stored as written (session, step, reason, entry count, file bytes past 2^32, tree digest)", async () => {
    const project = await newProject();
    const tree = applied(new Map(), startTree);
    const row = await take(project, startTree);
    expect(row).toMatchObject({ ...header({ ...project, treeAt: new Map() }, tree), seq: 1, baseId: null });
    expect(row.fileBytes).toBeGreaterThan(2 ** 32);
    expect(await db.store.checkpoints.checkpointOfTenant(project.tenantId, row.id)).toEqual(row);
  });

  it(`W1: the first checkpoint is the whole tree; each next one against the latest holds only its changes; every ${fullCheckpointEvery}th is whole again and deltas resume against it`, async () => {
    const project = await newProject();
    const rows = await writeChain(project);
    expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: chainSteps.length }, (_, index) => index + 1));
    for (const [index, row] of rows.entries()) {
      const full = index % fullCheckpointEvery === 0;
      expect({ seq: row.seq, baseId: row.baseId }).toEqual({ seq: index + 1, baseId: full ? null : rows[index - 1]?.id });
      const tree = treeAt(project, row.id);
      expect(row.entryCount).toBe(tree.size);
      // A full tree holds every entry and no removal; a delta exactly its changes, removals included.
      expect(await rowsOf(row.id)).toEqual(byPath(full ? tree.values() : (chainSteps[index] ?? [])));
    }
    expect(rows.filter((row) => row.baseId === null).map((row) => row.seq)).toEqual([1, fullCheckpointEvery + 1]);
    expect(rows.some((row) => row.seq > fullCheckpointEvery + 1 && row.baseId !== null)).toBe(true);
  });

  it("W1: every checkpoint of a chain of twenty reads back as the tree it was taken of, the full ones and the deltas right after them included", async () => {
    const project = await newProject();
    const rows = await writeChain(project);
    for (const row of rows) {
      const tree = await db.store.checkpoints.checkpointTree(row.id);
      expect({ seq: row.seq, tree }).toEqual({ seq: row.seq, tree: treeAt(project, row.id) });
    }
    // The path removed at the sixth checkpoint and added back after the second full tree.
    const removedAt = rows[5]?.id as CheckpointId;
    const addedBackAt = rows[17]?.id as CheckpointId;
    expect((await db.store.checkpoints.checkpointTree(removedAt)).has("docs/readme.md")).toBe(false);
    expect((await db.store.checkpoints.checkpointTree(addedBackAt)).get("docs/readme.md")).toEqual({
      path: "docs/readme.md",
      kind: "file",
      mode: 0o644,
      size: Buffer.byteLength("# readme, again\n"),
      sha256: sha("# readme, again\n"),
      target: null,
      stat: treeAt(project, addedBackAt).get("docs/readme.md")?.stat,
    });
    const first = await db.store.checkpoints.checkpointTree(rows[0]?.id as CheckpointId);
    expect(first.get("latest")).toEqual({
      path: "latest",
      kind: "symlink",
      mode: 0o777,
      size: 0,
      sha256: null,
      target: "src/a.ts",
      stat: null,
    });
    expect(first.get("huge.bin")?.size).toBe(6_000_000_000);
    expect(first.get("run.sh")?.mode).toBe(0o755);
    expect(first.get("src/a.ts")?.stat).toMatchObject({ mtimeNs: "1735689600123456789", ctimeNs: "1735689600987654321" });
    expect(await db.store.checkpoints.checkpointTree(newId("ckp"))).toEqual(new Map());
  });

  it("W1: a base that is no longer the latest (another session's checkpoint landed since the capture) is written as the whole tree, numbered next", async () => {
    const project = await newProject();
    const first = await take(project, startTree);
    const second = await take(project, [file("src/a.ts", "second\n")]);
    expect(second.baseId).toBe(first.id);
    // Captured against the first checkpoint: its delta would be wrong on top of the second.
    const stale = await take(project, [file("src/d.ts", "stale base\n")], first.id);
    expect({ seq: stale.seq, baseId: stale.baseId }).toEqual({ seq: 3, baseId: null });
    expect(await rowsOf(stale.id)).toEqual(byPath(project.tree.values()));
    expect(await db.store.checkpoints.checkpointTree(stale.id)).toEqual(project.tree);
    // No base at all (the capture found no checkpoint) while one exists: whole too.
    const none = await take(project, [file("src/e.ts")], null);
    expect({ seq: none.seq, baseId: none.baseId }).toEqual({ seq: 4, baseId: null });
    // A checkpoint of another project as the base: whole too.
    const other = await newProject();
    const foreign = await take(other, startTree);
    const crossed = await take(project, [file("src/f.ts")], foreign.id);
    expect({ seq: crossed.seq, baseId: crossed.baseId }).toEqual({ seq: 5, baseId: null });
    // And deltas resume against the whole tree.
    const next = await take(project, [removed("src/e.ts")]);
    expect({ seq: next.seq, baseId: next.baseId }).toEqual({ seq: 6, baseId: crossed.id });
    expect(await rowsOf(next.id)).toEqual([{ path: "src/e.ts", removed: true }]);
    expect(await db.store.checkpoints.checkpointTree(next.id)).toEqual(project.tree);
  });

  it("W1: a delta built on a known base (the fast path) is written in one statement only on that base, and only when the content it names is stored", async () => {
    const project = await newProject();
    const first = await take(project, startTree);
    const change = file("src/a.ts", "fast path\n");
    const tree = applied(project.tree, [change]);
    const onBase = (baseId: CheckpointId, requiredDigests: string[]) =>
      db.store.transaction((tx) =>
        tx.checkpoints.insertCheckpoint(header(project, tree), {
          baseId,
          changes: [change],
          whole: () => [],
          onlyOnBase: true,
          requiredDigests,
        }),
      );
    // Its content is not in the blob store: refused, nothing written.
    const digest = (change as { sha256: string }).sha256;
    await expect(onBase(first.id, [digest])).rejects.toBeInstanceOf(CheckpointBlobsMissingError);
    expect((await db.store.checkpoints.latestCheckpoint(project.tenantId, project.projectId))?.id).toBe(first.id);
    await db.store.blobs.putBlob(project.tenantId, Buffer.from("fast path\n"));
    const written = await onBase(first.id, [digest]);
    expect({ seq: written.seq, baseId: written.baseId, digest: written.treeDigest }).toEqual({
      seq: 2,
      baseId: first.id,
      digest: header(project, tree).treeDigest,
    });
    expect(await rowsOf(written.id)).toEqual([{ path: "src/a.ts", removed: false }]);
    expect(await db.store.checkpoints.checkpointTree(written.id)).toEqual(tree);
    // On a base that is no longer the latest: refused, for the caller to walk the folder.
    await expect(onBase(first.id, [])).rejects.toBeInstanceOf(CheckpointBaseMovedError);
    expect((await db.store.checkpoints.latestCheckpoint(project.tenantId, project.projectId))?.id).toBe(written.id);
  });

  it("W1: two sessions' checkpoints of one project in concurrent transactions take turns on its lock: seqs n+1 and n+2, the second whole", async () => {
    const project = await newProject();
    const base = await take(project, startTree);
    const changes = { left: [file("left.txt")], right: [file("right.txt")] };
    const trees = { left: applied(project.tree, changes.left), right: applied(project.tree, changes.right) };
    let inserted = 0;
    const write = (side: "left" | "right") =>
      db.store.transaction(async (tx) => {
        const row = await insert(tx, project, trees[side], base.id, changes[side]);
        // The first to write holds the lock until the other is seen waiting for it, then commits.
        if (inserted++ === 0) await someoneWaitsForTheLock();
        return { side, row };
      });
    const written = await Promise.all([write("left"), write("right")]);
    const [earlier, later] = written.sort((a, b) => a.row.seq - b.row.seq);
    if (!earlier || !later) throw new Error("two checkpoints expected");
    expect([earlier.row.seq, later.row.seq]).toEqual([2, 3]);
    expect(earlier.row.baseId).toBe(base.id);
    expect(later.row.baseId).toBeNull();
    expect(await rowsOf(earlier.row.id)).toEqual([{ path: `${earlier.side}.txt`, removed: false }]);
    expect(await rowsOf(later.row.id)).toEqual(byPath(trees[later.side].values()));
    expect(await db.store.checkpoints.checkpointTree(earlier.row.id)).toEqual(trees[earlier.side]);
    expect(await db.store.checkpoints.checkpointTree(later.row.id)).toEqual(trees[later.side]);
    expect(await db.store.checkpoints.latestCheckpoint(project.tenantId, project.projectId)).toEqual(later.row);
  });

  it("W1: a transaction that fails after writing its checkpoint leaves neither the checkpoint nor any of its entries", async () => {
    const project = await newProject();
    const kept = await take(project, startTree);
    const failure = new Error("the batch's closing transaction failed");
    let written: CheckpointRow | undefined;
    const tree = applied(project.tree, [file("lost.txt")]);
    const attempt = db.store.transaction(async (tx) => {
      written = await insert(tx, project, tree, kept.id, [file("lost.txt")]);
      expect((await tx.checkpoints.checkpointTree(written.id)).has("lost.txt")).toBe(true);
      throw failure;
    });
    await expect(attempt).rejects.toBe(failure);
    if (!written) throw new Error("the checkpoint was not written");
    expect(await db.query("select id from workspace_checkpoints where id = $1", [written.id])).toEqual([]);
    expect(await db.query("select path from checkpoint_entries where checkpoint_id = $1", [written.id])).toEqual([]);
    expect(await db.store.checkpoints.latestCheckpoint(project.tenantId, project.projectId)).toEqual(kept);
    // The seq it took is free again, and the next checkpoint is a delta on the one kept.
    const next = await take(project, [file("kept.txt")]);
    expect({ seq: next.seq, baseId: next.baseId }).toEqual({ seq: 2, baseId: kept.id });
  });

  it("D8: another tenant finds neither a tenant's checkpoint by id nor its project's latest", async () => {
    const mine = await newProject();
    const other = await newProject();
    const row = await take(mine, startTree);
    await take(other, [file("other.txt")]);
    expect(await db.store.checkpoints.checkpointOfTenant(mine.tenantId, row.id)).toEqual(row);
    expect(await db.store.checkpoints.checkpointOfTenant(other.tenantId, row.id)).toBeUndefined();
    expect(await db.store.checkpoints.latestCheckpoint(mine.tenantId, mine.projectId)).toEqual(row);
    expect(await db.store.checkpoints.latestCheckpoint(other.tenantId, mine.projectId)).toBeUndefined();
    expect(await db.store.checkpoints.checkpointOfTenant(mine.tenantId, newId("ckp"))).toBeUndefined();
  });

  it("W1: a tree of 5,000 entries is written whole (in slices) and reads back entry for entry", async () => {
    const project = await newProject();
    const changes: StoredChange[] = [];
    for (let folder = 0; folder < 50; folder++) {
      changes.push(directory(`d${folder}`));
      for (let index = 0; index < 99; index++) changes.push(file(`d${folder}/f${index}.txt`, `${folder}/${index}`));
    }
    expect(changes).toHaveLength(5000);
    const row = await take(project, changes);
    expect({ seq: row.seq, baseId: row.baseId, entryCount: row.entryCount }).toEqual({ seq: 1, baseId: null, entryCount: 5000 });
    const [count] = await db.query<{ entries: number }>(
      "select count(*)::int as entries from checkpoint_entries where checkpoint_id = $1",
      [row.id],
    );
    expect(count?.entries).toBe(5000);
    const tree = await db.store.checkpoints.checkpointTree(row.id);
    expect(tree.size).toBe(5000);
    expect(tree).toEqual(project.tree);
  });
});
