import { describe, expect, it } from "vitest";
import type { SessionId, TenantId } from "../../../src/ids.js";
import type { HistoryEntry } from "../../../src/store/messages.js";
import { historyOrigin } from "../../../src/store/runs.js";
import { createHistoryCache, type HistoryReads } from "../../../src/worker/step/history-cache.js";

/** These paths never read Postgres: a read would mean the copy was not used. */
const noReads: HistoryReads = {
  loadHistory: () => {
    throw new Error("the history copy read Postgres");
  },
};

function userMessage(runOrdinal: number, text: string): HistoryEntry {
  return { message: { role: "user", text }, position: { runOrdinal, stepIndex: -1, part: 0, callIndex: 0 } };
}

describe("a worker's history copies", () => {
  it("D1: a copy grows by what the claim read, and is never shared across tenants", async () => {
    const cache = createHistoryCache();
    const run: { tenantId: TenantId; sessionId: SessionId; ordinal: number } = { tenantId: "ten_a", sessionId: "ses_1", ordinal: 1 };
    const first = userMessage(1, "hello");
    expect(await cache.extend(noReads, run, { after: historyOrigin, epoch: 0 }, [first])).toEqual([first]);
    expect(cache.after(run)).toEqual(first.position);
    const second = userMessage(2, "again");
    expect(await cache.extend(noReads, { ...run, ordinal: 2 }, { after: first.position, epoch: 0 }, [second])).toEqual([first, second]);
    expect(cache.after({ tenantId: "ten_b", sessionId: "ses_1" })).toEqual(historyOrigin);
  });

  it("D1: copies stay within the memory budget, and a history larger than it is not kept", async () => {
    const cache = createHistoryCache({ maxChars: 1_000 });
    const big = userMessage(1, "x".repeat(600));
    await cache.extend(noReads, { tenantId: "ten_a", sessionId: "ses_1", ordinal: 1 }, { after: historyOrigin, epoch: 0 }, [big]);
    await cache.extend(noReads, { tenantId: "ten_a", sessionId: "ses_2", ordinal: 1 }, { after: historyOrigin, epoch: 0 }, [big]);
    // The second pushed the first out: together they exceed the budget.
    expect(cache.after({ tenantId: "ten_a", sessionId: "ses_1" })).toEqual(historyOrigin);
    expect(cache.after({ tenantId: "ten_a", sessionId: "ses_2" })).toEqual(big.position);
    const huge = userMessage(1, "y".repeat(2_000));
    await cache.extend(noReads, { tenantId: "ten_a", sessionId: "ses_3", ordinal: 1 }, { after: historyOrigin, epoch: 0 }, [huge]);
    expect(cache.after({ tenantId: "ten_a", sessionId: "ses_3" })).toEqual(historyOrigin);
  });

  it("W2: after a rewind (a new history epoch) the copy is read again whole, not extended", async () => {
    const cache = createHistoryCache();
    const run: { tenantId: TenantId; sessionId: SessionId; ordinal: number } = { tenantId: "ten_a", sessionId: "ses_1", ordinal: 3 };
    const kept = userMessage(1, "kept");
    const setAside = userMessage(2, "set aside by the rewind");
    await cache.extend(noReads, run, { after: historyOrigin, epoch: 0 }, [kept, setAside]);
    const next = userMessage(3, "after the rewind");
    const reads: HistoryReads = { loadHistory: async () => [kept, next] };
    // The claim read after the stale copy's end; what it read is not enough and is not used.
    expect(await cache.extend(reads, run, { after: setAside.position, epoch: 1 }, [next])).toEqual([kept, next]);
    expect(await cache.extend(noReads, { ...run, ordinal: 4 }, { after: next.position, epoch: 1 }, [])).toEqual([kept, next]);
  });
});
