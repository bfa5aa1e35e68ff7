/**
 * Sandbox benchmark: the latency the bubblewrap sandbox (SPEC S3, S7, S8)
 * adds to a tool process. The baseline is a bare `bash -c true` spawned with
 * execa (what a tool process cost before every call was confined); against it
 * `true` runs through the spawn path bash uses (`prepareShell`: step down to
 * the tenant's uid, rlimits, bwrap; start, wait for the end and the output)
 * sandboxed without the network, sandboxed with the network (its own
 * namespace connected by slirp4netns before the command starts), and in
 * Full Access (the host view, with the network), and sandboxed in a workspace
 * holding a repository (the command then waits at its gate while the worker
 * protects the repository's git metadata from inside the sandbox,
 * `git-guard.ts`), interleaved so all see the same machine load. Planning
 * (file-system checks, the git walk, the argv) is also timed on its own.
 * Needs bwrap and slirp4netns installed; no services.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import type { Confinement } from "../src/sandbox/confinement.js";
import { defaultProcessLimits } from "../src/core/process-limits.js";
import { createSandbox } from "../src/sandbox/sandbox-runner.js";
import { findServiceDir } from "../src/sandbox/service-dir.js";
import { identityMode, toolIdentity } from "../src/sandbox/tool-identity.js";
import { prepareShell } from "../src/tools/shell/spawn-shell.js";
import { createWorkspaceFolder } from "../src/workspace/project-workspace.js";
import { distribution, round, type Distribution } from "./support/stats.js";

const runs = Number(process.argv[2] ?? 200);
const warmup = 10;
const toolPath = "/usr/local/bin:/usr/bin:/bin";
const workspacesDir = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bench-sandbox-")));
const identity = toolIdentity(identityMode(1_000_000_000), 90_000_003);
const workspace = await createWorkspaceFolder(workspacesDir, ["tenant", "project"], identity);
const withRepository = await createWorkspaceFolder(workspacesDir, ["tenant", "repository"], identity);
await execa("setpriv", [`--reuid=${identity.uid}`, `--regid=${identity.gid}`, "--clear-groups", "git", "init", "-q", withRepository]);
const runner = createSandbox({ bwrapPath: "bwrap", searchPath: toolPath, workspacesDir, servicePaths: [findServiceDir()] });

/** One `true`, from preparing to the end of its output; answers milliseconds. Null: the bare baseline, no confinement at all. */
async function once(confinement: Confinement | null, cwd = workspace): Promise<number> {
  const start = performance.now();
  if (confinement === null) {
    await execa("bash", ["-c", "true"], { cwd, extendEnv: false, env: { PATH: toolPath } });
    return performance.now() - start;
  }
  const prepared = await prepareShell({
    command: "true",
    cwd,
    path: toolPath,
    headBytes: 4096,
    tailBytes: 28 * 1024,
    confinement,
    identity,
    limits: defaultProcessLimits,
    runner,
  });
  if ("unavailable" in prepared) throw new Error(prepared.unavailable);
  const end = await prepared.start().ended;
  if (end.kind !== "exited" || end.exitCode !== 0) throw new Error(`true ended ${JSON.stringify(end)}`);
  return performance.now() - start;
}

try {
  const variants: Array<{ grant: Confinement | null; cwd?: string; times: number[] }> = [
    { grant: null, times: [] },
    { grant: { kind: "sandbox", network: false }, times: [] },
    { grant: { kind: "sandbox", network: true }, times: [] },
    { grant: { kind: "full_access" }, times: [] },
    { grant: { kind: "sandbox", network: false }, cwd: withRepository, times: [] },
  ];
  for (let i = 0; i < warmup; i++) for (const variant of variants) await once(variant.grant, variant.cwd);
  const [plain, sandboxed, networked, fullAccess, gated] = variants.map((variant) => variant.times) as [
    number[],
    number[],
    number[],
    number[],
    number[],
  ];
  const planning: number[] = [];
  // Planning walks the workspace for repositories to protect (SPEC S11): the same on a workspace of 5,000 files in 50 folders.
  const populated = await createWorkspaceFolder(workspacesDir, ["tenant", "populated"], identity);
  for (let folder = 0; folder < 50; folder++) {
    await mkdir(path.join(populated, "src", `f${folder}`), { recursive: true });
    await Promise.all(Array.from({ length: 100 }, (_, file) => writeFile(path.join(populated, "src", `f${folder}`, `n${file}.ts`), "x")));
  }
  const planningPopulated: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Rotate which goes first, so none always follows the same one.
    for (let k = 0; k < variants.length; k++) {
      const variant = variants[(i + k) % variants.length]!;
      variant.times.push(await once(variant.grant, variant.cwd));
    }
    const start = performance.now();
    const plan = await runner.plan({
      command: "true",
      workspaceDir: workspace,
      network: false,
      view: "confined",
      identity,
      limits: defaultProcessLimits,
    });
    planning.push(performance.now() - start);
    // A plan holds a share of the tenant's temporary space until it is released.
    if (plan.ok) plan.release();
    const startPopulated = performance.now();
    const populatedPlan = await runner.plan({
      command: "true",
      workspaceDir: populated,
      network: false,
      view: "confined",
      identity,
      limits: defaultProcessLimits,
    });
    planningPopulated.push(performance.now() - startPopulated);
    if (populatedPlan.ok) populatedPlan.release();
  }
  const rounded = (d: Distribution) => ({
    count: d.count,
    mean: round(d.mean),
    p50: round(d.p50),
    p90: round(d.p90),
    p99: round(d.p99),
    max: round(d.max),
  });
  const unsandboxedMs = distribution(plain);
  const sandboxedMs = distribution(sandboxed);
  const networkedMs = distribution(networked);
  const fullAccessMs = distribution(fullAccess);
  const gatedMs = distribution(gated);
  const planMs = distribution(planning);
  const planPopulatedMs = distribution(planningPopulated);
  const report = {
    date: new Date().toISOString(),
    command: "true",
    runsEach: runs,
    unsandboxedMs: rounded(unsandboxedMs),
    sandboxedMs: rounded(sandboxedMs),
    networkSandboxedMs: rounded(networkedMs),
    fullAccessMs: rounded(fullAccessMs),
    withRepositoryMs: rounded(gatedMs),
    planMs: rounded(planMs),
    planFiveThousandFilesMs: rounded(planPopulatedMs),
    addedP50Ms: round(sandboxedMs.p50 - unsandboxedMs.p50),
    addedP99Ms: round(sandboxedMs.p99 - unsandboxedMs.p99),
    ratioP50: round(sandboxedMs.p50 / unsandboxedMs.p50),
    ratioP99: round(sandboxedMs.p99 / unsandboxedMs.p99),
    /** What connecting the network (slirp4netns) adds over the sandbox without it. */
    networkAddedP50Ms: round(networkedMs.p50 - sandboxedMs.p50),
    networkAddedP99Ms: round(networkedMs.p99 - sandboxedMs.p99),
    /** What protecting a repository's git metadata at the gate adds over the sandbox without one. */
    repositoryAddedP50Ms: round(gatedMs.p50 - sandboxedMs.p50),
    repositoryAddedP99Ms: round(gatedMs.p99 - sandboxedMs.p99),
  };
  const row = (name: string, d: Distribution) =>
    `${name.padEnd(22)} ${[d.p50, d.p90, d.p99, d.mean].map((v) => v.toFixed(2).padStart(8)).join(" ")}`;
  console.log(`sandbox overhead, ${runs} runs each of \`true\` through prepareShell (ms)`);
  console.log(`${"".padEnd(22)} ${["p50", "p90", "p99", "mean"].map((h) => h.padStart(8)).join(" ")}`);
  console.log(row("bare bash (baseline)", unsandboxedMs));
  console.log(row("sandboxed (bwrap)", sandboxedMs));
  console.log(row("  + network (slirp)", networkedMs));
  console.log(row("Full Access", fullAccessMs));
  console.log(row("  with a repository", gatedMs));
  console.log(row("  of which planning", planMs));
  console.log(row("planning, 5,000 files", planPopulatedMs));
  console.log(`added: p50 +${report.addedP50Ms} ms (x${report.ratioP50}), p99 +${report.addedP99Ms} ms (x${report.ratioP99})`);
  console.log(`network added over the sandbox: p50 +${report.networkAddedP50Ms} ms, p99 +${report.networkAddedP99Ms} ms`);
  console.log(`a repository's gate added over the sandbox: p50 +${report.repositoryAddedP50Ms} ms, p99 +${report.repositoryAddedP99Ms} ms`);
  const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(path.join(results, "sandbox.json"), `${JSON.stringify(report, null, 2)}\n`);
} finally {
  await rm(workspacesDir, { recursive: true, force: true });
}
