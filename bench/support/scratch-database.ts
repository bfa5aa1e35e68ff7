import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * A throwaway Postgres database next to the benchmark's own (same server, admin
 * URL from DATABASE_URL or the local default), for a peer that needs one.
 * `drop()` removes it, even with connections still open.
 */
export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

export async function createScratchDatabase(namePrefix: string): Promise<ScratchDatabase> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `${namePrefix}_${randomBytes(5).toString("hex")}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    try {
      await client.connect();
      await client.query(sql);
    } finally {
      await client.end().catch(() => {});
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await admin(`drop database if exists ${name} with (force)`);
    },
  };
}
