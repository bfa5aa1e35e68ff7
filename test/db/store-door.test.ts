import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files.js";
import { repoRoot } from "../helpers/test-env.js";

/**
 * One door to Postgres for the durable state machines: runs, steps, tool
 * calls, messages and events are written only by `src/store/`, where each
 * write is a named, guarded function. This guard fails when any other module
 * writes one of those tables, with drizzle's builder or with raw SQL.
 */
const tables = { drizzle: "runs|toolCalls|steps|messages|events", sql: "runs|tool_calls|steps|messages|events" };
const writes = [
  new RegExp(`\\.(?:update|insert|delete)\\(\\s*(?:${tables.drizzle})\\s*\\)`),
  new RegExp(`\\b(?:update|insert\\s+into|delete\\s+from)\\s+"?(?:${tables.sql})"?\\b`, "i"),
];

function writeLines(text: string): string[] {
  return text.split("\n").filter((line) => writes.some((pattern) => pattern.test(line)));
}

describe("the store is the only writer of the state machines", () => {
  it("D2: no module outside src/store/ updates or inserts runs, steps, tool calls, messages or events", async () => {
    const outside: string[] = [];
    for (const file of await sourceFiles(path.join(repoRoot, "src"))) {
      const relative = path.relative(repoRoot, file);
      if (relative.startsWith("src/store/") || relative === "src/db/schema.ts") continue;
      for (const line of writeLines(await readFile(file, "utf8"))) outside.push(`${relative}: ${line.trim()}`);
    }
    expect(outside).toEqual([]);
  });

  it("D2: the store's own statements name tables and columns through the drizzle schema, never as literals", async () => {
    const literal: string[] = [];
    for (const file of await sourceFiles(path.join(repoRoot, "src/store"))) {
      const text = await readFile(file, "utf8");
      const rawWrites = text.split("\n").filter((line) => writes[1]!.test(line));
      for (const line of rawWrites) literal.push(`${path.relative(repoRoot, file)}: ${line.trim()}`);
    }
    expect(literal).toEqual([]);
  });

  it("D2: the guard recognises the writes it forbids (drizzle builder and raw SQL alike)", () => {
    expect(writeLines("await tx.update(runs).set({ status })")).toHaveLength(1);
    expect(writeLines("await db.insert( toolCalls ).values(row)")).toHaveLength(1);
    expect(writeLines("sql`update tool_calls set status = 'running'`")).toHaveLength(1);
    expect(writeLines('`INSERT INTO "events" (seq) values (1)`')).toHaveLength(1);
    expect(writeLines("await tx.update(sessions).set({ tasks })")).toHaveLength(0);
    expect(writeLines("select * from runs where id = $1")).toHaveLength(0);
  });
});
