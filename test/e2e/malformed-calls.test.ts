import { describe, expect, it } from "vitest";
import { script } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { useTestEnv } from "../helpers/test-env.js";

const { env, client } = useTestEnv({ worker: true });

// Each raw argument string goes to `read` ({ path: string, offset?: int>=1, limit?: int }, no extra fields).
const malformed: Array<[label: string, raw: string, code: string, mentions: RegExp]> = [
  ["not JSON", '{"path": "a.txt"', "invalid_arguments", /not valid JSON/],
  ["not an object", '["a.txt"]', "invalid_arguments", /must be object/],
  ["wrong type", '{"path": 42}', "invalid_arguments", /\/path must be string/],
  ["missing field", '{"offset": 2}', "invalid_arguments", /must have required property 'path'/],
  ["extra field", '{"path": "a.txt", "mode": "fast"}', "invalid_arguments", /must NOT have additional properties/],
  ["out of range", '{"path": "a.txt", "offset": 0}', "invalid_arguments", /\/offset must be >= 1/],
  ["huge string", JSON.stringify({ path: "x".repeat(300_000) }), "invalid_arguments", /path.*4096 characters/],
  ["NUL character", '{"path": "a\u0000b"}', "file_not_found", /No file/],
  ["unpaired surrogate", '{"path": "\ud800.txt"}', "file_not_found", /No file/],
];

describe("malformed tool calls", () => {
  it("T4, T5: each malformed call gets an is_error result naming what was wrong; nothing crashes and the run completes", async () => {
    const { sessionId } = await client.newSession();
    const run = await client.startRun(
      sessionId,
      script([
        [{ text: "odd \u0000 text \ud800 here" }, ...malformed.map(([, argsRaw]) => ({ tool: "read", argsRaw, chunks: 3 }))],
        [{ text: "recovered" }],
      ]),
    );
    const done = await client.waitForRun(run.body.id, 30_000);
    expect(done.status).toBe("completed");
    const calls = await env.query<{ status: string; error_code: string; result: Array<{ text: string }> }>(
      "select status, error_code, result from tool_calls where run_id = $1 order by call_index",
      [run.body.id],
    );
    for (const [index, [label, , code, mentions]] of malformed.entries()) {
      expect(calls[index]!.status, label).toBe("failed");
      expect(calls[index]!.error_code, label).toBe(code);
      expect(calls[index]!.result[0]!.text, label).toMatch(mentions);
    }
    const messages = await client.messages(sessionId);
    expectValidHistory(messages);
    // Characters Postgres cannot store became U+FFFD; everything else is kept.
    expect(messages[1].content.text).toBe("odd \uFFFD text \uFFFD here");
    expect(messages.at(-1).content.text).toBe("recovered");
  });

  it("rejects input text Postgres cannot store with a 400", async () => {
    const { sessionId } = await client.newSession();
    for (const input of ["a\u0000b", "lonely \ud800"]) {
      const response = await client.startRun(sessionId, input);
      expect(response.status).toBe(400);
      expect(response.body.error.message).toMatch(/NUL characters or unpaired surrogates/);
    }
  });
});
