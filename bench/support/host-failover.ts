import { stat } from "node:fs/promises";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type pg from "pg";
import type { SessionId } from "../../src/ids.js";
import type { BenchHosts } from "./bench-hosts.js";
import type { FoyaDriver } from "./foya-driver.js";
import { type MixedWorkspace, populateMixedWorkspace } from "./mixed-workspace.js";
import { round } from "./stats.js";

/**
 * A project moved off a dead host (SPEC W3), timed from Postgres. The project's workspace is made
 * directly in its host's copy after a read-only first turn (no checkpoint yet), and its second
 * turn, a `write`, closes with the checkpoint that walks and stores all of it. Then, each time:
 *
 *   1. the host holding the project is SIGKILLed (its only worker) and, at once, a run of one
 *      `read` call starts. Its model step runs on the surviving host; its batch goes to the dead
 *      host's queue, since that host counts as live until its liveness record is
 *      FOYA_LIVENESS_TIMEOUT_MS old;
 *   2. the survivor's death watch marks the worker lost and releases the host's placements in one
 *      transaction (`workers.stopped_at`), and enqueues the batch again, which places the project
 *      on the survivor (`project_placements.placed_at`);
 *   3. the survivor claims the batch, and its claim statement marks the call `running`
 *      (`tool_update`): the claim comes before the rebuild, so that mark is not the tool's start;
 *   4. it rebuilds the workspace from the latest checkpoint (`workspace_restored`, reason `moved`);
 *   5. the call runs on the rebuilt copy (`tool_end`; the `read` of one 10 KB file takes a few ms,
 *      so this is the tool's start within those).
 *
 * No `run_status recovering` here: the dead worker held no run. The killed host then comes back
 * on an emptied root (a replaced machine) before the next kill, which hits the survivor: the
 * project goes back and forth, rebuilt from the same checkpoint every time.
 */
export interface FailoverSample {
  victim: string;
  survivor: string;
  /** Kill → the dead worker's record was last renewed before this (negative: before the kill). */
  lastRenewalMs: number;
  /** Kill → worker marked lost, placements released (one transaction). */
  detectedMs: number;
  /** Kill → project placed on the survivor, batch enqueued there. */
  placedMs: number;
  /** Kill → the survivor's claim of the batch, which marks its call `running` (before the rebuild). */
  claimedMs: number;
  /** Kill → `workspace_restored` (reason `moved`) committed: the copy rebuilt. */
  restoredMs: number;
  /** Kill → the call's `tool_end`: it ran on the rebuilt copy. */
  callEndedMs: number;
  restoredFiles: number;
  epoch: number;
}

export interface FailoverProject {
  sessionId: SessionId;
  projectId: string;
  tenantId: string;
  workspace: MixedWorkspace;
  checkpoint: { seq: number; entries: number; fileBytes: number; files: number };
  /** The second turn, whose batch took the first checkpoint (the whole tree hashed and stored). */
  firstCheckpointTurnMs: number;
}

interface FailoverContext {
  driver: FoyaDriver;
  sql: pg.Pool;
  hosts: BenchHosts;
  timeoutMs: () => number;
  log: (message: string) => void;
}

const script = (calls: unknown[]) => JSON.stringify({ script: [calls, [{ text: "done" }]] });

async function turn(context: FailoverContext, sessionId: SessionId, calls: unknown[]): Promise<{ runId: string; ms: number }> {
  const [record] = await context.driver.runAll([sessionId], 1, context.timeoutMs(), script(calls));
  if (record?.endStatus !== "completed") throw new Error(`a failover turn ended ${record?.endStatus}`);
  const statuses = await context.sql.query<{ status: string }>("select status from tool_calls where run_id = $1", [record.runId]);
  if (statuses.rows.length !== calls.length || statuses.rows.some((row) => row.status !== "succeeded"))
    throw new Error(`run ${record.runId}'s calls: ${JSON.stringify(statuses.rows)}`);
  return { runId: record.runId, ms: record.endedAt - record.requestedAt };
}

async function placementOf(sql: pg.Pool, projectId: string): Promise<{ hostId: string | null; epoch: number; placedAt: number }> {
  const { rows } = await sql.query<{ host_id: string | null; epoch: number; placed_at: number }>(
    "select host_id, epoch::int as epoch, extract(epoch from placed_at) * 1000 as placed_at from project_placements where project_id = $1",
    [projectId],
  );
  const row = rows[0];
  if (!row) throw new Error(`project ${projectId} was never placed`);
  return { hostId: row.host_id, epoch: row.epoch, placedAt: Number(row.placed_at) };
}

/** A project with a workspace of `files` files and about `totalBytes`, checkpointed whole. */
export async function prepareFailoverProject(
  context: FailoverContext,
  size: { files: number; totalBytes: number },
): Promise<FailoverProject> {
  const { sql, log } = context;
  const [sessionId] = await context.driver.createSessions(1);
  if (!sessionId) throw new Error("no session");
  const projectId = context.driver.projectId;
  // A read-only batch places the project and makes its folder, and takes no checkpoint.
  await turn(context, sessionId, [{ tool: "noop", args: {} }]);
  const placement = await placementOf(sql, projectId);
  const host = context.hosts.live.get(placement.hostId ?? "");
  if (!host) throw new Error(`placed on ${placement.hostId}, which is not a live host`);
  const { rows } = await sql.query<{ tenant_id: string }>("select tenant_id from projects where id = $1", [projectId]);
  const tenantId = rows[0]?.tenant_id ?? "";
  const folder = path.join(host.root, tenantId, projectId);
  if (!(await stat(folder).catch(() => undefined))?.isDirectory()) throw new Error(`no workspace folder at ${folder}`);
  const made = performance.now();
  const workspace = populateMixedWorkspace(folder, size);
  log(
    `failover project on ${host.id}: ${workspace.files} files, ${round(workspace.bytes / 1e6)} MB (${round(workspace.smallest / 1e3)} KB to ${round(workspace.largest / 1e6)} MB) written in ${Math.round(performance.now() - made)} ms`,
  );
  // With no checkpoint before it, the batch's checkpoint walks the folder: every file is hashed and stored.
  const second = await turn(context, sessionId, [{ tool: "write", args: { path: "notes.txt", content: "a file the model wrote\n" } }]);
  const checkpoints = await sql.query<{ seq: number; entry_count: number; file_bytes: string }>(
    "select seq, entry_count, file_bytes::text as file_bytes from workspace_checkpoints where project_id = $1 order by seq desc limit 1",
    [projectId],
  );
  const latest = checkpoints.rows[0];
  if (!latest || Number(latest.file_bytes) < workspace.bytes)
    throw new Error(`the checkpoint does not hold the workspace's content: ${JSON.stringify(latest)}`);
  log(
    `first checkpoint: seq ${latest.seq}, ${latest.entry_count} entries, ${round(Number(latest.file_bytes) / 1e6)} MB, in a turn of ${Math.round(second.ms)} ms`,
  );
  return {
    sessionId,
    projectId,
    tenantId,
    workspace,
    checkpoint: { seq: latest.seq, entries: latest.entry_count, fileBytes: Number(latest.file_bytes), files: workspace.files + 1 },
    firstCheckpointTurnMs: round(second.ms),
  };
}

/** One failover: the project's host killed, the next batch timed to its call running elsewhere; the host then replaced. */
export async function measureFailover(context: FailoverContext, project: FailoverProject): Promise<FailoverSample> {
  const { sql, hosts } = context;
  const before = await placementOf(sql, project.projectId);
  const victim = hosts.live.get(before.hostId ?? "");
  if (!victim) throw new Error(`the project is placed on ${before.hostId}, which is not a live host`);
  const survivor = [...hosts.live.values()].find((host) => host !== victim);
  if (!survivor) throw new Error("no other host to move to");

  const killedAt = await hosts.kill(victim.id);
  const { runId } = await turn(context, project.sessionId, [{ tool: "read", args: { path: project.workspace.sampleFile } }]);

  const after = await placementOf(sql, project.projectId);
  if (after.hostId !== survivor.id || after.epoch !== before.epoch + 1)
    throw new Error(`after the kill the project is on ${after.hostId} at epoch ${after.epoch} (before: ${before.hostId}, ${before.epoch})`);
  const worker = await sql.query<{ stop_reason: string | null; stopped_at: number | null; last_seen_at: number }>(
    `select stop_reason, extract(epoch from stopped_at) * 1000 as stopped_at, extract(epoch from last_seen_at) * 1000 as last_seen_at
     from workers where id = $1`,
    [victim.workerId],
  );
  const dead = worker.rows[0];
  if (dead?.stop_reason !== "lost" || dead.stopped_at === null) throw new Error(`the killed worker's record: ${JSON.stringify(dead)}`);
  const events = await sql.query<{ type: string; status: string | null; reason: string | null; files: number | null; at: number }>(
    `select type, data->>'status' as status, data->>'reason' as reason, (data->>'files')::int as files,
       extract(epoch from created_at) * 1000 as at
     from events where run_id = $1 and type in ('workspace_restored', 'tool_update', 'tool_end') order by seq`,
    [runId],
  );
  const claimed = events.rows.find((event) => event.type === "tool_update" && event.status === "running");
  const restored = events.rows.find((event) => event.type === "workspace_restored");
  const ended = events.rows.find((event) => event.type === "tool_end");
  if (!claimed || restored?.reason !== "moved" || !ended || !(claimed.at <= restored.at && restored.at <= ended.at))
    throw new Error(`run ${runId}'s events: ${JSON.stringify(events.rows)}`);
  const since = (at: number | string) => round(Number(at) - killedAt);

  // The dead host is replaced by an empty one before the next kill, which hits the survivor.
  await hosts.start(victim.id, { emptyRoot: true });
  return {
    victim: victim.id,
    survivor: survivor.id,
    lastRenewalMs: since(dead.last_seen_at),
    detectedMs: since(dead.stopped_at),
    placedMs: since(after.placedAt),
    claimedMs: since(claimed.at),
    restoredMs: since(restored.at),
    callEndedMs: since(ended.at),
    restoredFiles: restored.files ?? 0,
    epoch: after.epoch,
  };
}
