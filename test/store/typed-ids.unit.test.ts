import { describe, expect, it } from "vitest";
import { asId, newId, parseId, type SessionId, type TenantId } from "../../src/ids.js";
import type { Store, StoreTx } from "../../src/store/store.js";

/**
 * Ids typed by their prefix (src/ids.ts). The type-level half compiles only while each marked
 * line is an error: were a swap accepted, its `@ts-expect-error` would be unused and
 * `tsc --noEmit` would fail. The store's types are taken from `Store` itself, so no database runs.
 */

/** `store.sessions.sessionOfTenant(tenantId, sessionId)`: the tenant-scoped read, by position. */
type SessionOfTenant = Parameters<Store["sessions"]["sessionOfTenant"]>;
/** `tx.runs.insertRun({ tenantId, sessionId, input })`: the row a new run is written with, by name. */
type NewRunValues = Parameters<StoreTx["runs"]["insertRun"]>[0];
/** `store.toolCalls.appendCallProgress(owner, …)`: the owner whose ids the named statement `append_call_progress` takes. */
type ProgressOwner = Parameters<Store["toolCalls"]["appendCallProgress"]>[0];
/** `store.runs.readRun(runId)`. */
type ReadRun = Parameters<Store["runs"]["readRun"]>;

const tenantId = newId("ten");
const sessionId = newId("ses");
const runId = newId("run");

describe("typed ids", () => {
  it("D8: a session id is no tenant id, and a store call given the two swapped does not compile", () => {
    const tenantOf = (id: TenantId): TenantId => id;
    // @ts-expect-error a SessionId where a TenantId is expected
    tenantOf(sessionId);
    // @ts-expect-error nor the other way round
    const asSession: SessionId = tenantId;

    const byPosition: SessionOfTenant = [tenantId, sessionId];
    // @ts-expect-error the session's id in the tenant's place and back
    const swappedByPosition: SessionOfTenant = [sessionId, tenantId];

    const byName: NewRunValues = { tenantId, sessionId, input: "hello" };
    const swappedByName: NewRunValues = {
      // @ts-expect-error a SessionId as the run's tenant
      tenantId: sessionId,
      // @ts-expect-error a TenantId as the run's session
      sessionId: tenantId,
      input: "hello",
    };

    const owner: ProgressOwner = { id: runId, fence: 1, tenantId, sessionId };
    // @ts-expect-error the run's owner given the session's id as the run's
    const ownerOfSession: ProgressOwner = { id: sessionId, fence: 1, tenantId, sessionId };

    // The checks are the compiler's; at run time the values are what they were given.
    expect(byPosition).toEqual([tenantId, sessionId]);
    expect([swappedByPosition, swappedByName, asSession, ownerOfSession]).toHaveLength(4);
    expect(byName.tenantId).toBe(tenantId);
    expect(owner.id).toBe(runId);
  });

  it("a plain string is no RunId until parseId or asId checked it", () => {
    const raw: string = runId;
    // @ts-expect-error a string (a path segment, a job's data) where a RunId is expected
    const unchecked: ReadRun = [raw];
    const checked: ReadRun = [asId("run", raw)];
    const parsed = parseId("run", raw);
    // @ts-expect-error parseId answers `RunId | null`: the null (an unknown id) must be handled first
    const unhandled: ReadRun = [parsed];
    expect(checked).toEqual([runId]);
    expect([unchecked, unhandled]).toEqual([[runId], [runId]]);
  });

  it("newId makes an id of its prefix: the prefix, an underscore and 16 URL-safe random characters", () => {
    const made = new Set(Array.from({ length: 100 }, () => newId("call")));
    expect(made.size).toBe(100);
    for (const id of made) expect(id).toMatch(/^call_[A-Za-z0-9_-]{16}$/);
  });

  it("parseId answers an id only for its own prefix and the shape ids have; anything else is null", () => {
    expect(parseId("ses", sessionId)).toBe(sessionId);
    expect(parseId("ses", "ses_s")).toBe("ses_s");
    // Another kind of id, or a prefix without its separator.
    expect(parseId("ten", sessionId)).toBeNull();
    expect(parseId("ses", tenantId)).toBeNull();
    expect(parseId("run", "running_1")).toBeNull();
    expect(parseId("ses", `SES_${sessionId.slice(4)}`)).toBeNull();
    expect(parseId("ses", sessionId.slice(4))).toBeNull();
    // Characters no id has.
    for (const bad of ["ses_a/b", "ses_a b", "ses_a.b", "ses_a%2F", "ses_ä", "ses_a\u0000", "ses_a\n", " ses_a"]) {
      expect(parseId("ses", bad), JSON.stringify(bad)).toBeNull();
    }
    // At most 128 characters.
    const longest = `ses_${"a".repeat(124)}`;
    expect(parseId("ses", longest)).toBe(longest);
    expect(parseId("ses", `${longest}a`)).toBeNull();
    // Not a string.
    for (const notAString of [undefined, null, 42, {}, [sessionId], { id: sessionId }]) {
      expect(parseId("ses", notAString)).toBeNull();
    }
  });

  it("asId answers a well-formed id of its prefix and throws for anything else, naming the prefix and (a bounded part of) the value", () => {
    expect(asId("run", runId)).toBe(runId);
    expect(() => asId("run", sessionId)).toThrow(`not a run id: ${JSON.stringify(sessionId)}`);
    expect(() => asId("run", "run_a/b")).toThrow(/^not a run id/);
    expect(() => asId("run", "")).toThrow('not a run id: ""');
    const long = `run_${"x".repeat(1_000)}`;
    expect(() => asId("run", long)).toThrow(`not a run id: ${JSON.stringify(long.slice(0, 64))}`);
  });
});
