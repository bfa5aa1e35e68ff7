import { describe, expect, inject, it } from "vitest";
import { openDatabase } from "../../src/db/client.js";
import { loadConfig } from "../../src/config.js";

// The suite's Postgres (global-setup.ts): process.env may hold another test file's settings, as files share a process.
const databaseUrl = inject("databaseUrl");
const idleFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A pool keeps its idle connections for FOYA_DATABASE_IDLE_MS (5 min), not pg's 10 s: a new
 * connection costs Postgres a backend and five fresh plans of each named statement, and a burst of
 * runs after a user's pause met a pool that had closed them all (bench/burst-probe.ts counts them).
 */
describe("a pool's idle connections", () => {
  it("are kept for the configured time, and closed after it", async () => {
    const config = loadConfig({ DATABASE_URL: databaseUrl, FOYA_DATABASE_IDLE_MS: "1000" });
    expect(config.database.idleMs).toBe(1000);
    expect(loadConfig({ DATABASE_URL: databaseUrl }).database.idleMs).toBe(300_000);
    const short = openDatabase(databaseUrl, { idleMs: config.database.idleMs });
    const kept = openDatabase(databaseUrl);
    try {
      await Promise.all([short.pool.query("select 1"), kept.pool.query("select 1")]);
      await idleFor(1600);
      expect(short.pool.totalCount).toBe(0);
      expect(kept.pool.totalCount).toBe(1);
    } finally {
      await Promise.all([short.close(), kept.close()]);
    }
  });
});
