import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { client } = useTestEnv({ worker: true, overrides: { FOYA_MAX_STEPS_PER_RUN: "2" } });

describe("step limit", () => {
  it("a run that reaches the step limit fails visibly, with every call answered", async () => {
    const { sessionId } = await client.newSession();
    const loop = Array.from({ length: 5 }, () => [{ tool: "noop", args: {} }]);
    const run = await client.startRun(sessionId, script(loop));
    const done = await client.waitForRun(run.body.id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("max_steps_exceeded");
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    expect(messages.filter((m) => m.role === "assistant")).toHaveLength(2);
  });
});
