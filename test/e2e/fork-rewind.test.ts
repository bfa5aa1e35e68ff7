import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunId, SessionId } from "../../src/ids.js";
import { type ApiClient, script, waitFor } from "../helpers/api-client.js";
import { readSse } from "../helpers/sse-client.js";
import { folderSnapshot } from "../helpers/folder-snapshot.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * Fork and rewind (SPEC W2): any committed point of a session's history, with the workspace as it
 * stood there, becomes a new session (fork) or the same session again (rewind); what followed a
 * rewind stays listable as a branch and can be brought back.
 */
let env: TestEnv;
let client: ApiClient;
let other: ApiClient;

beforeAll(async () => {
  env = await createTestEnv();
  await env.startWorker();
  client = await env.newTenant("forks");
  other = await env.newTenant("someone else");
});
afterAll(async () => env?.close());

type Action = { tool: string; args: Record<string, unknown> } | { text: string };

/** Starts a run of these steps and approves what the gateway asks about; resolves with the ended run. */
async function play(tenant: ApiClient, sessionId: SessionId, steps: Action[][]): Promise<{ id: RunId; status: string }> {
  const started = await tenant.startRun(sessionId, script(steps));
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const runId = started.body.id as RunId;
  return waitFor(
    async () => {
      const current = (await tenant.get(`/v1/runs/${runId}`)).body;
      if (current.status === "awaiting_approval") {
        const pending = await tenant.get(`/v1/approvals?runId=${runId}&status=pending`);
        for (const approval of pending.body.approvals) await tenant.post(`/v1/approvals/${approval.id}`, { decision: "approve" });
      }
      return ["completed", "failed", "cancelled", "interrupted"].includes(current.status) ? current : null;
    },
    90_000,
    `run ${runId} to end`,
  );
}

const write = (file: string, content: string): Action => ({ tool: "write", args: { path: file, content } });
const bash = (command: string, background = false): Action => ({ tool: "bash", args: background ? { command, background } : { command } });
const read = (file: string): Action => ({ tool: "read", args: { path: file } });

/** Step k (0-based) of the 30-step run: a file of its own, the counter rewritten, and in places a fetch or a background command. */
function stepOf(k: number): Action[] {
  const actions: Action[] = [write(`steps/${k}.txt`, `step ${k}\n`), write("counter.txt", `${k}\n`)];
  if (k === 13) actions.push({ tool: "web_fetch", args: { url: "http://127.0.0.1:9/never" } });
  if (k === 17) actions.push(bash("sleep 1; echo later > bg.txt", true));
  if (k === 21) actions.push(bash("rm -rf steps/0.txt && chmod 600 counter.txt"));
  return actions;
}

describe("fork and rewind", () => {
  it("W2: a fork at step 10 of a 30-step run has the history and the workspace of step 10; a turn in the fork leaves the source alone; notUndone lists the fetch and the background command after it", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const steps = Array.from({ length: 30 }, (_, k) => stepOf(k));
    const run = await play(client, sessionId, [...steps, [{ text: "thirty steps done" }]]);
    expect(run.status).toBe("completed");
    const source = await env.workspaceOf(sessionId);
    await waitFor(async () => (await lstat(path.join(source, "bg.txt")).catch(() => null)) !== null, 20_000, "bg.txt");
    const sourceBefore = await folderSnapshot(source);

    const forked = await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: run.id, stepIndex: 10 } });
    expect(forked.status, JSON.stringify(forked.body)).toBe(201);
    const fork = forked.body.session;
    expect(fork.id).not.toBe(sessionId);
    expect(fork.projectId).not.toBe((await client.get(`/v1/sessions/${sessionId}`)).body.projectId);
    expect(fork.approvalMode).toBe("auto");
    expect(forked.body.runs).toEqual([expect.objectContaining({ from: run.id, ordinal: 1, cancelled: true })]);
    // Step 13's fetch and step 17's background command were abandoned; the file writes are undone by the checkpoint.
    const notUndone = forked.body.notUndone.map((call: { name: string; reason: string; stepIndex: number }) => [
      call.name,
      call.reason,
      call.stepIndex,
    ]);
    expect(notUndone).toEqual([
      ["web_fetch", "network", 13],
      ["bash", "background_command", 17],
    ]);

    // History: the user's input and steps 0..10, each with its results, and nothing after.
    const sourceMessages = await client.messages(sessionId);
    const forkMessages = await client.messages(fork.id);
    const upToStep10 = sourceMessages.slice(0, 1 + 11 * 3);
    expect(forkMessages.map((m) => m.content)).toEqual(upToStep10.map((m) => m.content));
    expect(forkMessages.at(-1).content).toMatchObject({ role: "tool", name: "write" });
    // Its events: the source's up to step 10, renumbered gap-free, then the cut run's end and the fork's own.
    const forkEvents = await client.events(fork.id);
    expect(forkEvents.map((event) => event.seq)).toEqual(forkEvents.map((_, index) => index + 1));
    expect(forkEvents.at(-2)).toMatchObject({ type: "run_end", data: { status: "cancelled", error: { code: "forked" } } });
    expect(forkEvents.at(-1)).toMatchObject({
      type: "session_forked",
      data: { fromSessionId: sessionId, at: { runOrdinal: 1, stepIndex: 10 } },
    });
    expect(forkEvents.some((event) => event.step?.index > 10)).toBe(false);

    // A turn in the fork: its folder is rebuilt from the copied checkpoint first, then the turn writes.
    const next = await play(client, fork.id, [[read("counter.txt"), write("fork-only.txt", "mine\n")], [{ text: "ok" }]]);
    expect(next.status).toBe("completed");
    const forkFolder = await env.workspaceOf(fork.id);
    expect(forkFolder).not.toBe(source);
    const tools = await client.toolMessages(fork.id);
    expect(JSON.stringify(tools.at(-2).content)).toContain("10");
    const files = (await folderSnapshot(forkFolder)).map((line) => line.split(" ")[1]);
    expect(files).toEqual(["counter.txt", "fork-only.txt", "steps", ...Array.from({ length: 11 }, (_, k) => `steps/${k}.txt`).sort()]);
    expect(await readFile(path.join(forkFolder, "counter.txt"), "utf8")).toBe("10\n");
    const restored = (await client.events(fork.id)).find((event) => event.type === "workspace_restored");
    expect(restored?.data).toMatchObject({ reason: "rewound", checkpointId: forked.body.checkpointId, files: 12 });
    // The source did not move.
    expect(await folderSnapshot(source)).toEqual(sourceBefore);
    expect((await client.messages(sessionId)).length).toBe(sourceMessages.length);
  }, 180_000);

  it("W2: rewind, a new turn, then rewind back to the branch: the tree is the one before, the branch is listed, and one SSE client sees a single gap-free sequence", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const server = await env.startServer();
    const first = await play(client, sessionId, [[write("a.txt", "one\n")], [{ text: "first" }]]);
    const second = await play(client, sessionId, [
      [write("b.txt", "two\n"), bash("mkdir -p lib && ln -s ../a.txt lib/a && chmod 640 a.txt")],
      [{ text: "second" }],
    ]);
    expect([first.status, second.status]).toEqual(["completed", "completed"]);
    const folder = await env.workspaceOf(sessionId);
    const before = await folderSnapshot(folder);
    const lastSeqBefore = (await client.get(`/v1/sessions/${sessionId}`)).body.lastEventSeq as number;
    const stream = readSse(`${server.url}/v1/sessions/${sessionId}/events`, client.key, {
      lastEventId: 0,
      until: (_, all) =>
        all.filter((event) => event.event === "session_rewound").length === 2 &&
        all.at(-1)?.event === "run_end" &&
        all.filter((e) => e.event === "run_end").length === 4,
      timeoutMs: 90_000,
    });

    // Back to the end of the first run: the second is set aside.
    const rewound = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: first.id } });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    const branch = rewound.body.branch;
    expect(branch).toMatchObject({ at: { runOrdinal: 1, stepIndex: null }, runIds: [second.id], restoredAt: null });
    expect((await client.messages(sessionId)).map((m) => m.runId)).toEqual([first.id, first.id, first.id, first.id]);
    const third = await play(client, sessionId, [[read("a.txt"), write("c.txt", "three\n")], [{ text: "third" }]]);
    expect(third.status).toBe("completed");
    expect((await folderSnapshot(folder)).map((line) => line.split(" ")[1])).toEqual(["a.txt", "c.txt"]);
    expect(await readFile(path.join(folder, "a.txt"), "utf8")).toBe("one\n");

    // The branch is listed with what it set aside; its messages stay readable.
    const listed = (await client.get(`/v1/sessions/${sessionId}/branches`)).body.branches;
    expect(listed.map((b: { id: string; runIds: string[] }) => [b.id, b.runIds])).toEqual([[branch.id, [second.id]]]);
    const setAside = (await client.get(`/v1/sessions/${sessionId}/branches/${branch.id}/messages`)).body.messages;
    expect(setAside.map((m: { runId: string }) => m.runId)).toEqual(Array(setAside.length).fill(second.id));

    // Back to the branch: the second run returns, the third is set aside, and the next batch finds the tree of before.
    const back = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { branchId: branch.id } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body).toMatchObject({ restoredBranchId: branch.id, branch: { runIds: [third.id] } });
    expect(back.body.checkpointId).not.toBe(rewound.body.checkpointId);
    const fourth = await play(client, sessionId, [[read("b.txt")], [{ text: "fourth" }]]);
    expect(fourth.status).toBe("completed");
    expect(await folderSnapshot(folder)).toEqual(before);
    const history = (await client.messages(sessionId)).map((m) => m.runId);
    expect([...new Set(history)]).toEqual([first.id, second.id, fourth.id]);
    const branches = (await client.get(`/v1/sessions/${sessionId}/branches`)).body.branches;
    expect(branches.map((b: { id: string; restoredAt: string | null }) => [b.id, b.restoredAt !== null])).toEqual([
      [back.body.branch.id, false],
      [branch.id, true],
    ]);

    // One stream from the start saw every event once, in order, the rewinds included.
    const seen = await stream;
    const seqs = seen.map((event) => Number(event.id));
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(seqs.length).toBeGreaterThan(lastSeqBefore);
    const rewinds = seen.filter((event) => event.event === "session_rewound").map((event) => event.data.data);
    expect(rewinds.map((data) => data.branchId)).toEqual([branch.id, back.body.branch.id]);
    await server.close();
  }, 180_000);

  it("W2: edit and resend: a rewind to a user message goes back to just before its run, and a new run takes its place", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    await play(client, sessionId, [[write("keep.txt", "keep\n")], [{ text: "one" }]]);
    const second = await play(client, sessionId, [[write("drop.txt", "drop\n")], [{ text: "two" }]]);
    const userMessage = (await client.messages(sessionId)).find((m) => m.runId === second.id && m.role === "user");
    const rewound = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { messageId: userMessage.id } });
    expect(rewound.status, JSON.stringify(rewound.body)).toBe(200);
    expect(rewound.body.branch.at).toEqual({ runOrdinal: 1, stepIndex: null });
    const resent = await play(client, sessionId, [[bash("ls")], [{ text: "edited" }]]);
    expect(resent.status).toBe("completed");
    const listing = (await client.toolMessages(sessionId)).at(-1);
    expect(JSON.stringify(listing.content)).toContain("keep.txt");
    expect(JSON.stringify(listing.content)).not.toContain("drop.txt");
  }, 120_000);

  it("W2: a rewind refuses a busy session, a point with nothing after it, and a step whose calls have not finished", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const done = await play(client, sessionId, [[write("x.txt", "x\n")], [{ text: "done" }]]);
    expect((await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: done.id } })).status).toBe(409);
    const slow = await client.startRun(sessionId, script([[bash("sleep 30")], [{ text: "late" }]]));
    await waitFor(async () => (await client.get(`/v1/runs/${slow.body.id}`)).body.status === "running", 20_000, "the slow run");
    const busy = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: done.id } });
    expect(busy.status).toBe(409);
    expect(busy.body.error.message).toContain(slow.body.id);
    // A fork of the running session takes only committed history: the running step is refused, the finished run is not.
    await waitFor(
      async () => (await client.messages(sessionId)).some((m) => m.runId === slow.body.id && m.role === "assistant"),
      20_000,
      "step 0",
    );
    const unfinished = await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: slow.body.id, stepIndex: 0 } });
    expect(unfinished.status).toBe(409);
    const fromDone = await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: done.id } });
    expect(fromDone.status).toBe(201);
    expect(fromDone.body.runs).toEqual([expect.objectContaining({ from: done.id, cancelled: false })]);
    await client.post(`/v1/runs/${slow.body.id}/cancel`, {});
  }, 120_000);

  it("D8: another tenant's session, run, message and branch ids answer 404 on fork, rewind and branches; a fork shares no folder or blob with another tenant", async () => {
    const { sessionId } = await client.newSession({ approvalMode: "auto" });
    const first = await play(client, sessionId, [[write("secret.txt", "mine\n")], [{ text: "one" }]]);
    await play(client, sessionId, [[write("more.txt", "more\n")], [{ text: "two" }]]);
    const rewound = await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: first.id } });
    expect(rewound.status).toBe(200);
    const message = (await client.messages(sessionId))[0];

    expect((await other.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: first.id } })).status).toBe(404);
    expect((await other.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: first.id } })).status).toBe(404);
    expect((await other.get(`/v1/sessions/${sessionId}/branches`)).status).toBe(404);
    expect((await other.get(`/v1/sessions/${sessionId}/branches/${rewound.body.branch.id}/messages`)).status).toBe(404);
    // The other tenant's own session, pointed at this tenant's run, message or branch: not found either.
    const theirs = await other.newSession({ approvalMode: "auto" });
    await play(other, theirs.sessionId, [[write("theirs.txt", "theirs\n")], [{ text: "one" }]]);
    for (const at of [{ runId: first.id }, { messageId: message.id }]) {
      expect((await other.post(`/v1/sessions/${theirs.sessionId}/fork`, { at })).status).toBe(404);
      expect((await other.post(`/v1/sessions/${theirs.sessionId}/rewind`, { at })).status).toBe(404);
    }
    expect((await other.post(`/v1/sessions/${theirs.sessionId}/rewind`, { at: { branchId: rewound.body.branch.id } })).status).toBe(404);
    expect((await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: "run_nope" } })).status).toBe(404);
    expect((await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: "ses_wrongkind" } })).status).toBe(404);

    const forked = await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: first.id } });
    expect(forked.status).toBe(201);
    const folders = await env.query<{ workspace_path: string; tenant_id: string }>("select workspace_path, tenant_id from projects");
    const paths = folders.map((row) => row.workspace_path);
    expect(new Set(paths).size).toBe(paths.length);
    // Every blob the fork's checkpoint names is a row of this tenant's; none is shared with another tenant's rows.
    const named = await env.query<{ tenant_id: string; blob_tenant: string | null }>(
      `select e.tenant_id, b.tenant_id as blob_tenant from checkpoint_entries e
       left join content_blobs b on b.sha256 = e.sha256 and b.tenant_id = e.tenant_id
       where e.checkpoint_id = $1 and e.kind = 'file' and e.size > 0`,
      [forked.body.checkpointId],
    );
    expect(named.length).toBeGreaterThan(0);
    for (const row of named) expect([row.tenant_id, row.blob_tenant]).toEqual([client.tenantId, client.tenantId]);
  }, 120_000);
});
