import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTempBudget, type TempShare } from "../../src/sandbox/temp-budget.js";

const root = mkdtempSync(path.join(tmpdir(), "foya-temp-budget-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const mib = 1024 ** 2;
const granted = (share: TempShare | { refused: string }): number => {
  if ("refused" in share) throw new Error(share.refused);
  return share.bytes;
};

describe("a tenant's temporary-space budget on a host", () => {
  it("S7: shares add up to at most the budget: the last gets what is left, down to its minimum, then none; released space comes back", () => {
    const budget = createTempBudget(root);
    const ask = (wantedBytes: number) => budget.reserve({ uid: 4242, wantedBytes, minimumBytes: 16 * mib, budgetBytes: 64 * mib });
    const first = ask(24 * mib);
    const second = ask(24 * mib);
    const third = ask(24 * mib);
    expect([first, second, third].map(granted)).toEqual([24 * mib, 24 * mib, 16 * mib]);
    const fourth = ask(24 * mib);
    expect(fourth).toMatchObject({ refused: expect.stringContaining("its 3 running sandboxes") });
    expect((fourth as { refused: string }).refused).toContain(`hold ${64 * mib} of its ${64 * mib} bytes`);
    // Another tenant's budget is its own.
    expect(granted(budget.reserve({ uid: 4343, wantedBytes: 24 * mib, minimumBytes: 16 * mib, budgetBytes: 64 * mib }))).toBe(24 * mib);
    // A sandbox that wants less than the minimum gets it whole or not at all.
    expect(granted(ask(0))).toBe(0);
    (first as TempShare).release();
    (first as TempShare).release();
    expect(granted(ask(48 * mib))).toBe(24 * mib);
    // Two budgets on one folder (two worker processes of a host) see each other's shares.
    expect(createTempBudget(root).reserve({ uid: 4242, wantedBytes: 24 * mib, minimumBytes: 1, budgetBytes: 64 * mib })).toMatchObject({
      refused: expect.any(String),
    });
  });

  it("S7: the shares of a worker that is gone (its sandboxes died with it) no longer count, and are removed", () => {
    const folder = path.join(root, hostname(), "5151");
    mkdirSync(folder, { recursive: true });
    // A share held by a pid no process has.
    writeFileSync(path.join(folder, `${60 * mib}.999999999.1.00aa`), "");
    const share = createTempBudget(root).reserve({ uid: 5151, wantedBytes: 60 * mib, minimumBytes: 16 * mib, budgetBytes: 64 * mib });
    expect(granted(share)).toBe(60 * mib);
    expect(readdirSync(folder)).toHaveLength(1);
  });
});
