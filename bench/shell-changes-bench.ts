/**
 * Shell change recording benchmark (SPEC X7): what the layer over the
 * workspace adds to a foreground `bash` call, on a workspace of 10,000 files
 * (100 folders of 100), and on one of 100 files to show it does not grow with
 * the workspace. Each round runs, interleaved so all see the same load:
 *
 * - unrecorded: the command on the workspace itself (the path before X7);
 * - recorded: the same command on a layer (the call's folders made, the
 *   overlay mounted, the upper folder read, both versions of each changed
 *   file kept, the change applied), through the same `createCallProcesses`
 *   path the bash tool uses;
 *
 * for a one-file change (append a line to a file two folders deep) and for
 * `true` (no change). The baseline a manifest approach would pay, an lstat
 * walk of the 10,000-file workspace, is timed alongside.
 *
 * A large layer: a call that rewrote 200,000 files (LARGE_LAYER_FILES), settled while a timer
 * measures how long the event loop was held.
 *
 * Storage: bytes kept in the (content-addressed) blob store per byte the
 * command wrote, for new files and for a one-line edit of a 10 KiB file.
 * Blobs are counted in memory here; the Postgres blob store keeps the same
 * digests. Needs a root worker with bwrap; no services.
 */
import { createHash } from "node:crypto";
import { chownSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { systemSearchPath } from "../src/sandbox/find-executable.js";
import { createCallLayers } from "../src/sandbox/overlay/call-layers.js";
import { defaultProcessLimits } from "../src/core/process-limits.js";
import { createSandbox } from "../src/sandbox/sandbox-runner.js";
import { findServiceDir } from "../src/sandbox/service-dir.js";
import { identityMode, toolIdentity } from "../src/sandbox/tool-identity.js";
import { createCallProcesses } from "../src/tools/shell/create-call-processes.js";
import { settleLayer } from "../src/tools/shell/settle-layer.js";
import { createWorkspaceFolder } from "../src/workspace/project-workspace.js";
import { distribution, round, type Distribution } from "./support/stats.js";

const runs = Number(process.argv[2] ?? 100);
const warmup = 5;
const toolPath = "/usr/local/bin:/usr/bin:/bin";
const workspacesDir = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bench-x7-")));
const identity = toolIdentity(identityMode(1_000_000_000), 90_000_004);
const runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir, servicePaths: [findServiceDir()] });
const support = createCallLayers({ workspacesDir, searchPath: systemSearchPath });
if (!support.ok) throw new Error(`shell changes cannot be recorded here: ${support.reason}`);
const { layers } = support;

/** Blob store stand-in: unique contents by digest, and the bytes they hold. */
const blobs = new Map<string, number>();
const blobStore = {
  async put(content: Buffer) {
    const digest = createHash("sha256").update(content).digest("hex");
    blobs.set(digest, content.length);
    return digest;
  },
};
const storedBytes = () => [...blobs.values()].reduce((sum, size) => sum + size, 0);

async function populate(name: string, folders: number, files: number): Promise<string> {
  const workspace = await createWorkspaceFolder(workspacesDir, ["tenant", name], identity);
  for (let d = 0; d < folders; d++) {
    const folder = path.join(workspace, "src", `d${String(d).padStart(3, "0")}`);
    mkdirSync(folder, { recursive: true });
    for (let f = 0; f < files; f++) writeFileSync(path.join(folder, `f${String(f).padStart(3, "0")}.ts`), `file ${d}/${f}\nline two\n`);
  }
  const chownTree = (at: string) => {
    chownSync(at, identity.uid, identity.gid);
    if (lstatSync(at).isDirectory()) for (const child of readdirSync(at)) chownTree(path.join(at, child));
  };
  chownTree(workspace);
  return workspace;
}

/** One bash call from prepare to the end of its output, recorded or not; answers milliseconds and the records made. */
async function once(workspace: string, command: string, recorded: boolean): Promise<{ ms: number; records: number }> {
  const start = performance.now();
  const processes = createCallProcesses({
    runner,
    toolPath,
    workspaceDir: workspace,
    confinement: { kind: "sandbox", network: false },
    identity,
    limits: defaultProcessLimits,
    layering: recorded
      ? {
          layers,
          workspacesDir,
          owner: { tenantId: "ten_t", sessionId: "ses_s", runId: "run_r", toolCallId: "call_c" },
          onError: (message) => console.error(message),
        }
      : null,
  });
  const prepared = await processes.prepare(command, { headBytes: 4096, tailBytes: 28 * 1024 }, { recordChanges: recorded });
  if ("unavailable" in prepared) throw new Error(prepared.unavailable);
  const end = await prepared.start().ended;
  if (end.kind !== "exited" || end.exitCode !== 0) throw new Error(`${command} ended ${JSON.stringify(end)}`);
  const settled = prepared.layer ? await prepared.layer.settle(blobStore) : null;
  return { ms: performance.now() - start, records: settled?.records.length ?? 0 };
}

/**
 * A call that rewrote `files` files (200,000 of them once froze a worker for 637 s): the layer's
 * upper folder is written directly, as the overlay would have left it, then settled as the call's
 * end does. Measures the settle's wall time and how late a timer due every 10 ms fires meanwhile
 * (what any other request of the process waits at most).
 */
async function largeLayer(files: number): Promise<{ files: number; settleMs: number; worstLatenessMs: number; records: number }> {
  const perFolder = 1000;
  const workspace = await createWorkspaceFolder(workspacesDir, ["tenant", "large"], identity);
  for (let f = 0; f < files; f++) {
    if (f % perFolder === 0) mkdirSync(path.join(workspace, `d${f / perFolder}`));
    writeFileSync(path.join(workspace, `d${Math.floor(f / perFolder)}`, `f${f}`), `before ${f}\n`);
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
  const layer = layers.open(workspace, { tenantId: "ten_t", sessionId: "ses_s", runId: "run_r", toolCallId: "call_large" });
  if (!layer) throw new Error("no layer over the large workspace");
  for (let f = 0; f < files; f++) {
    if (f % perFolder === 0) mkdirSync(path.join(layer.folders.upperDir, `d${f / perFolder}`));
    writeFileSync(path.join(layer.folders.upperDir, `d${Math.floor(f / perFolder)}`, `f${f}`), `after ${f}\n`);
  }
  let worstLatenessMs = 0;
  let due = performance.now() + 10;
  const timer = setInterval(() => {
    const now = performance.now();
    worstLatenessMs = Math.max(worstLatenessMs, now - due);
    due = now + 10;
  }, 10);
  const start = performance.now();
  const settled = await settleLayer(layer, { blobs: blobStore, workspacesDir });
  const settleMs = performance.now() - start;
  clearInterval(timer);
  layers.discard(layer);
  return { files, settleMs: round(settleMs), worstLatenessMs: round(worstLatenessMs), records: settled.records.length };
}

function walk(at: string): number {
  let count = 0;
  for (const name of readdirSync(at)) {
    const inner = path.join(at, name);
    count++;
    if (lstatSync(inner).isDirectory()) count += walk(inner);
  }
  return count;
}

try {
  const tenThousand = await populate("ws10k", 100, 100);
  const small = await populate("ws100", 1, 100);
  const change = "echo changed >> src/d000/f050.ts";
  const variants = [
    { name: "10k: one-file change, unrecorded", workspace: tenThousand, command: change, recorded: false },
    { name: "10k: one-file change, recorded", workspace: tenThousand, command: change, recorded: true },
    { name: "10k: true, unrecorded", workspace: tenThousand, command: "true", recorded: false },
    { name: "10k: true, recorded", workspace: tenThousand, command: "true", recorded: true },
    { name: "100: one-file change, unrecorded", workspace: small, command: change, recorded: false },
    { name: "100: one-file change, recorded", workspace: small, command: change, recorded: true },
  ].map((variant) => ({ ...variant, times: [] as number[] }));
  for (let i = 0; i < warmup; i++) for (const variant of variants) await once(variant.workspace, variant.command, variant.recorded);
  const manifest: number[] = [];
  let entries = 0;
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < variants.length; k++) {
      const variant = variants[(i + k) % variants.length]!;
      const { ms, records } = await once(variant.workspace, variant.command, variant.recorded);
      if (variant.recorded && variant.command === change && records !== 1) throw new Error(`expected one record, got ${records}`);
      variant.times.push(ms);
    }
    const start = performance.now();
    entries = walk(tenThousand);
    manifest.push(performance.now() - start);
  }

  // Storage: new files (100 x 10 KiB), then a one-line edit of a 10 KiB file.
  const storage = await createWorkspaceFolder(workspacesDir, ["tenant", "storage"], identity);
  blobs.clear();
  await once(storage, "mkdir out && for i in $(seq 1 100); do head -c 10240 /dev/urandom > out/f$i; done", true);
  const newFilesBytes = 100 * 10240;
  const storedForNew = storedBytes();
  blobs.clear();
  await once(storage, "sed -i '1s/^/x/' out/f1", true);
  const storedForEdit = storedBytes();

  const large = await largeLayer(Number(process.env.LARGE_LAYER_FILES ?? 200_000));

  const d = Object.fromEntries(variants.map((variant) => [variant.name, distribution(variant.times)])) as Record<string, Distribution>;
  const manifestMs = distribution(manifest);
  const rounded = (x: Distribution) => ({
    count: x.count,
    mean: round(x.mean),
    p50: round(x.p50),
    p90: round(x.p90),
    p99: round(x.p99),
    max: round(x.max),
  });
  const added = (workspace: "10k" | "100", what: "one-file change" | "true") =>
    round((d[`${workspace}: ${what}, recorded`] as Distribution).p50 - (d[`${workspace}: ${what}, unrecorded`] as Distribution).p50);
  const report = {
    date: new Date().toISOString(),
    runsEach: runs,
    workspaceEntries: entries,
    callsMs: Object.fromEntries(Object.entries(d).map(([name, x]) => [name, rounded(x)])),
    addedP50Ms: {
      oneFileChange10k: added("10k", "one-file change"),
      true10k: added("10k", "true"),
      oneFileChange100: added("100", "one-file change"),
    },
    manifestWalk10kMs: rounded(manifestMs),
    largeLayer: large,
    storage: {
      newFiles: { written: newFilesBytes, stored: storedForNew, perChangedByte: round(storedForNew / newFilesBytes) },
      oneLineEditOf10KiB: { changedBytes: 1, fileBytes: 10240, stored: storedForEdit },
    },
  };
  const row = (name: string, x: Distribution) =>
    `${name.padEnd(36)} ${[x.p50, x.p90, x.p99, x.mean].map((v) => v.toFixed(2).padStart(8)).join(" ")}`;
  console.log(`shell change recording (X7), ${runs} runs each, bash call from prepare to applied changes (ms)`);
  console.log(`${"".padEnd(36)} ${["p50", "p90", "p99", "mean"].map((h) => h.padStart(8)).join(" ")}`);
  for (const [name, x] of Object.entries(d)) console.log(row(name, x));
  console.log(row(`manifest walk (${entries} entries)`, manifestMs));
  console.log(
    `recording adds (p50): one-file change on 10,000 files +${report.addedP50Ms.oneFileChange10k} ms, on 100 files +${report.addedP50Ms.oneFileChange100} ms; true +${report.addedP50Ms.true10k} ms`,
  );
  console.log(
    `a call that rewrote ${large.files} files: settled (recorded ${large.records}, applied, the rest to the trash) in ${large.settleMs} ms; a timer due every 10 ms fired at most ${large.worstLatenessMs} ms late meanwhile`,
  );
  console.log(
    `stored: ${storedForNew} bytes for ${newFilesBytes} bytes of new files (${report.storage.newFiles.perChangedByte} per byte); ${storedForEdit} bytes for a one-line edit of a 10 KiB file (both versions, whole)`,
  );
  const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(path.join(results, "shell-changes.json"), `${JSON.stringify(report, null, 2)}\n`);
} finally {
  await rm(workspacesDir, { recursive: true, force: true });
}
