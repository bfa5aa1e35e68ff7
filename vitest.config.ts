import { defineConfig } from "vitest/config";
import { scratchInMemory } from "./test/helpers/scratch-dir.js";

/**
 * Two projects: `unit` (`*.unit.test.ts`: no Postgres or Redis, seconds, the inner loop with
 * `npm run test:unit`) and `integration` (everything else, on the real Postgres, Redis, BullMQ
 * workers and processes the global setup finds). `npm test` runs both.
 */
/** Unit files whose assertions are CPU stretches of the event loop (`test/helpers/cpu-time.ts`). */
const cpuTimed = ["test/gateway/policy-stall.unit.test.ts", "test/gateway/policy-cost.unit.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run side by side in three processes, each file with its own database and queue prefix.
    // Three on two cores: an integration file spends about half its time waiting (process starts,
    // leases, outages, polling), so a third process fills the cores a second one leaves idle.
    pool: "forks",
    maxWorkers: 3,
    // A process runs file after file and keeps the modules it has loaded: importing src/ through
    // Vite's module runner costs 1.5-5 s a file, paid once per process instead of once per file
    // (CONTRIBUTING.md, "Where the suite's time goes"). Every file still builds its own
    // environment (database, queue prefix, workspaces, services) and closes it.
    isolate: false,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.unit.test.ts"],
          exclude: cpuTimed,
          env: scratchInMemory(),
          globalSetup: ["test/unit-setup.ts"],
        },
      },
      {
        // Files that assert CPU stretches of the event loop (SPEC S9) get a process of their own: in
        // a shared one, an earlier file's large heap (concurrent marking counts in the process's CPU
        // time) and its leftover callbacks land between two ticks (32 ms measured for 2.5 ms of work).
        extends: true,
        test: {
          name: "unit-timed",
          include: cpuTimed,
          isolate: true,
          env: scratchInMemory(),
          globalSetup: ["test/unit-setup.ts"],
        },
      },
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
