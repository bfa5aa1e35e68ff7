import { and, eq, lt, sql } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { commands } from "../db/schema.js";
import type { EventBus } from "../events/event-bus.js";

export type CommandRow = typeof commands.$inferSelect;

/** Reads and cancels background commands from any process (SPEC B1). */
export async function findCommand(db: Database, tenantId: string, id: string, sessionId?: string): Promise<CommandRow | undefined> {
  const conditions = [eq(commands.id, id), eq(commands.tenantId, tenantId)];
  if (sessionId) conditions.push(eq(commands.sessionId, sessionId));
  const [row] = await db
    .select()
    .from(commands)
    .where(and(...conditions));
  return row;
}

/** This tenant's session's running background commands (SPEC B3: deleting the session stops them). */
export async function runningCommandsOfSession(db: Database, tenantId: string, sessionId: string): Promise<CommandRow[]> {
  return db
    .select()
    .from(commands)
    .where(and(eq(commands.sessionId, sessionId), eq(commands.tenantId, tenantId), eq(commands.status, "running")));
}

/**
 * Asks the owning worker to kill a running command. A command whose owner no
 * longer renews its lease is recorded `lost` at once instead (B4).
 */
export async function requestCommandCancel(db: Database, bus: EventBus, command: CommandRow): Promise<void> {
  if (command.status !== "running") return;
  await markLostCommands(db, command.id);
  await bus.publishCommandCancel(command.id);
}

/** Running commands whose owner stopped renewing are `lost` (B4); with an id, only that one. */
/** The running commands of a worker found dead (SPEC D9) are lost at once, not when their leases lapse. */
export async function markCommandsOfWorkerLost(db: Database, workerId: string): Promise<number> {
  const lost = await db
    .update(commands)
    .set({ status: "lost", endedAt: sql`now()` })
    .where(and(eq(commands.ownerWorker, workerId), eq(commands.status, "running")))
    .returning({ id: commands.id });
  return lost.length;
}

export async function markLostCommands(db: Database, id?: string): Promise<number> {
  const conditions = [eq(commands.status, "running"), lt(commands.leaseUntil, sql`now()`)];
  if (id) conditions.push(eq(commands.id, id));
  const lost = await db
    .update(commands)
    .set({ status: "lost", endedAt: sql`now()` })
    .where(and(...conditions))
    .returning({ id: commands.id });
  return lost.length;
}
