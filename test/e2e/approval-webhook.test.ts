import { afterAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { readMarkers } from "../fixtures/test-tools.js";
import { script, waitFor } from "../helpers/api-client.js";
import { useTestEnv } from "../helpers/test-env.js";
import { startReceiver, type WebhookReceiver } from "../webhooks/webhook-receiver.js";

const { env, client } = useTestEnv({
  worker: true,
  overrides: { FOYA_WEBHOOK_POLL_MS: "100", FOYA_WEBHOOK_ALLOW_PRIVATE: "true" },
});

let receiver: WebhookReceiver | undefined;
afterAll(async () => receiver?.close());

describe("an approval UI driven by webhooks", () => {
  it("S4: a pending approval is announced by a signed webhook, and the id it carries decides the call", async () => {
    receiver = await startReceiver();
    const hook = await client.post("/v1/webhooks", { url: receiver.url, eventTypes: ["approval_request", "approval_resolved"] });
    expect(hook.status).toBe(201);
    const verifier = new Webhook(hook.body.secret);

    const { sessionId } = await client.newSession({ approvalMode: "manual" });
    const workspace = await env.workspaceOf(sessionId);
    const run = await client.startRun(sessionId, script([[{ tool: "marker_sleep", args: { marker: "via-webhook" } }], [{ text: "done" }]]));

    const request = await waitFor(
      async () => receiver?.received.find((r) => JSON.parse(r.body).type === "approval_request"),
      20_000,
      "the approval webhook",
    );
    const payload = verifier.verify(request.body, request.headers) as {
      type: string;
      data: { sessionId: string; runId: string; event: any };
    };
    expect(payload.data).toMatchObject({ sessionId, runId: run.body.id, event: { type: "approval_request", name: "marker_sleep" } });

    // The UI needs nothing but the webhook: the approval id in it decides the call.
    const decided = await client.post(`/v1/approvals/${payload.data.event.approvalId}`, { decision: "approve", reason: "clicked approve" });
    expect(decided.status).toBe(200);
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    expect(await readMarkers(workspace, "via-webhook")).toHaveLength(1);

    const resolved = await waitFor(
      async () => receiver?.received.find((r) => JSON.parse(r.body).type === "approval_resolved"),
      20_000,
      "the resolution webhook",
    );
    expect((verifier.verify(resolved.body, resolved.headers) as any).data.event).toMatchObject({
      status: "approved",
      approvalId: payload.data.event.approvalId,
    });
  });
});
