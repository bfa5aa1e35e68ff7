import { describe, expect, it } from "vitest";
import type { TenantId } from "../../src/ids.js";
import { budgetKeys } from "../../src/providers/budget/budget-keys.js";

/** The hash tag of a key: what decides its Redis Cluster slot (the first `{...}` with something inside). */
const tagOf = (key: string) => /\{([^}]+)\}/.exec(key)?.[1];

describe("provider budget keys", () => {
  it("PR3, W4: every key of one profile's budget shares the profile's hash tag, so each script touches one slot", () => {
    for (const profile of ["claude", "weird {name}", "a/b:c"]) {
      const keys = budgetKeys("foya", profile);
      const tenant = "ten_1" as TenantId;
      const all = [
        keys.window,
        keys.inflight,
        keys.pause,
        keys.waiting,
        keys.weights,
        keys.stats,
        keys.tenantWindow(tenant),
        keys.tenantInflight(tenant),
      ];
      expect(new Set(all.map(tagOf)), profile).toEqual(new Set([encodeURIComponent(profile)]));
      for (const key of all) expect(key.startsWith("foya:provider:{")).toBe(true);
    }
    expect(tagOf(budgetKeys("foya", "a").window)).not.toBe(tagOf(budgetKeys("foya", "b").window));
  });
});
