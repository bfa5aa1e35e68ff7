import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files.js";

/**
 * Callers hold the Store object, never the key to the database: no signature declared outside
 * src/store (and src/db) names drizzle's `Database`, a `DbExecutor`, a pg `Queryable`, the pool,
 * a connection or the handles a repository is bound to. The dependency rule
 * `no-raw-database-handles-outside-the-store` (.dependency-cruiser.cjs) forbids importing them;
 * this reads the declarations themselves (parsed, not type-checked), so a type reached another
 * way (`Services["db"]`, `pg.Pool`) is caught too.
 */

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Forbidden by name; any type of `pg` (`pg.Pool`, `pg.PoolClient`) is too. */
const forbidden = new Set(["Database", "DbExecutor", "Queryable", "DbHandle", "PoolClient", "NodePgDatabase", "Handles"]);

/** Where those types live: the store, and the schema, client and migrations under it. */
const owners = /^src\/(store|db)\//;

/** Where a forbidden name appears in a type of a declaration: parameters, results, properties, aliases. */
function forbiddenTypeNames(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const inType = (node: ts.Node): void => {
    if (ts.isTypeReferenceNode(node)) {
      const pgType = ts.isQualifiedName(node.typeName) && node.typeName.left.getText() === "pg";
      const name = ts.isQualifiedName(node.typeName) ? node.typeName.right.text : node.typeName.text;
      if (pgType || forbidden.has(name))
        found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.getText()}`);
    }
    if (ts.isIndexedAccessTypeNode(node) && /^["']db["']$/.test(node.indexType.getText())) {
      found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.getText()}`);
    }
    if (ts.isLiteralTypeNode(node) && node.getText() === '"db"' && node.parent && ts.isUnionTypeNode(node.parent)) {
      found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} Pick of "db"`);
    }
    ts.forEachChild(node, inType);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isTypeNode(node)) return inType(node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("the store is the one door to Postgres", () => {
  it("D2: no signature outside src/store names a database handle, a connection or the pool", async () => {
    const found: string[] = [];
    for (const file of await sourceFiles(path.join(repoRoot, "src"))) {
      const relative = path.relative(repoRoot, file);
      if (owners.test(relative)) continue;
      found.push(...forbiddenTypeNames(relative, await readFile(file, "utf8")));
    }
    expect(found).toEqual([]);
  });

  it("D2: the check finds such a type wherever a declaration carries it", () => {
    const found = forbiddenTypeNames(
      "x.ts",
      `export function a(db: Database): void {}
       export interface B { on: Queryable; handle: Services["db"] }
       type C = Pick<Services, "config" | "db">;
       const d = (pool: pg.Pool): Promise<pg.PoolClient> => pool.connect();
       export function e(store: Pick<Store, "runs">, tx: StoreTx): void {}`,
    );
    expect(found.map((line) => line.split(" ").slice(1).join(" "))).toEqual([
      "Database",
      "Queryable",
      'Services["db"]',
      'Pick of "db"',
      "pg.Pool",
      "pg.PoolClient",
    ]);
  });
});
