/**
 * Workspace checkpoint benchmark (SPEC W1): what capturing a workspace's tree and rebuilding it
 * costs, on the disk (/tmp, not /dev/shm). A workspace of 10,000 files (about 100 MB, sizes
 * from 2 KB to 18 KB, 100 folders of 100 files two levels deep) is captured with no previous
 * capture ("cold": the page cache is warm, nothing is reused), captured again after one file
 * changed (the fast path: only that file is read), its fresh files read back as blobs, and
 * rebuilt into an empty folder from in-memory blobs, then verified. The budget for a rebuild
 * is 10 s. Each rebuild is timed beside `cp -a` of the same workspace (the disk of a shared
 * machine varies by several times from one run to the next). No services. Not part of
 * `npm run bench` yet.
 *
 * Copies and rebuilds are removed only at the end: this host's disk is mounted with `discard`,
 * and a removal meanwhile slows the next run's writes.
 *
 *     npx tsx bench/checkpoint-tree-bench.ts [runs] [folder, default /tmp]
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { openCapturedFileReader } from "../src/workspace/checkpoint/captured-file-reader.js";
import { racyWindowNs } from "../src/workspace/checkpoint/file-digest.js";
import { materializeTree } from "../src/workspace/checkpoint/materialize.js";
import { captureTree } from "../src/workspace/checkpoint/tree-capture.js";
import type { CapturedTree } from "../src/workspace/checkpoint/tree-entry.js";
import { verifyTree } from "../src/workspace/checkpoint/verify-tree.js";
import { distribution, round } from "./support/stats.js";

const runs = Number(process.argv[2] ?? 5);
const base = await realpath(await mkdtemp(path.join(process.argv[3] ?? "/tmp", "foya-bench-checkpoint-")));
const workspace = path.join(base, "ws");

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

const p50 = (values: number[]) => round(distribution(values).p50);

function buildWorkspace(): number {
  let bytes = 0;
  for (let top = 0; top < 10; top++) {
    for (let inner = 0; inner < 10; inner++) {
      const folder = path.join(workspace, `pkg${top}`, `mod${inner}`);
      mkdirSync(folder, { recursive: true });
      for (let file = 0; file < 100; file++) {
        const size = 2_000 + ((((top * 10 + inner) * 100 + file) * 7919) % 16_000);
        writeFileSync(path.join(folder, `file${file}.ts`), randomBytes(size));
        bytes += size;
      }
    }
  }
  return bytes;
}

try {
  const bytes = buildWorkspace();
  // Files read within the racy window of their last write are read again next time: let them age.
  await sleep(Number(racyWindowNs / 1_000_000n) * 2);

  const cold: number[] = [];
  let capture: CapturedTree | null = null;
  for (let run = 0; run < runs; run++) {
    const { ms, value } = await timed(() => captureTree(workspace));
    cold.push(ms);
    capture = value;
  }
  if (!capture) throw new Error("no capture");

  const warm: number[] = [];
  const hashed: number[] = [];
  for (let run = 0; run < runs; run++) {
    writeFileSync(path.join(workspace, "pkg3", "mod4", `file${run}.ts`), randomBytes(4000));
    const previous: CapturedTree = capture;
    const { ms, value } = await timed(() => captureTree(workspace, { previous }));
    warm.push(ms);
    hashed.push(value.hashed);
    capture = value;
  }

  const full = await captureTree(workspace);
  const blobs = new Map<string, Buffer>();
  const readBack = await timed(async () => {
    const reader = openCapturedFileReader(workspace);
    try {
      for (const entry of full.fresh) blobs.set(entry.sha256, (await reader.read(entry)) as Buffer);
    } finally {
      reader.close();
    }
  });

  const rebuilds: number[] = [];
  const copies: number[] = [];
  const verifies: number[] = [];
  for (let run = 0; run < runs; run++) {
    // Each write run starts with no dirty pages of the one before: otherwise it measures their write-back.
    execFileSync("sync");
    const copy = await timed(async () => execFileSync("cp", ["-a", workspace, path.join(base, `copy-${run}`)]));
    copies.push(copy.ms);
    const target = path.join(base, `rebuilt-${run}`);
    mkdirSync(target);
    execFileSync("sync");
    const rebuilt = await timed(() => materializeTree(target, full.entries, { blob: async (digest) => blobs.get(digest) ?? null }));
    if (!rebuilt.value.ok) throw new Error(`rebuild failed: ${rebuilt.value.message}`);
    rebuilds.push(rebuilt.ms);
    const verified = await timed(() => verifyTree(target, full.entries));
    if (!verified.value.ok) throw new Error("rebuild does not verify");
    verifies.push(verified.ms);
  }

  const report = {
    workspace: { files: 10_000, folders: 110, megabytes: round(bytes / 1e6), folder: path.dirname(base) },
    captureColdMsP50: p50(cold),
    captureOneChangedMsP50: p50(warm),
    filesHashedAfterOneChanged: hashed,
    readFreshBlobsMs: round(readBack.ms),
    materializeMsP50: p50(rebuilds),
    copyMsP50: p50(copies),
    materializeBudgetMs: 10_000,
    verifyMsP50: p50(verifies),
    runs: { cold: cold.map(round), oneChanged: warm.map(round), materialize: rebuilds.map(round), copy: copies.map(round) },
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await rm(base, { recursive: true, force: true });
}
