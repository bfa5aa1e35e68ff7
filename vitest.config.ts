import { defineConfig } from "vitest/config";

/**
 * Two projects: `unit` (`*.unit.test.ts`: no Postgres or Redis, seconds, the inner loop with
 * `npm run test:unit`) and `integration` (everything else, on the real Postgres, Redis, BullMQ
 * workers and processes the global setup finds). `npm test` runs both.
 */
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run side by side in separate processes, each with its own database and queue prefix.
    pool: "forks",
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: "unit", include: ["test/**/*.unit.test.ts"] } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.unit.test.ts"],
          globalSetup: ["test/global-setup.ts"],
        },
      },
    ],
  },
});
