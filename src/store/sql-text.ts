import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type pg from "pg";
import type { Database } from "../db/client.js";

/**
 * Statements of the hot path are written as text once, at load, and run as
 * named prepared statements (`named-sql.ts`): Postgres parses and plans each once per
 * connection, and no query builder runs per step. Every table and column name
 * in them comes from the drizzle schema through these helpers, so renaming a
 * schema field fails the type check and renaming a column follows it.
 */

/** A column's quoted name. */
export function col(column: PgColumn): string {
  return `"${column.name}"`;
}

/** A table's quoted name. */
export function tbl(table: Table): string {
  return `"${getTableName(table)}"`;
}

/**
 * A select list giving a table's row in its drizzle shape (`$inferSelect`):
 * each column under its field name, 53-bit bigints as numbers; `alias` qualifies the columns.
 */
export function rowOf(table: Table, alias?: string): string {
  return Object.entries(getTableColumns(table))
    .map(([field, column]) => {
      const value = `${alias ? `${alias}.` : ""}"${column.name}"`;
      return `${column.columnType === "PgBigInt53" ? `${value}::float8` : value} as "${field}"`;
    })
    .join(", ");
}

/** A connection or a pool: what a statement runs on. Inside a transaction, its client. */
export type Queryable = Pick<pg.PoolClient, "query">;

/**
 * A row that came back as JSON (`to_jsonb(t)` inside an aggregate) in its
 * drizzle shape: keys by field name, timestamps as dates.
 */
export function rowFromJson<T extends Table>(table: T, json: Record<string, unknown>): T["$inferSelect"] {
  const row: Record<string, unknown> = {};
  for (const { field, name, isDate } of jsonFields(table)) {
    const value = json[name];
    row[field] = value !== null && value !== undefined && isDate ? new Date(value as string) : (value ?? null);
  }
  return row as T["$inferSelect"];
}

/** Per table, once: each field's column name and whether it holds a date (the hot path maps rows per claim). */
const fieldsOfTables = new WeakMap<Table, Array<{ field: string; name: string; isDate: boolean }>>();

function jsonFields(table: Table): Array<{ field: string; name: string; isDate: boolean }> {
  let fields = fieldsOfTables.get(table);
  if (!fields) {
    fields = Object.entries(getTableColumns(table)).map(([field, column]) => ({
      field,
      name: column.name,
      isDate: column.dataType === "date",
    }));
    fieldsOfTables.set(table, fields);
  }
  return fields;
}

/** A SQL list of string literals from a constant list (state-machine statuses): `'a', 'b'`. */
export function literals(values: readonly string[]): string {
  return values.map((value) => `'${value.replace(/'/g, "''")}'`).join(", ");
}

/** The connection (or pool) under a drizzle handle, for a prepared statement in the same transaction. */
export function clientOf(db: Database): Queryable {
  return (db as unknown as { $client: Queryable }).$client;
}
