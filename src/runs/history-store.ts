import { and, asc, eq, lte } from "drizzle-orm";
import type { HistoryMessage, MessagePosition } from "../core/history.js";
import type { DbExecutor } from "../db/client.js";
import { messages } from "../db/schema.js";
import { newId } from "../ids.js";

/** Canonical history: inserts are idempotent by position, reads are ordered by it. */
export async function insertMessage(
  tx: DbExecutor,
  owner: { tenantId: string; sessionId: string; runId: string },
  position: MessagePosition,
  content: HistoryMessage,
): Promise<void> {
  await tx
    .insert(messages)
    .values({ id: newId("msg"), ...owner, ...position, role: content.role, content })
    .onConflictDoNothing();
}

/** A history message with its place in the session; the context compiler names results by it (O2). */
export interface HistoryEntry {
  message: HistoryMessage;
  position: MessagePosition;
}

/** History up to and including the given run, oldest first. */
export async function loadHistory(tx: DbExecutor, tenantId: string, sessionId: string, upToRunOrdinal: number): Promise<HistoryEntry[]> {
  const rows = await tx
    .select({
      content: messages.content,
      runOrdinal: messages.runOrdinal,
      stepIndex: messages.stepIndex,
      part: messages.part,
      callIndex: messages.callIndex,
    })
    .from(messages)
    .where(and(eq(messages.sessionId, sessionId), eq(messages.tenantId, tenantId), lte(messages.runOrdinal, upToRunOrdinal)))
    .orderBy(asc(messages.runOrdinal), asc(messages.stepIndex), asc(messages.part), asc(messages.callIndex));
  return rows.map((row) => ({
    message: row.content,
    position: { runOrdinal: row.runOrdinal, stepIndex: row.stepIndex, part: row.part as MessagePosition["part"], callIndex: row.callIndex },
  }));
}
