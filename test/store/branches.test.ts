import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryMessage, MessagePosition } from "../../src/core/history.js";
import { newId, type RunId, type SessionId, type TenantId } from "../../src/ids.js";
import type { NewCheckpoint, StoredEntry } from "../../src/store/checkpoints.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun } from "./run-fixtures.js";

/**
 * `store.branches`: points of a session's history (SPEC W2), what a rewind sets aside and brings
 * back, the checkpoint of a point, and a fork's copy; every read scoped to its tenant (D8).
 */
let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const user = (text: string): HistoryMessage => ({ role: "user", text });
const answer = (text: string, calls = 0): HistoryMessage => ({
  role: "assistant",
  text,
  toolCalls: Array.from({ length: calls }, (_, index) => ({ callId: `c${index}`, name: "write", argumentsRaw: "{}" })),
});
const result = (callId: string): HistoryMessage => ({
  role: "tool",
  callId,
  name: "write",
  status: "succeeded",
  isError: false,
  content: [],
});

/** A session with two runs of history: run 1 (steps 0 and 1, each a call and its result), run 2 (one answer). */
async function twoRuns() {
  const placed = await placedRun(db);
  const { tenantId, sessionId } = placed;
  const second = await db.store.transaction(async (tx) => {
    const row = await tx.runs.insertRun({ tenantId, sessionId, input: "again" });
    const { ordinal } = await tx.runs.placeRun(row);
    return { ...row, ordinal };
  });
  const at = (runOrdinal: number, stepIndex: number, part: 0 | 1 | 2, callIndex = 0): MessagePosition => ({
    runOrdinal,
    stepIndex,
    part,
    callIndex,
  });
  await db.store.transaction(async (tx) => {
    const first = { tenantId, sessionId, runId: placed.run.id };
    await tx.messages.insertMessage(first, at(1, -1, 0), user("hello"));
    await tx.messages.insertMessage(first, at(1, 0, 1), answer("one", 1));
    await tx.messages.insertMessage(first, at(1, 0, 2), result("c0"));
    await tx.messages.insertMessage(first, at(1, 1, 1), answer("two", 1));
    await tx.messages.insertMessage(first, at(1, 1, 2), result("c0"));
    const next = { tenantId, sessionId, runId: second.id };
    await tx.messages.insertMessage(next, at(2, -1, 0), user("again"));
    await tx.messages.insertMessage(next, at(2, 0, 1), answer("done"));
  });
  return { ...placed, first: placed.run, second };
}

const texts = async (tenantId: TenantId, sessionId: SessionId) =>
  (await db.store.messages.loadHistory(tenantId, sessionId, 99)).map((entry) =>
    entry.message.role === "tool" ? "result" : entry.message.text,
  );

function header(
  scope: { tenantId: TenantId; projectId: NewCheckpoint["projectId"]; sessionId: SessionId },
  runId: RunId,
  stepIndex: number,
): NewCheckpoint {
  return { ...scope, runId, stepIndex, reason: "batch", entryCount: 1, fileBytes: 1, treeDigest: "d" };
}
const file = (path: string, sha256: string): StoredEntry => ({
  path,
  kind: "file",
  mode: 0o644,
  size: 1,
  sha256,
  target: null,
  stat: null,
});

describe("store.branches", () => {
  it("W2: setting history aside after a point hides it from every history read, keeps it readable as the branch's, and brings it back", async () => {
    const s = await twoRuns();
    const branchId = newId("brn");
    const epoch = async () => (await db.store.sessions.sessionWithProject(s.sessionId))?.session.historyEpoch;
    const before = await epoch();
    const moved = await db.store.transaction((tx) => tx.branches.setAsideAfter(s, { runOrdinal: 1, stepIndex: 0 }, branchId));
    expect(moved).toEqual({ messages: 4, runIds: [s.second.id] });
    expect(await texts(s.tenantId, s.sessionId)).toEqual(["hello", "one", "result"]);
    expect((await db.store.messages.messagesOfSession(s.sessionId)).length).toBe(3);
    expect((await db.store.branches.messagesOfBranch(s.tenantId, branchId)).map((row) => row.runId)).toEqual([
      s.first.id,
      s.first.id,
      s.second.id,
      s.second.id,
    ]);
    expect(await db.store.branches.visibleRun(s.tenantId, s.sessionId, s.second.id)).toBeUndefined();
    expect(await db.store.branches.messagesAfter(s.tenantId, s.sessionId, { runOrdinal: 1, stepIndex: 0 })).toBe(0);
    expect(await epoch()).toBe((before ?? 0) + 1);
    const branch = await db.store.transaction((tx) =>
      tx.branches.insertBranch({
        id: branchId,
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        at: { runOrdinal: 1, stepIndex: 0 },
        messageCount: 4,
      }),
    );
    const listed = async () => (await db.store.branches.branchesOfSession(s.tenantId, s.sessionId)).map((row) => [row.id, row.runIds]);
    expect(await listed()).toEqual([[branchId, [s.second.id]]]);
    await db.store.transaction((tx) => tx.branches.bringBack(branch));
    expect(await listed()).toEqual([[branchId, []]]);
    expect(await texts(s.tenantId, s.sessionId)).toEqual(["hello", "one", "result", "two", "result", "again", "done"]);
    expect(await epoch()).toBe((before ?? 0) + 2);
    expect((await db.store.branches.branchOfSession(s.tenantId, s.sessionId, branchId))?.restoredAt).not.toBeNull();
  });

  it("D8: points, runs, messages and branches are found only in their own tenant's session", async () => {
    const s = await twoRuns();
    const other = await twoRuns();
    const message = (await db.store.messages.messagesOfSession(s.sessionId))[1]!;
    expect(await db.store.branches.visibleMessage(s.tenantId, s.sessionId, message.id)).toMatchObject({ runOrdinal: 1, stepIndex: 0 });
    expect(await db.store.branches.visibleMessage(other.tenantId, other.sessionId, message.id)).toBeUndefined();
    expect(await db.store.branches.visibleRun(other.tenantId, other.sessionId, s.first.id)).toBeUndefined();
    expect(await db.store.branches.visibleRun(other.tenantId, s.sessionId, s.first.id)).toBeUndefined();
    const branch = await db.store.transaction((tx) =>
      tx.branches.insertBranch({
        id: newId("brn"),
        tenantId: s.tenantId,
        sessionId: s.sessionId,
        at: { runOrdinal: 1, stepIndex: null },
        messageCount: 0,
      }),
    );
    expect(await db.store.branches.branchOfSession(other.tenantId, s.sessionId, branch.id)).toBeUndefined();
    expect(await db.store.branches.branchesOfSession(other.tenantId, s.sessionId)).toEqual([]);
  });

  it("W2: a point's checkpoint is the latest its session took at or before it, else the tree the session started from", async () => {
    const s = await twoRuns();
    const scope = { tenantId: s.tenantId, projectId: s.projectId, sessionId: s.sessionId };
    const write = (runId: RunId, step: number) =>
      db.store.transaction((tx) =>
        tx.checkpoints.insertCheckpoint(header(scope, runId, step), {
          baseId: null,
          changes: [],
          whole: () => [file(`r${step}`, "a".repeat(64))],
        }),
      );
    expect(await db.store.branches.checkpointAtPoint(scope, { runOrdinal: 1, stepIndex: 0 })).toBeUndefined();
    const step0 = await write(s.first.id, 0);
    const step1 = await write(s.first.id, 1);
    const run2 = await write(s.second.id, 0);
    expect(await db.store.branches.checkpointAtPoint(scope, { runOrdinal: 0, stepIndex: null })).toBeUndefined();
    expect(await db.store.branches.checkpointAtPoint(scope, { runOrdinal: 1, stepIndex: 0 })).toBe(step0.id);
    expect(await db.store.branches.checkpointAtPoint(scope, { runOrdinal: 1, stepIndex: null })).toBe(step1.id);
    expect(await db.store.branches.checkpointAtPoint(scope, { runOrdinal: 2, stepIndex: null })).toBe(run2.id);
  });

  it("W2: copying a checkpoint resolves its chain into one full tree, the new latest of the target project", async () => {
    const s = await twoRuns();
    const scope = { tenantId: s.tenantId, projectId: s.projectId, sessionId: s.sessionId };
    const full = await db.store.transaction((tx) =>
      tx.checkpoints.insertCheckpoint(header(scope, s.first.id, 0), {
        baseId: null,
        changes: [],
        whole: () => [file("a", "1".repeat(64)), file("b", "2".repeat(64))],
      }),
    );
    const delta = await db.store.transaction((tx) =>
      tx.checkpoints.insertCheckpoint(header(scope, s.first.id, 1), {
        baseId: full.id,
        changes: [
          { removed: true, path: "a" },
          { removed: false, ...file("c", "3".repeat(64)) },
          { removed: false, ...file("b", "4".repeat(64)) },
        ],
        whole: () => [],
      }),
    );
    expect(delta.baseId).toBe(full.id);
    const copy = await db.store.transaction((tx) =>
      tx.checkpoints.copyCheckpoint(delta.id, { ...header(scope, s.second.id, 0), reason: "rewind" }),
    );
    expect(copy.baseId).toBeNull();
    expect((await db.store.checkpoints.latestCheckpoint(s.tenantId, s.projectId))?.id).toBe(copy.id);
    const tree = await db.store.checkpoints.checkpointTree(copy.id);
    expect([...tree.values()].map((entry) => [entry.path, entry.sha256?.[0]])).toEqual([
      ["b", "4"],
      ["c", "3"],
    ]);
  });

  it("W2: an idle session is locked for a rewind; one with a queued or running run is busy, naming it", async () => {
    const s = await placedRun(db);
    const busy = await db.store.transaction((tx) => tx.branches.lockIdleSession(s.tenantId, s.sessionId));
    expect(busy).toEqual({ kind: "busy", runId: s.run.id });
    const other = await db.newSession();
    expect(await db.store.transaction((tx) => tx.branches.lockIdleSession(other.tenantId, s.sessionId))).toEqual({ kind: "gone" });
    const idle = await db.store.transaction((tx) => tx.branches.lockIdleSession(other.tenantId, other.sessionId));
    expect(idle.kind).toBe("idle");
  });
});
