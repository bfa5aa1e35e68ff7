import { randomBytes } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { openDatabase } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";

/**
 * The databases test environments run on. The global setup migrates one template per run; each
 * environment gets a copy of it (`create database … template …`), made ahead of time: while a
 * file's tests run, the copy the next file of the process will use is being made, and a closed
 * environment's database is dropped in the background. A file's setup then waits for neither
 * Postgres's copy nor its migrations (the services still run their migrations at start, with
 * none left to apply). Every database of the run is named `<prefix><hex>`, so the global
 * teardown drops whatever is left (the last copy made ahead, a drop cut short by the end).
 */
export interface RunDatabases {
  adminUrl: string;
  template: string;
  /** Every database of the run starts with it. */
  prefix: string;
}

/** Made once by the global setup: the run's template, migrated by the services' own migration function. */
export async function createRunDatabases(adminUrl: string, repoRoot: string): Promise<RunDatabases> {
  const prefix = `foya_test_${randomBytes(3).toString("hex")}_`;
  const template = `${prefix}template`;
  await adminQuery(adminUrl, `create database ${template}`);
  const handle = openDatabase(urlOf(adminUrl, template));
  try {
    await runMigrations(handle, path.join(repoRoot, "drizzle"));
  } finally {
    // Postgres copies a database only while nobody is connected to it.
    await handle.close();
  }
  return { adminUrl, template, prefix };
}

/** Drops every database of the run, the template last. */
export async function dropRunDatabases({ adminUrl, template, prefix }: RunDatabases): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ name: string }>(
      "select datname as name from pg_database where starts_with(datname, $1) and datname <> $2",
      [prefix, template],
    );
    for (const { name } of rows) await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`drop database if exists ${template} with (force)`);
  } finally {
    await admin.end();
  }
}

/** This process's copy made ahead, for the next environment. */
let ahead: Promise<string> | undefined;

/** A new database for one environment: answers its URL. */
export async function takeDatabase(run: RunDatabases): Promise<{ name: string; url: string }> {
  const mine = ahead ?? copyTemplate(run);
  const next = copyTemplate(run);
  ahead = next;
  // A copy made ahead that failed is not handed out: the next taker makes its own.
  next.catch(() => {
    if (ahead === next) ahead = undefined;
  });
  const name = await mine;
  return { name, url: urlOf(run.adminUrl, name) };
}

/** Drops an environment's database without waiting for it; what the end cuts short, the global teardown drops. */
export function dropDatabase(run: RunDatabases, name: string): void {
  adminQuery(run.adminUrl, `drop database if exists ${name} with (force)`).catch(() => {});
}

async function copyTemplate(run: RunDatabases): Promise<string> {
  const name = `${run.prefix}${randomBytes(5).toString("hex")}`;
  await adminQuery(run.adminUrl, `create database ${name} template ${run.template}`);
  return name;
}

function urlOf(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}
