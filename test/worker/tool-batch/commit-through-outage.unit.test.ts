import { describe, expect, it } from "vitest";
import { commitThroughOutage } from "../../../src/worker/tool-batch/commit-through-outage.js";

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

describe("a tool result's commit through a Postgres outage", () => {
  it("D9: a connection error is tried again until the commit lands; each wait is reported", async () => {
    let attempts = 0;
    const waits: number[] = [];
    const value = await commitThroughOutage(
      async () => {
        attempts++;
        if (attempts < 3) throw refused();
        return "stored";
      },
      { leaseMs: 10_000, onWait: (_error, retryInMs) => waits.push(retryInMs) },
    );
    expect(value).toBe("stored");
    expect(waits).toEqual([250, 500]);
  });

  it("D9: any other error is thrown at once, and a connection error once the lease is over", async () => {
    let attempts = 0;
    const constraint = Object.assign(new Error("duplicate key"), { code: "23505" });
    await expect(
      commitThroughOutage(
        async () => {
          attempts++;
          throw constraint;
        },
        { leaseMs: 10_000, onWait: () => {} },
      ),
    ).rejects.toBe(constraint);
    expect(attempts).toBe(1);

    const waits: number[] = [];
    await expect(
      commitThroughOutage(async () => Promise.reject(refused()), { leaseMs: 600, onWait: (_e, ms) => waits.push(ms) }),
    ).rejects.toThrow("ECONNREFUSED");
    // 250 ms fits in 600, 250 + 500 does not.
    expect(waits).toEqual([250]);
  });
});
