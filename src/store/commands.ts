import { and, asc, eq, inArray, lt, sql, type SQL } from "drizzle-orm";
import type { CommandStatus } from "../core/statuses.js";
import type { Database } from "../db/client.js";
import { commands } from "../db/schema.js";
import { repository } from "./repository.js";
import type { CommandId, RunId, SessionId, TenantId } from "../ids.js";

export type CommandRow = typeof commands.$inferSelect;

/** A command's lease end, `leaseMs` from the statement's time (SPEC B4); the owning worker renews it. */
function commandLease(leaseMs: number): SQL {
  return sql`now() + make_interval(secs => ${leaseMs / 1000})`;
}

/** The bounded view of a command's output as stored (SPEC B2). */
export interface CommandOutput {
  output: string;
  outputBytes: number;
  outputLines: number;
}

/** Writes a running command's output so far and renews its lease; only its owner, only while it runs (SPEC B2, B4). */
async function flushCommandOutput(db: Database, workerId: string, id: CommandId, output: CommandOutput, lease: SQL): Promise<void> {
  await db
    .update(commands)
    .set({ ...output, leaseUntil: lease })
    .where(and(eq(commands.id, id), eq(commands.ownerWorker, workerId), eq(commands.status, "running")));
}

/** Renews the leases of a worker's running commands (SPEC B4). */
async function renewCommandLeases(db: Database, workerId: string, ids: CommandId[], lease: SQL): Promise<void> {
  await db
    .update(commands)
    .set({ leaseUntil: lease })
    .where(and(inArray(commands.id, ids), eq(commands.ownerWorker, workerId), eq(commands.status, "running")));
}

/**
 * Records a new running command unless its tenant already runs `allowed` of them (SPEC B1): counted and
 * inserted under the tenant's lock, so racing starts on any worker never pass the cap together.
 * Answers whether it was recorded.
 */
async function recordCommandUnderCap(
  db: Database,
  row: { id: CommandId; tenantId: TenantId; sessionId: SessionId; runId: RunId; command: string; ownerWorker: string; leaseUntil: SQL },
  allowed: number,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`foya:commands:${row.tenantId}`}))`);
    const [running] = await tx
      .execute<{ count: number }>(sql`
          select count(*)::int as count from ${commands} where ${commands.tenantId} = ${row.tenantId} and ${commands.status} = 'running'
        `)
      .then((result) => result.rows);
    if ((running?.count ?? 0) >= allowed) return false;
    await tx.insert(commands).values({
      id: row.id,
      tenantId: row.tenantId,
      sessionId: row.sessionId,
      runId: row.runId,
      command: row.command,
      status: "running",
      ownerWorker: row.ownerWorker,
      leaseUntil: row.leaseUntil,
    });
    return true;
  });
}

/** Writes a command's true final status and output when its process ends (SPEC B2); only its owner, running or lost. */
async function finishCommand(
  db: Database,
  workerId: string,
  id: CommandId,
  end: { status: CommandStatus; exitCode: number | null; signal: string | null } & CommandOutput,
): Promise<void> {
  await db
    .update(commands)
    .set({
      status: end.status,
      exitCode: end.exitCode,
      signal: end.signal,
      output: end.output,
      outputBytes: end.outputBytes,
      outputLines: end.outputLines,
      endedAt: sql`now()`,
    })
    .where(and(eq(commands.id, id), eq(commands.ownerWorker, workerId), inArray(commands.status, ["running", "lost"])));
}

/** Reads and cancels background commands from any process (SPEC B1). */
async function findCommand(db: Database, tenantId: TenantId, id: CommandId, sessionId?: SessionId): Promise<CommandRow | undefined> {
  const conditions = [eq(commands.id, id), eq(commands.tenantId, tenantId)];
  if (sessionId) conditions.push(eq(commands.sessionId, sessionId));
  const [row] = await db
    .select()
    .from(commands)
    .where(and(...conditions));
  return row;
}

/** This tenant's session's running background commands (SPEC B3: deleting the session stops them). */
async function runningCommandsOfSession(db: Database, tenantId: TenantId, sessionId: SessionId): Promise<CommandRow[]> {
  return db
    .select()
    .from(commands)
    .where(and(eq(commands.sessionId, sessionId), eq(commands.tenantId, tenantId), eq(commands.status, "running")));
}

/** The running commands of a worker found dead (SPEC D9) are lost at once, not when their leases lapse. */
async function markCommandsOfWorkerLost(db: Database, workerId: string): Promise<number> {
  const lost = await db
    .update(commands)
    .set({ status: "lost", endedAt: sql`now()` })
    .where(and(eq(commands.ownerWorker, workerId), eq(commands.status, "running")))
    .returning({ id: commands.id });
  return lost.length;
}

/** Running commands whose owner stopped renewing are `lost` (B4); with an id, only that one. */
async function markLostCommands(db: Database, id?: CommandId): Promise<number> {
  const conditions = [eq(commands.status, "running"), lt(commands.leaseUntil, sql`now()`)];
  if (id) conditions.push(eq(commands.id, id));
  const lost = await db
    .update(commands)
    .set({ status: "lost", endedAt: sql`now()` })
    .where(and(...conditions))
    .returning({ id: commands.id });
  return lost.length;
}

/** A session's background commands, oldest first (SPEC B1: `GET /v1/sessions/:id/commands`). */
async function commandsOfSession(db: Database, sessionId: SessionId): Promise<CommandRow[]> {
  return db.select().from(commands).where(eq(commands.sessionId, sessionId)).orderBy(asc(commands.createdAt));
}

/** How many background commands this tenant runs now (SPEC B1, X5: the usage report). */
async function countRunningCommands(db: Database, tenantId: TenantId): Promise<number> {
  const [running] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(commands)
    .where(and(eq(commands.tenantId, tenantId), eq(commands.status, "running")));
  return running?.count ?? 0;
}

type LeasedRow = Parameters<typeof recordCommandUnderCap>[1];

/** `store.commands`: leases are given as lengths, not SQL. */
export const commandsRepository = repository({
  db: {
    flushCommandOutput: (db: Database, workerId: string, id: CommandId, output: CommandOutput, leaseMs: number) =>
      flushCommandOutput(db, workerId, id, output, commandLease(leaseMs)),
    renewCommandLeases: (db: Database, workerId: string, ids: CommandId[], leaseMs: number) =>
      renewCommandLeases(db, workerId, ids, commandLease(leaseMs)),
    recordCommandUnderCap: (db: Database, row: Omit<LeasedRow, "leaseUntil"> & { leaseMs: number }, allowed: number) => {
      const { leaseMs, ...rest } = row;
      return recordCommandUnderCap(db, { ...rest, leaseUntil: commandLease(leaseMs) }, allowed);
    },
    finishCommand,
    findCommand,
    runningCommandsOfSession,
    markCommandsOfWorkerLost,
    markLostCommands,
    commandsOfSession,
    countRunningCommands,
  },
});
