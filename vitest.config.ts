import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Files run side by side in separate processes, each with its own database and queue prefix.
    pool: "forks",
    maxWorkers: 2,
  },
});
