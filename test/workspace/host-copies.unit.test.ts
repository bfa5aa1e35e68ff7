import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ProjectId, TenantId } from "../../src/ids.js";
import { claimHostCopy, createCurrentCopies, hostWorkspacePath } from "../../src/workspace/host-copies.js";

/** A host's copies (SPEC W3): what one process remembers of the copies it found current. */

let root: string;
const ref = { tenantId: "ten_a" as TenantId, projectId: "prj_a" as ProjectId };
const marker = () => path.join(root, ".placements", ref.tenantId, ref.projectId);

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "host-copies-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("claimHostCopy with the process's current copies", () => {
  it("W3: a copy found current for an epoch is current for its next batches without reading the marker; its touch goes out at most once per interval", async () => {
    const known = createCurrentCopies(60_000);
    await mkdir(hostWorkspacePath(root, ref), { recursive: true });
    expect(await claimHostCopy(root, ref, 1, known)).toEqual({ kind: "adopted" });
    // The marker names another epoch now: only a claim that reads it would notice.
    await writeFile(marker(), JSON.stringify({ epoch: 7 }));
    const old = new Date(Date.now() - 3_600_000);
    await utimes(marker(), old, old);
    expect(await claimHostCopy(root, ref, 1, known)).toEqual({ kind: "current" });
    expect((await stat(marker())).mtimeMs).toBeLessThan(Date.now() - 3_000_000);
    // Without the memory, the same claim reads the marker and takes the copy for another placement's.
    expect(await claimHostCopy(root, ref, 1)).toEqual({ kind: "stale" });
  });

  it("W3: a newer epoch is never answered from memory: the copy of the earlier placement is set aside", async () => {
    const known = createCurrentCopies(0);
    await mkdir(hostWorkspacePath(root, ref), { recursive: true });
    await writeFile(path.join(hostWorkspacePath(root, ref), "a.txt"), "earlier");
    expect(await claimHostCopy(root, ref, 1, known)).toEqual({ kind: "adopted" });
    expect(await claimHostCopy(root, ref, 2, known)).toEqual({ kind: "stale" });
    expect(JSON.parse(await readFile(marker(), "utf8"))).toEqual({ epoch: 2 });
    await expect(stat(path.join(hostWorkspacePath(root, ref), "a.txt"))).rejects.toThrow();
    // With no interval the touch goes out every time.
    const old = new Date(Date.now() - 3_600_000);
    await utimes(marker(), old, old);
    expect(await claimHostCopy(root, ref, 2, known)).toEqual({ kind: "current" });
    expect((await stat(marker())).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
  });
});
