import { mkdirSync, rmSync } from "node:fs";
import type { TestProject } from "vitest/node";

/** The unit project's scratch folder (test/helpers/scratch-dir.ts), when it has one: made before the run, removed after it. */
export default function setup(project: TestProject): () => void {
  const scratch = project.config.env.TMPDIR;
  if (!scratch?.startsWith("/dev/shm/foya-unit-")) return () => {};
  mkdirSync(scratch, { mode: 0o700 });
  return () => rmSync(scratch, { recursive: true, force: true });
}
