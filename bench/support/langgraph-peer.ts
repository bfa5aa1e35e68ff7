import { access, cp, rename, rm } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { repoRoot } from "./processes.js";

/**
 * The LangGraph peer (`langgraph-peer.mjs` in the shared peers folder): a LangGraph JS
 * agent loop (model node → tool node) with the Postgres checkpointer, a zero-latency
 * scripted model and a no-op tool, durable per superstep. One step = model node + tool
 * node, the same work as one Foya agent step.
 *
 * The peers folder is read-only and has its own dependencies, so it runs from an
 * installed copy outside the repository (`BENCH_PEERS_DIR`, default /tmp/foya-peers).
 * When that copy is missing, `preparePeer` makes it (`cp -r` + `npm ci`, into a
 * temporary folder renamed into place only once the install succeeded).
 */

/** Where the peer runs from, or why it does not. */
export type PeerSetup = { kind: "ready"; dir: string } | { kind: "skipped"; reason: string };

/** What `langgraph-peer.mjs` prints on its last line. */
export interface PeerResult {
  chains: number;
  steps: number;
  stepsPerSec: number;
  /** Per thread, the mean ms per step of the whole invoke; the median over threads. */
  msPerStepInChainP50: number;
  /** From the first invoke's start (after the process's own warm-up) to the last one's end. */
  wallSec: number;
}

const peerScript = "langgraph-peer.mjs";
/** A file only a finished `npm ci` leaves behind. */
const installedMarker = "node_modules/@langchain/langgraph-checkpoint-postgres/package.json";
const installTimeoutMs = 180_000;

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

export async function preparePeer(log: (message: string) => void): Promise<PeerSetup> {
  if (process.env.BENCH_PEER === "skip") return { kind: "skipped", reason: "BENCH_PEER=skip" };
  const dir = path.resolve(process.env.BENCH_PEERS_DIR ?? "/tmp/foya-peers");
  const source = path.resolve(process.env.BENCH_PEERS_SOURCE ?? path.join(repoRoot, "../shared/peers"));

  if (await exists(dir)) {
    if ((await exists(path.join(dir, peerScript))) && (await exists(path.join(dir, installedMarker)))) return { kind: "ready", dir };
    return {
      kind: "skipped",
      reason: `${dir} exists but holds no installed peer (${peerScript} + node_modules); remove it to let the bench install it again`,
    };
  }
  if (!(await exists(path.join(source, peerScript))))
    return { kind: "skipped", reason: `no ${peerScript} in ${source} (set BENCH_PEERS_SOURCE)` };

  log(`installing the LangGraph peer: cp -r ${source} ${dir} && npm ci (needs the npm registry; once)`);
  const staging = `${dir}.installing-${process.pid}`;
  try {
    await cp(source, staging, { recursive: true });
    const install = await execa("npm", ["ci", "--no-audit", "--no-fund", "--fetch-retries=1", "--fetch-timeout=30000"], {
      cwd: staging,
      reject: false,
      all: true,
      timeout: installTimeoutMs,
    });
    if (install.exitCode !== 0 || !(await exists(path.join(staging, installedMarker)))) {
      const why = install.timedOut ? `timed out after ${installTimeoutMs / 1000} s` : `exit code ${install.exitCode}`;
      const errors = String(install.all ?? "")
        .split("\n")
        .filter((line) => line.startsWith("npm error"));
      return { kind: "skipped", reason: `npm ci failed (${why}): ${errors.slice(0, 4).join(" | ") || "no error text"}` };
    }
    await rename(staging, dir);
    return { kind: "ready", dir };
  } catch (error) {
    return { kind: "skipped", reason: `installing the peer failed: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** One process of the peer: `threads` threads (graph invocations) at once, `steps` steps each. */
export function runLangGraphPeer(dir: string, databaseUrl: string, threads: number, steps: number, timeoutMs: number): Promise<PeerResult> {
  return runPeerScript<PeerResult>(dir, databaseUrl, peerScript, [String(threads), String(steps), "sync"], timeoutMs, "the LangGraph peer");
}

/** Runs a script of the installed peer on its database; its last stdout line is its JSON result. */
export async function runPeerScript<T>(
  dir: string,
  databaseUrl: string,
  script: string,
  args: readonly string[],
  timeoutMs: number,
  what: string,
): Promise<T> {
  const result = await execa(process.execPath, [script, ...args], {
    cwd: dir,
    env: { DATABASE_URL: databaseUrl },
    extendEnv: true,
    reject: false,
    all: true,
    timeout: timeoutMs,
  });
  const last =
    String(result.stdout ?? "")
      .trim()
      .split("\n")
      .at(-1) ?? "";
  if (result.exitCode !== 0 || !last.startsWith("{")) {
    const why = result.timedOut ? `timed out after ${timeoutMs} ms` : `exit code ${result.exitCode}`;
    throw new Error(`${what} failed (${why}):\n${String(result.all ?? "").slice(-2000)}`);
  }
  return JSON.parse(last) as T;
}
