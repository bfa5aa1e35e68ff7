import { describe, expect, it } from "vitest";
import type { SessionId } from "../../src/ids.js";
import { type StatementBatchOptions, statementBatcher } from "../../src/store/statement-batches.js";
import type { Answered, AnswerRequest } from "../../src/store/tool-calls.js";

/**
 * How writes are grouped into statements (`src/store/statement-batches.ts`), here tool results, with
 * `send` standing in for the multi-row statement: what each statement held, in order, and when it may end.
 */

const answerBatcher = (
  send: (requests: readonly AnswerRequest[]) => Promise<Answered[]>,
  options: StatementBatchOptions,
  urgent?: (request: AnswerRequest) => boolean,
) => statementBatcher(send, (request: AnswerRequest) => request.run.sessionId, options, urgent);

function request(session: string, call: string): AnswerRequest {
  return {
    run: { id: `run_${session}`, tenantId: "ten_x", sessionId: session as SessionId, ordinal: 1 },
    call: { id: call, stepIndex: 0, callIndex: 0, callId: call, name: "probe" },
    outcome: { status: "succeeded", isError: false, content: [] },
    step: null,
  } as unknown as AnswerRequest;
}

/** A `send` whose statements end when the test says, recording what each held. */
function statements(fail?: (calls: string[]) => boolean) {
  const sent: string[][] = [];
  const open: Array<() => void> = [];
  const send = (requests: readonly AnswerRequest[]) => {
    const calls = requests.map((one) => one.call.id as string);
    sent.push(calls);
    return new Promise<Answered[]>((done, failed) => {
      open.push(() =>
        fail?.(calls)
          ? failed(new Error(`statement of ${calls.join(",")} failed`))
          : done(calls.map(() => ({ answered: true, handedOff: false, events: [] }))),
      );
    });
  };
  /** Ends the oldest open statement and lets the batcher react. */
  const endOne = async () => {
    open.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { sent, send, endOne, open };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("answers in batches", () => {
  it("D5: an idle batcher sends at once; what arrives while statements are busy goes together, one answer per session, none beside its session's answer in flight", async () => {
    const { sent, send, endOne } = statements();
    const answer = answerBatcher(send, { inFlight: 2, maxRows: 3 });
    const answers = [answer(request("s1", "a"))];
    await turn();
    expect(sent).toEqual([["a"]]);
    answers.push(answer(request("s2", "b")));
    await turn();
    expect(sent).toEqual([["a"], ["b"]]);
    // Both statements busy: these wait. s1 has an answer in flight, so its second waits for it.
    for (const [session, call] of [
      ["s1", "c"],
      ["s3", "d"],
      ["s3", "e"],
      ["s4", "f"],
      ["s5", "g"],
      ["s6", "h"],
    ] as const)
      answers.push(answer(request(session, call)));
    await turn();
    expect(sent).toHaveLength(2);
    await endOne(); // "a" ends: s1 is free again; at most 3 rows, one per session.
    expect(sent[2]).toEqual(["c", "d", "f"]);
    await endOne(); // "b" ends
    expect(sent[3]).toEqual(["g", "h"]);
    await endOne(); // "c d f" ends: s3's second answer may go
    expect(sent[4]).toEqual(["e"]);
    await endOne();
    await endOne();
    expect((await Promise.all(answers)).every((one) => one.answered)).toBe(true);
    expect(sent.flat().sort()).toEqual(["a", "b", "c", "d", "e", "f", "g", "h"]);
  });

  it("D3: a statement that fails is tried one answer at a time: one answer's failure is its own, the rest are stored", async () => {
    // A statement that holds "bad" fails, whatever else it holds.
    const { sent, send, endOne, open } = statements((calls) => calls.includes("bad"));
    const answer = answerBatcher(send, { inFlight: 1, maxRows: 8 });
    const first = answer(request("s0", "first"));
    await turn();
    const later = [answer(request("s1", "ok1")), answer(request("s2", "bad")), answer(request("s3", "ok2"))].map((one) =>
      one.then(
        () => "stored",
        (error: Error) => error.message,
      ),
    );
    await endOne();
    expect(sent.at(-1)).toEqual(["ok1", "bad", "ok2"]);
    await endOne();
    // One statement per answer now.
    while (open.length > 0) await endOne();
    expect(sent.slice(-3)).toEqual([["ok1"], ["bad"], ["ok2"]]);
    await expect(first).resolves.toMatchObject({ answered: true });
    expect(await Promise.all(later)).toEqual(["stored", "statement of bad failed", "stored"]);
  });

  it("D3, X7: a result whose file changes are in the workspace already does not wait: it goes at once as its own statement, beside those in flight, unless its session has one in flight", async () => {
    const { sent, send, endOne } = statements();
    const answer = answerBatcher(send, { inFlight: 1, maxRows: 8 }, (request) => request.call.id.startsWith("changed"));
    const answers = [answer(request("s1", "a"))];
    await turn();
    expect(sent).toEqual([["a"]]);
    // The one statement is busy: a plain result waits, one with file changes goes now.
    answers.push(answer(request("s2", "b")), answer(request("s3", "changed-c")));
    expect(sent).toEqual([["a"], ["changed-c"]]);
    // Its session's answer in flight: it waits like any other.
    answers.push(answer(request("s1", "changed-d")));
    await turn();
    expect(sent).toHaveLength(2);
    for (let i = 0; i < 3; i++) await endOne();
    expect(sent.slice(2)).toEqual([["b", "changed-d"]]);
    expect(sent.flat().sort()).toEqual(["a", "b", "changed-c", "changed-d"]);
    expect((await Promise.all(answers)).every((one) => one.answered)).toBe(true);
  });
});
