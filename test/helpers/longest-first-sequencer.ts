import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Runs the longest test files first, so that the three processes finish together instead of one
 * of them starting a minute-long file last (the suite's wall time is its slowest process's).
 * Vitest orders by the durations it cached on this machine; a fresh clone (CI) has none, so the
 * durations measured on the development machine are kept in test/file-durations.json
 * (`npm run test:durations` writes it from the cache after a full run). A file in neither runs
 * after the known ones, by size as Vitest would.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const recorded = readRecorded(path.join(root, "test", "file-durations.json"));
    const durationOf = (spec: TestSpecification): number | undefined => {
      const relative = path.relative(root, spec.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative}`)?.duration;
      return cached ?? recorded[relative];
    };
    const byDefault = await super.sort(files);
    const position = new Map(byDefault.map((spec, index) => [spec, index]));
    return [...files].sort((a, b) => {
      const da = durationOf(a);
      const db = durationOf(b);
      if (da !== undefined && db !== undefined) return db - da;
      if (da !== undefined) return -1;
      if (db !== undefined) return 1;
      return (position.get(a) ?? 0) - (position.get(b) ?? 0);
    });
  }
}

function readRecorded(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, number>;
  } catch {
    return {};
  }
}
