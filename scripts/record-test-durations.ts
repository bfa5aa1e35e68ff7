/**
 * Writes test/file-durations.json from Vitest's cache of the last run on this machine (ms per
 * file, rounded), for the longest-first sequencer (test/helpers/longest-first-sequencer.ts) to
 * use where no cache exists, as in CI's fresh clone. Run it after a full `npm test`.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const cacheRoot = path.join("node_modules", ".vite", "vitest");
const durations: Record<string, number> = {};
for (const dir of readdirSync(cacheRoot)) {
  const file = path.join(cacheRoot, dir, "results.json");
  let parsed: { results?: Array<[string, { duration?: number }]> };
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    continue;
  }
  for (const [key, value] of parsed.results ?? []) {
    const relative = key.slice(key.indexOf(":") + 1);
    if (typeof value.duration === "number" && value.duration > 0) durations[relative] = Math.round(value.duration);
  }
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(path.join("test", "file-durations.json"), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`${Object.keys(sorted).length} files recorded in test/file-durations.json`);
