import { sql } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { repository } from "./repository.js";

/** `select 1` on the shared pool: readiness (the SPEC's `GET /readyz`) checks that Postgres answers. */
async function pingPostgres(db: Database): Promise<unknown> {
  return db.execute(sql`select 1`);
}

/** `store.health`. */
export const healthRepository = repository({
  db: { pingPostgres },
});
