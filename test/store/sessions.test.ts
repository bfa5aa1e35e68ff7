import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, type ProjectId, type TenantId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/** `store.sessions`: a session's row, its deletion guard (SPEC F4) and its tenant scoping (D8). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

/** Another session of the same project. */
async function siblingSession(scope: { tenantId: TenantId; projectId: ProjectId }) {
  const row = await db.store.sessions.insertSession({
    id: newId("ses"),
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    approvalMode: "manual",
    providerProfile: "scripted",
    runMode: "normal",
  });
  if (!row) throw new Error("session insert returned nothing");
  return row;
}

describe("store.sessions tenant scoping", () => {
  it("D8: another tenant's id finds no session, deletes nothing and is not live for a turn", async () => {
    const mine = await db.newSession();
    const other = await db.newSession();
    expect(await db.store.sessions.sessionOfTenant(mine.tenantId, mine.sessionId)).toMatchObject({ id: mine.sessionId, deletedAt: null });
    expect(await db.store.sessions.sessionOfTenant(other.tenantId, mine.sessionId)).toBeUndefined();
    expect(await db.store.sessions.peekLiveSession(other.tenantId, mine.sessionId)).toBeUndefined();
    expect(await db.store.sessions.markSessionDeleted(other.tenantId, mine.sessionId)).toBeUndefined();
    expect(await db.store.sessions.liveSessionsOfProject(other.tenantId, mine.projectId)).toEqual([]);
    expect((await db.store.sessions.listLiveSessions(other.tenantId, 10)).map((row) => row.id)).not.toContain(mine.sessionId);
    expect((await db.store.sessions.sessionOfTenant(mine.tenantId, mine.sessionId))?.deletedAt).toBeNull();
  });

  it("D8: a tenant's live sessions list newest first, at most the limit", async () => {
    const first = await db.newSession();
    const second = await siblingSession(first);
    const listed = await db.store.sessions.listLiveSessions(first.tenantId, 10);
    expect(listed.map((row) => row.id)).toEqual([second.id, first.sessionId]);
    expect(await db.store.sessions.listLiveSessions(first.tenantId, 1)).toHaveLength(1);
  });
});

describe("store.sessions deletion", () => {
  it("F4: deleting keeps the first deletion time; a deleted session is neither live, lockable nor listed, yet still readable", async () => {
    const { tenantId, projectId, sessionId } = await db.newSession();
    const first = await db.store.sessions.markSessionDeleted(tenantId, sessionId);
    expect(first?.deletedAt).toBeInstanceOf(Date);
    const again = await db.store.sessions.markSessionDeleted(tenantId, sessionId);
    expect(again?.deletedAt).toEqual(first?.deletedAt);
    expect(await db.store.sessions.peekLiveSession(tenantId, sessionId)).toBeUndefined();
    expect(await db.store.transaction(async (tx) => tx.sessions.lockLiveSession(sessionId))).toBeUndefined();
    expect(await db.store.sessions.liveSessionsOfProject(tenantId, projectId)).toEqual([]);
    expect(await db.store.sessions.listLiveSessions(tenantId, 10)).toEqual([]);
    expect((await db.store.sessions.sessionOfTenant(tenantId, sessionId))?.deletedAt).toEqual(first?.deletedAt);
  });

  it("F4: a session of a deleted project is no live session for a new turn", async () => {
    const { tenantId, projectId, sessionId } = await db.newSession();
    expect(await db.store.sessions.peekLiveSession(tenantId, sessionId)).toEqual({ activeRunId: null, approvalMode: "auto" });
    await db.store.projects.markProjectDeleted(tenantId, projectId);
    expect(await db.store.sessions.peekLiveSession(tenantId, sessionId)).toBeUndefined();
  });

  it("X6: a live session's row locks inside a transaction, and a project's live sessions are listed until deleted", async () => {
    const scope = await db.newSession();
    const sibling = await siblingSession(scope);
    const locked = await db.store.transaction(async (tx) => tx.sessions.lockLiveSession(scope.sessionId));
    expect(locked).toMatchObject({ id: scope.sessionId, tenantId: scope.tenantId });
    const live = await db.store.sessions.liveSessionsOfProject(scope.tenantId, scope.projectId);
    expect(live.map((row) => row.id).sort()).toEqual([scope.sessionId, sibling.id].sort());
    await db.store.sessions.markSessionDeleted(scope.tenantId, sibling.id);
    expect(await db.store.sessions.liveSessionsOfProject(scope.tenantId, scope.projectId)).toEqual([{ id: scope.sessionId }]);
  });
});

describe("store.sessions reads", () => {
  it("a run's scope, a session with its project, and what the gateway judges by; undefined for unknown ids", async () => {
    const { run, tenantId, projectId, sessionId } = await placedRun(db);
    const read = await db.store.sessions.readRunScope(run.id);
    expect(read?.scope).toEqual({ tenantId, projectId, sessionId });
    expect(read?.session.id).toBe(sessionId);
    expect(read?.project).toMatchObject({ id: projectId, workspacePath: "/nonexistent" });
    expect(await db.store.sessions.readRunScope("run_missing")).toBeUndefined();
    const joined = await db.store.sessions.sessionWithProject(sessionId);
    expect(joined?.session.id).toBe(sessionId);
    expect(joined?.project).toMatchObject({ id: projectId, workspacePath: "/nonexistent" });
    expect(await db.store.sessions.sessionWithProject("ses_missing")).toBeUndefined();
    expect(await db.store.sessions.sessionJudgeScope(sessionId)).toEqual({
      tenantId,
      projectId,
      mode: "auto",
      workspaceDir: "/nonexistent",
      tenantPolicy: {},
      projectPolicy: {},
    });
    expect(await db.store.sessions.sessionJudgeScope("ses_missing")).toBeUndefined();
  });

  it("a task list replaces the last one; the event sequence of several sessions reads at once", async () => {
    const { tenantId, sessionId } = await db.newSession();
    const other = await db.newSession();
    await db.store.sessions.replaceSessionTasks(sessionId, [{ title: "one", status: "pending" }]);
    await db.store.sessions.replaceSessionTasks(sessionId, [{ title: "two", status: "done" }]);
    expect((await db.store.sessions.sessionOfTenant(tenantId, sessionId))?.tasks).toEqual([{ title: "two", status: "done" }]);
    const seqs = await db.store.sessions.eventSeqOfSessions([sessionId, other.sessionId, "ses_missing"]);
    expect(seqs.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [
        { id: sessionId, eventSeq: 0 },
        { id: other.sessionId, eventSeq: 0 },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
  });
});
