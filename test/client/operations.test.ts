import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createFoyaClient,
  FoyaApiError,
  isFoyaApiError,
  WebhookVerificationError,
  type FoyaClient,
  type FoyaEvent,
} from "../../packages/client/src/index.js";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";
import { startReceiver } from "../webhooks/webhook-receiver.js";

let env: TestEnv;
let tenant: ApiClient;
let baseUrl: string;
let sdk: FoyaClient;

beforeAll(async () => {
  env = await createTestEnv({ FOYA_WEBHOOK_POLL_MS: "100", FOYA_WEBHOOK_ALLOW_PRIVATE: "true" });
  await env.startWorker();
  baseUrl = (await env.startServer()).url;
  tenant = await env.newTenant();
  sdk = createFoyaClient({ baseUrl, apiKey: tenant.key });
});
afterAll(async () => env?.close());

/** A project and a session made through the typed client. */
async function newSession(client: FoyaClient, approvalMode: "manual" | "auto"): Promise<string> {
  const project = await client.api.POST("/v1/projects", { body: { name: "sdk" } });
  if (!project.data) throw new Error(`project: ${JSON.stringify(project.error)}`);
  const session = await client.api.POST("/v1/sessions", { body: { projectId: project.data.id, approvalMode } });
  if (!session.data) throw new Error(`session: ${JSON.stringify(session.error)}`);
  return session.data.id;
}

async function thrown(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("@foya/client approvals, file changes, errors and webhooks", () => {
  it("E1: approve with edited arguments: the run completes with the edited arguments", async () => {
    const sessionId = await newSession(sdk, "manual");
    const workspace = await env.workspaceOf(sessionId);
    const input = script([[{ tool: "write", args: { path: "notes.md", content: "the model's draft\n" } }], [{ text: "written" }]]);
    const { run, events } = await sdk.runs.stream(sessionId, input);

    const received: FoyaEvent[] = [];
    for await (const event of events) {
      received.push(event);
      if (event.type !== "approval_request") continue;
      const [pending] = await sdk.approvals.list({ runId: run.id, status: "pending" });
      expect(pending).toMatchObject({ id: event.data.approvalId, call: { tool: "write" } });
      const decided = await sdk.approvals.approve(event.data.approvalId, {
        reason: "tidier",
        editedArguments: { path: "notes.md", content: "the reviewer's text\n" },
      });
      expect(decided).toMatchObject({
        status: "approved",
        reason: "tidier",
        editedArguments: JSON.stringify({ path: "notes.md", content: "the reviewer's text\n" }),
      });
      // The call keeps what the model produced; the approval records the edit.
      expect(JSON.parse(decided.call.arguments)).toEqual({ path: "notes.md", content: "the model's draft\n" });
    }

    expect((await sdk.runs.wait(run.id, { timeoutMs: 20_000 })).status).toBe("completed");
    expect(await readFile(path.join(workspace, "notes.md"), "utf8")).toBe("the reviewer's text\n");
    const resolved = received.find((event) => event.type === "approval_resolved");
    expect(resolved?.type === "approval_resolved" && resolved.data).toMatchObject({ status: "approved", edited: true });
    expect(received.at(-1)).toMatchObject({ type: "run_end", data: { status: "completed" } });

    // The first decision stands: a second one is a 409 with the approval as it is.
    const again = await thrown(sdk.approvals.deny(resolved?.type === "approval_resolved" ? resolved.data.approvalId : ""));
    expect(again).toBeInstanceOf(FoyaApiError);
    expect(again).toMatchObject({ status: 409, current: { status: "approved" } });
  });

  it("E1: revert of a file change restores the file; a repeated revert is a FoyaApiError 409", async () => {
    const sessionId = await newSession(sdk, "auto");
    const workspace = await env.workspaceOf(sessionId);
    const writes = ["v1\n", "v2\n", "v3\n"].map((content) => ({ tool: "write", args: { path: "draft.txt", content } }));
    const run = await sdk.runs.start(sessionId, script([writes, [{ text: "three versions" }]]));
    expect((await sdk.runs.wait(run.id, { timeoutMs: 20_000 })).status).toBe("completed");

    const changes = await sdk.fileChanges.list(sessionId);
    expect(changes.map((change) => [change.path, change.existedBefore])).toEqual([
      ["draft.txt", false],
      ["draft.txt", true],
      ["draft.txt", true],
    ]);
    const [created, second, third] = changes;
    expect(await sdk.fileChanges.diff(second!.id)).toMatch(/-v1\n\+v2/);

    // One change: the file is as the change found it.
    const one = await sdk.fileChanges.revert(third!.id);
    expect(one.map((change) => change.id)).toEqual([third!.id]);
    expect(await readFile(path.join(workspace, "draft.txt"), "utf8")).toBe("v2\n");

    const repeated = await thrown(sdk.fileChanges.revert(third!.id));
    expect(isFoyaApiError(repeated)).toBe(true);
    expect(repeated).toMatchObject({ status: 409, code: expect.any(String), message: expect.any(String) });

    // andLater: the creation and everything after it still standing; the file goes away (to the project's trash).
    const rest = await sdk.fileChanges.revert(created!.id, { andLater: true });
    expect(rest.map((change) => change.id).sort()).toEqual([created!.id, second!.id].sort());
    await expect(stat(path.join(workspace, "draft.txt"))).rejects.toThrow();
    expect((await sdk.fileChanges.list(sessionId)).every((change) => change.revertedAt !== null)).toBe(true);
  });

  it("E1: failed calls throw FoyaApiError with the API's status, code and message", async () => {
    const missing = await thrown(sdk.runs.get("run_doesnotexist"));
    expect(missing).toBeInstanceOf(FoyaApiError);
    expect(missing).toMatchObject({ name: "FoyaApiError", status: 404, code: "not_found" });
    const invalid = await thrown(sdk.runs.get("not an id"));
    expect(invalid).toMatchObject({ status: 400, code: "bad_request" });
    const unknownKey = createFoyaClient({ baseUrl, apiKey: "foya_nonsense" });
    expect(await thrown(unknownKey.runs.get("run_doesnotexist"))).toMatchObject({ status: 401 });
    // The stream does not retry what waiting cannot fix.
    expect(await thrown(unknownKey.events.stream("ses_doesnotexist").next())).toMatchObject({ status: 401 });
  });

  it("E1: webhooks.verify accepts a delivery the service signed and refuses a changed one", async () => {
    const receiver = await startReceiver();
    try {
      // A tenant of its own, so no other test's run reaches this webhook.
      const owner = await env.newTenant("webhooks");
      const client = createFoyaClient({ baseUrl, apiKey: owner.key });
      const created = await client.api.POST("/v1/webhooks", { body: { url: receiver.url, eventTypes: ["run_end"] } });
      if (!created.data) throw new Error(`webhook: ${JSON.stringify(created.error)}`);
      const { secret } = created.data;
      const sessionId = await newSession(client, "auto");
      const run = await client.runs.start(sessionId, script([[{ text: "done" }]]));
      await client.runs.wait(run.id, { timeoutMs: 20_000 });
      await waitFor(async () => receiver.received.length >= 1, 20_000, "the delivery");
      const delivery = receiver.received[0]!;

      const payload = client.webhooks.verify(delivery.body, delivery.headers, secret);
      expect(payload.type).toBe("run_end");
      if (payload.type === "run_end")
        expect(payload.data).toMatchObject({ sessionId, runId: run.id, event: { type: "run_end", status: "completed" } });
      // Header names in any case, or a Headers object, as a server framework hands them over.
      const upper = Object.fromEntries(Object.entries(delivery.headers).map(([name, value]) => [name.toUpperCase(), value]));
      expect(client.webhooks.verify(delivery.body, upper, secret).type).toBe("run_end");
      expect(client.webhooks.verify(delivery.body, new Headers(delivery.headers), secret).type).toBe("run_end");

      expect(() => client.webhooks.verify(delivery.body.replace("completed", "failed"), delivery.headers, secret)).toThrow(
        WebhookVerificationError,
      );
      expect(() => client.webhooks.verify(delivery.body, delivery.headers, `whsec_${btoa("another secret of 24 bytes")}`)).toThrow(
        WebhookVerificationError,
      );
    } finally {
      await receiver.close();
    }
  });
});

describe("@foya/client forks, rewinds and branches", () => {
  const write = (file: string, content: string) => ({ tool: "write", args: { path: file, content } });

  it("E1, W2: fork at a step gives a new session with the history up to it; rewind to a user message, resend, list the branch, read its messages and bring it back", async () => {
    const sessionId = await newSession(sdk, "auto");
    const first = await sdk.runs.start(sessionId, script([[write("a.txt", "one\n")], [{ text: "first" }]]));
    expect((await sdk.runs.wait(first.id, { timeoutMs: 30_000 })).status).toBe("completed");
    const second = await sdk.runs.start(sessionId, script([[write("b.txt", "two\n")], [write("c.txt", "three\n")], [{ text: "second" }]]));
    expect((await sdk.runs.wait(second.id, { timeoutMs: 30_000 })).status).toBe("completed");
    const history = await sdk.sessions.messages(sessionId);

    // Fork after step 0 of the second run: its input, step 0 and its result; nothing of step 1.
    const forked = await sdk.sessions.fork(sessionId, { runId: second.id, stepIndex: 0 });
    expect(forked.session.id).not.toBe(sessionId);
    expect(forked).toMatchObject({ projectId: forked.session.projectId, notUndone: [], checkpointId: expect.any(String) });
    expect(forked.runs.map((run) => [run.from, run.cancelled])).toEqual([
      [first.id, false],
      [second.id, true],
    ]);
    const forkHistory = await sdk.sessions.messages(forked.session.id);
    const secondInput = history.findIndex((message) => message.runId === second.id && message.role === "user");
    expect(forkHistory.map((message) => message.content)).toEqual(history.slice(0, secondInput + 3).map((message) => message.content));
    const forkEvents = (await sdk.events.list(forked.session.id, { limit: 1000 })).events;
    expect(forkEvents.at(-1)).toMatchObject({
      type: "session_forked",
      data: { fromSessionId: sessionId, at: { runOrdinal: 2, stepIndex: 0 } },
    });

    // Edit and resend: back to just before the second run, then a new run in its place.
    const userMessage = history[secondInput]!;
    expect(userMessage.content).toMatchObject({ role: "user" });
    const rewound = await sdk.sessions.rewind(sessionId, { messageId: userMessage.id });
    expect(rewound).toMatchObject({
      restoredBranchId: null,
      notUndone: [],
      branch: { at: { runOrdinal: 1, stepIndex: null }, runIds: [second.id] },
    });
    const resent = await sdk.runs.start(sessionId, script([[{ text: "edited" }]]));
    expect((await sdk.runs.wait(resent.id, { timeoutMs: 30_000 })).status).toBe("completed");
    expect([...new Set((await sdk.sessions.messages(sessionId)).map((message) => message.runId))]).toEqual([first.id, resent.id]);

    const [branch] = await sdk.sessions.branches(sessionId);
    expect(branch).toMatchObject({ id: rewound.branch.id, runIds: [second.id], restoredAt: null, messageCount: 6 });
    const setAside = await sdk.sessions.branchMessages(sessionId, branch!.id);
    expect(setAside.map((message) => message.content)).toEqual(history.slice(secondInput).map((message) => message.content));

    // Bring it back: the second run returns, the resent one is set aside; a branch comes back once.
    const back = await sdk.sessions.rewind(sessionId, { branchId: branch!.id });
    expect(back).toMatchObject({ restoredBranchId: branch!.id, branch: { runIds: [resent.id] } });
    expect([...new Set((await sdk.sessions.messages(sessionId)).map((message) => message.runId))]).toEqual([first.id, second.id]);
    expect(await thrown(sdk.sessions.rewind(sessionId, { branchId: branch!.id }))).toMatchObject({ status: 409, code: "conflict" });
    expect((await sdk.sessions.branches(sessionId)).map((listed) => [listed.id, listed.restoredAt !== null])).toEqual([
      [back.branch.id, false],
      [branch!.id, true],
    ]);
  });

  it("E1, W2: fork, rewind and branches of an unknown session, or a point nothing follows, throw FoyaApiError", async () => {
    expect(await thrown(sdk.sessions.fork("ses_doesnotexist", { stepIndex: 0 }))).toMatchObject({ status: 404, code: "not_found" });
    expect(await thrown(sdk.sessions.branches("ses_doesnotexist"))).toMatchObject({ status: 404 });
    const sessionId = await newSession(sdk, "auto");
    const run = await sdk.runs.start(sessionId, script([[{ text: "only" }]]));
    await sdk.runs.wait(run.id, { timeoutMs: 30_000 });
    expect(await thrown(sdk.sessions.rewind(sessionId, { runId: run.id }))).toMatchObject({ status: 409 });
    expect(await thrown(sdk.sessions.branchMessages(sessionId, "brn_doesnotexist"))).toMatchObject({ status: 404 });
  });
});
