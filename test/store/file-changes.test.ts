import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FileChangeRecord } from "../../src/core/file-change-record.js";
import type { FileChangeId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { type Batch, claimedBatch } from "./run-fixtures.js";

/** `store.fileChanges`: the review list and a revert's reads and marks (SPEC F3), tenant-scoped (D8). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const record = (path: string): FileChangeRecord => ({
  path,
  existedBefore: false,
  modeBefore: null,
  modeAfter: 0o644,
  sha256Before: null,
  sha256After: "ab".repeat(32),
  diff: `+++ ${path}`,
});

/** Records one change of the batch's first call, in its own statement (so its own creation time); answers its row. */
async function recordChange(batch: Batch, path: string) {
  const call = batch.calls[0];
  if (!call) throw new Error("no call");
  // Creation times a millisecond apart at least: the rows read back as Dates, which keep milliseconds only.
  await new Promise((resolve) => setTimeout(resolve, 3));
  await db.store.toolCalls.insertFileChanges(
    { tenantId: batch.tenantId, sessionId: batch.sessionId, runId: batch.run.id, toolCallId: call.id },
    [record(path)],
  );
  const [row] = await db.query<{ id: FileChangeId }>("select id from file_changes where session_id = $1 and path = $2", [
    batch.sessionId,
    path,
  ]);
  if (!row) throw new Error("no file change");
  return row.id;
}

describe("store.fileChanges", () => {
  it("D8, F3: another tenant's id finds no file change, no session and no workspace", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const other = await db.newSession();
    const id = await recordChange(batch, "a.txt");
    expect(await db.store.fileChanges.fileChangeOfTenant(batch.tenantId, id)).toMatchObject({ id, path: "a.txt", revertedAt: null });
    expect(await db.store.fileChanges.fileChangeSessionOfTenant(batch.tenantId, id)).toEqual({
      sessionId: batch.sessionId,
      projectId: batch.projectId,
    });
    expect(await db.store.fileChanges.fileChangeWithWorkspace(batch.tenantId, id)).toMatchObject({
      change: { id },
      workspacePath: "/nonexistent",
    });
    expect(await db.store.fileChanges.fileChangeOfTenant(other.tenantId, id)).toBeUndefined();
    expect(await db.store.fileChanges.fileChangeSessionOfTenant(other.tenantId, id)).toBeUndefined();
    expect(await db.store.fileChanges.fileChangeWithWorkspace(other.tenantId, id)).toBeUndefined();
  });

  it("F3: the review list is oldest first; a revert from a change takes it and every later unreverted one, newest first", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const first = await recordChange(batch, "1.txt");
    const second = await recordChange(batch, "2.txt");
    const third = await recordChange(batch, "3.txt");
    expect((await db.store.fileChanges.fileChangesOfSession(batch.sessionId)).map((row) => row.id)).toEqual([first, second, third]);
    const since = (await db.store.fileChanges.fileChangeOfTenant(batch.tenantId, second))?.createdAt;
    if (!since) throw new Error("no change");
    const targets = await db.store.fileChanges.unrevertedChangesSince(batch.sessionId, since);
    expect(targets.map((row) => row.id)).toEqual([third, second]);
  });

  it("F3: a change marked reverted is no longer a revert's target, so it is never reverted twice", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const first = await recordChange(batch, "1.txt");
    const second = await recordChange(batch, "2.txt");
    const marked = await db.store.fileChanges.markFileChangesReverted([second]);
    expect(marked.map((row) => row.id)).toEqual([second]);
    expect(marked[0]?.revertedAt).not.toBeNull();
    const since = (await db.store.fileChanges.fileChangeOfTenant(batch.tenantId, first))?.createdAt;
    if (!since) throw new Error("no change");
    expect((await db.store.fileChanges.unrevertedChangesSince(batch.sessionId, since)).map((row) => row.id)).toEqual([first]);
    expect((await db.store.fileChanges.fileChangesOfSession(batch.sessionId)).map((row) => row.id)).toEqual([first, second]);
  });

  it("D11: reverts of one session take turns on its lock; another session's revert does not wait", async () => {
    const batch = await claimedBatch(db, ["write"]);
    const other = await db.newSession();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked: () => void = () => {};
    const firstLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const first = db.store.transaction(async (tx) => {
      await tx.fileChanges.lockSessionReverts(batch.sessionId);
      locked();
      await held;
    });
    await firstLocked;
    let secondDone = false;
    const second = db.store
      .transaction(async (tx) => tx.fileChanges.lockSessionReverts(batch.sessionId))
      .then(() => {
        secondDone = true;
      });
    await db.store.transaction(async (tx) => tx.fileChanges.lockSessionReverts(other.sessionId));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(secondDone).toBe(false);
    release();
    await first;
    await second;
    expect(secondDone).toBe(true);
  });
});
