import { describe, expect, it } from "vitest";
import { compileNamed, run, statement } from "../../src/store/named-sql.js";

describe("named statements", () => {
  it("compile :name placeholders to $n once, the same name to the same $n, in order of first use", () => {
    const compiled = compileNamed("update t set a = :fence + 1 where id = :runId and f = :fence and j = :job::jsonb");
    expect(compiled.text).toBe("update t set a = $1 + 1 where id = $2 and f = $1 and j = $3::jsonb");
    expect(compiled.order).toEqual(["fence", "runId", "job"]);
  });

  it("leave casts, quoted strings and quoted identifiers alone", () => {
    const compiled = compileNamed(`select '{"a":b}'::jsonb as ":x", 'it''s :not' || :value::text, a[1:2] from "t:y"`);
    expect(compiled.text).toBe(`select '{"a":b}'::jsonb as ":x", 'it''s :not' || $1::text, a[1:2] from "t:y"`);
    expect(compiled.order).toEqual(["value"]);
  });

  it("refuse positional parameters in a named statement", () => {
    expect(() => compileNamed("select $1")).toThrow(/positional/);
  });

  it("send the values in the compiled order and refuse a parameter the object lacks", async () => {
    const seen: unknown[] = [];
    const on = {
      query: async (config: { values?: unknown[] }) => {
        seen.push(config.values);
        return { rows: [] };
      },
    } as never;
    const s = statement<{ runId: string; fence: number | null }>("named_sql_unit_test", "select :fence, :runId, :fence");
    await run(on, s, { runId: "run_1", fence: null });
    expect(seen).toEqual([[null, "run_1"]]);
    await expect(run(on, s, { runId: "run_1" } as never)).rejects.toThrow(/:fence is missing/);
  });
});
