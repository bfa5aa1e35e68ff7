/**
 * Workspace door benchmark (SPEC S6): what confinement by construction costs
 * per file operation. Against the same files, interleaved so both see the same
 * load, it times the door (`src/workspace`: descriptor walk from a held root,
 * `O_PATH` opens, re-open through /proc/self/fd) and the access the service had
 * before (bench/support/legacy-workspace-access.ts: real-path check, then
 * reopen by name): a 4 KiB read three folders deep, a 4 KiB write with its
 * before and after snapshots, and listing 5,000 files with a glob. No services.
 * Where call layers work (root, overlayfs), also what a `write` call's journal costs
 * (`door-journal.ts`): a journaled write against the same write with its record made after.
 * Results: stdout and bench/results/workspace-door.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import type { CallId, RunId, SessionId, TenantId } from "../src/ids.js";
import { createCallLayers, type CallLayers } from "../src/sandbox/overlay/call-layers.js";
import { recordFileChange } from "../src/tools/file-change.js";
import { doorJournal } from "../src/worker/tool-batch/door-journal.js";
import { compileGlob } from "../src/workspace/glob-pattern.js";
import { openWorkspaceFiles } from "../src/workspace/open-workspace-files.js";
import { legacyList, legacyRead, legacyWrite } from "./support/legacy-workspace-access.js";
import { distribution, ratio, round, roundDistribution, type Distribution } from "./support/stats.js";

const runs = Number(process.argv[2] ?? 2000);
const listRuns = Math.max(5, Math.floor(runs / 100));
const base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bench-door-")));
const workspace = path.join(base, "ws");
const door = openWorkspaceFiles({ root: workspace, trashStaging: path.join(base, "staging"), trash: path.join(base, "trash") });
const content = Buffer.alloc(4096, "x");
const deep = "src/module/part/file.ts";

async function time(operation: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await operation();
  return (performance.now() - start) * 1000;
}

try {
  await mkdir(path.join(workspace, "src", "module", "part"), { recursive: true });
  await writeFile(path.join(workspace, deep), content);
  // 5,000 files in 50 folders, for the listing.
  for (let folder = 0; folder < 50; folder++) {
    await mkdir(path.join(workspace, "tree", `f${folder}`), { recursive: true });
    await Promise.all(
      Array.from({ length: 100 }, (_, file) =>
        writeFile(path.join(workspace, "tree", `f${folder}`, `n${file}.${file % 2 ? "ts" : "md"}`), "x"),
      ),
    );
  }
  const glob = compileGlob("tree/**/*.ts");
  if (!glob.ok) throw new Error(glob.message);
  const doorList = async () => {
    const found: string[] = [];
    await door.walk({ skipFolders: new Set(["node_modules", ".git"]), enter: (folder) => glob.mayMatchUnder(folder) }, (file) => {
      if (glob.matches(file.path)) found.push(file.path);
    });
    if (found.length !== 2500) throw new Error(`door listed ${found.length}`);
  };
  const legacyListing = async () => {
    const found = await legacyList(workspace, "tree/**/*.ts");
    if (found.length !== 2500) throw new Error(`legacy listed ${found.length}`);
  };
  const cases = {
    read: { door: () => door.readFile(deep, { maxBytes: 1 << 20 }), legacy: () => legacyRead(workspace, deep), runs },
    write: {
      door: () => door.update(deep, () => ({ write: content }), { maxBytes: 1 << 20 }),
      legacy: () => legacyWrite(workspace, deep, content),
      runs,
    },
    list: { door: doorList, legacy: legacyListing, runs: listRuns },
  };
  const layering = createCallLayers({ workspacesDir: base, searchPath: process.env.PATH ?? "" });
  const journaled = layering.ok ? journaledWrite(layering.layers) : undefined;
  if (!layering.ok) console.log(`journaled write not measured: ${layering.reason}`);
  const report: Record<string, { doorUs: Distribution; legacyUs: Distribution; ratioP50: number; ratioMean: number }> = {};
  for (const [name, bench] of Object.entries({ ...cases, ...(journaled ? { journaled } : {}) })) {
    const doorTimes: number[] = [];
    const legacyTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      await bench.door();
      await bench.legacy();
    }
    for (let i = 0; i < bench.runs; i++) {
      // Alternate which goes first, so neither always follows the other.
      if (i % 2) {
        doorTimes.push(await time(bench.door));
        legacyTimes.push(await time(bench.legacy));
      } else {
        legacyTimes.push(await time(bench.legacy));
        doorTimes.push(await time(bench.door));
      }
    }
    const doorUs = distribution(doorTimes);
    const legacyUs = distribution(legacyTimes);
    report[name] = {
      doorUs: roundDistribution(doorUs),
      legacyUs: roundDistribution(legacyUs),
      ratioP50: round(ratio(doorUs.p50, legacyUs.p50)),
      ratioMean: round(ratio(doorUs.mean, legacyUs.mean)),
    };
  }
  const row = (name: string, entry: (typeof report)[string]) =>
    `${name.padEnd(28)} ${[entry.doorUs.p50, entry.doorUs.p99, entry.legacyUs.p50, entry.legacyUs.p99].map((v) => v.toFixed(1).padStart(10)).join(" ")} ${`x${entry.ratioP50}`.padStart(8)}`;
  console.log(`workspace door vs the access by name it replaced, ${runs} runs each (${listRuns} for the listing), microseconds`);
  console.log(
    `${"".padEnd(28)} ${["door p50", "door p99", "before p50", "before p99"].map((h) => h.padStart(10)).join(" ")} ${"p50 ratio".padStart(8)}`,
  );
  console.log(row("read 4 KiB, 3 folders deep", report.read!));
  console.log(row("write 4 KiB with snapshots", report.write!));
  console.log(row("list 5,000 files, a glob", report.list!));
  // Here "before" is the same write unjournaled, its record made after it, as a tool did before.
  if (report.journaled) console.log(row("write 4 KiB + record, journal", report.journaled));
  const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(
    path.join(results, "workspace-door.json"),
    `${JSON.stringify({ date: new Date().toISOString(), runs, listRuns, ...report }, null, 2)}\n`,
  );
} finally {
  await rm(base, { recursive: true, force: true });
}

/** A `write` call's door write with its record: journaled (the record made before the place), against made after. */
function journaledWrite(layers: CallLayers) {
  const owner = { tenantId: "ten_b" as TenantId, sessionId: "ses_b" as SessionId, runId: "run_b" as RunId, toolCallId: "cal_b" as CallId };
  const blobs = { put: async (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex") };
  return {
    door: async () => {
      const journal = doorJournal({ layers, workspaceDir: workspace, owner, blobs, onError: (message) => console.error(message) });
      const outcome = await door.update(deep, () => ({ write: content }), { maxBytes: 1 << 20, journal });
      if (outcome.kind !== "written" || !outcome.placedWith) throw new Error("the journal made no record");
      // The call's result is stored: its folder goes.
      layers.recorded(owner.toolCallId);
    },
    legacy: async () => {
      const outcome = await door.update(deep, () => ({ write: content }), { maxBytes: 1 << 20 });
      if (outcome.kind === "written") await recordFileChange({ blobs }, outcome.path, outcome.before, outcome.after);
    },
    runs,
  };
}
