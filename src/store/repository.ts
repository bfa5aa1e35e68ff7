import type { Database } from "../db/client.js";
import type { Queryable } from "./sql-text.js";

/**
 * What a repository's statements run on: drizzle's handle (cold paths, the builder) and the pg
 * connection under it (hot paths, prepared statements). On the pool outside a transaction; on
 * one pooled connection inside `store.transaction`.
 */
export interface Handles {
  readonly db: Database;
  readonly pg: Queryable;
}

/** A store function with its handle bound: the same function without its first parameter. */
type Bound<F> = F extends (first: never, ...args: infer A) => infer R ? (...args: A) => R : never;

type OnDatabase = (db: Database, ...args: never[]) => unknown;
type OnConnection = (on: Queryable, ...args: never[]) => unknown;

/** A store module's repository: its functions, each bound to the handles of the store or of one transaction. */
export type Repository<OnDb, OnPg> = { readonly [K in keyof OnDb]: Bound<OnDb[K]> } & { readonly [K in keyof OnPg]: Bound<OnPg[K]> };

/**
 * Declares a store module's repository from its functions: those that take drizzle's handle
 * (`db`) and those that take a connection (`pg`). Binding makes no copy of any statement.
 */
export function repository<
  OnDb extends Record<string, OnDatabase>,
  OnPg extends Record<string, OnConnection> = Record<never, never>,
>(functions: { db?: OnDb; pg?: OnPg }): (on: Handles) => Repository<OnDb, OnPg> {
  const onDb = Object.entries(functions.db ?? {}) as Array<[string, (db: Database, ...args: unknown[]) => unknown]>;
  const onPg = Object.entries(functions.pg ?? {}) as Array<[string, (on: Queryable, ...args: unknown[]) => unknown]>;
  return (on) => {
    const bound: Record<string, (...args: unknown[]) => unknown> = {};
    for (const [name, fn] of onDb) bound[name] = (...args) => fn(on.db, ...args);
    for (const [name, fn] of onPg) bound[name] = (...args) => fn(on.pg, ...args);
    return bound as Repository<OnDb, OnPg>;
  };
}
