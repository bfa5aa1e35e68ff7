import { randomBytes } from "node:crypto";
import { statfsSync } from "node:fs";
import path from "node:path";

const tmpfsMagic = 0x01021994;
const enough = 1024 ** 3;

/**
 * The environment that puts the unit tests' scratch folders (`os.tmpdir()`) in memory: a folder
 * of this run under `/dev/shm` when that is a tmpfs with a GiB free, unless TMPDIR is set
 * already. The unit tests that build thousands of files (trash paging, tree removal) spend most
 * of their time in the file system's metadata writes, ten times slower on a virtual disk than in
 * memory; what they check does not depend on the file system. The integration tests keep the
 * disk: their sandboxes bind the workspaces, and their limits (disk fillers) are measured there.
 * test/unit-setup.ts makes the folder and removes it after the run.
 */
export function scratchInMemory(): Record<string, string> {
  if (process.env.TMPDIR) return {};
  try {
    const stats = statfsSync("/dev/shm");
    if (stats.type !== tmpfsMagic || stats.bavail * stats.bsize < enough) return {};
  } catch {
    return {};
  }
  return { TMPDIR: path.join("/dev/shm", `foya-unit-${randomBytes(5).toString("hex")}`) };
}
