import type { HistoryMessage, MessagePosition } from "../core/history.js";
import { and, asc, desc, eq, isNull } from "drizzle-orm";
import type { Database, DbExecutor } from "../db/client.js";
import { messages, runs } from "../db/schema.js";
import { type RunId, type SessionId, type TenantId, newId } from "../ids.js";
import { col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";

/** Canonical history: inserts are idempotent by position, reads are ordered by it. */
async function insertMessage(
  tx: Database,
  owner: { tenantId: TenantId; sessionId: SessionId; runId: RunId },
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

const position = [messages.runOrdinal, messages.stepIndex, messages.part, messages.callIndex].map(col).join(", ");

/**
 * loadHistory
 * Guard: none (a read). Params: the session, its tenant, the last run ordinal, the position after which to read (`after*`).
 * Result: messages after that position up to and including the run, oldest first.
 */
const loadHistoryStatement = statement<
  {
    sessionId: SessionId;
    tenantId: TenantId;
    upToRunOrdinal: number;
    afterRunOrdinal: number;
    afterStepIndex: number;
    afterPart: number;
    afterCallIndex: number;
  },
  {
    content: HistoryMessage;
    run_ordinal: number;
    step_index: number;
    part: number;
    call_index: number;
  }
>(
  "load_history",
  `select ${col(messages.content)} as content, ${col(messages.runOrdinal)} as run_ordinal, ${col(messages.stepIndex)} as step_index,
          ${col(messages.part)} as part, ${col(messages.callIndex)} as call_index
   from ${tbl(messages)}
   where ${col(messages.sessionId)} = :sessionId and ${col(messages.tenantId)} = :tenantId and ${col(messages.runOrdinal)} <= :upToRunOrdinal
     and ${col(messages.branchId)} is null
     and (${position}) > (:afterRunOrdinal::int, :afterStepIndex::int, :afterPart::int, :afterCallIndex::int)
   order by ${position}`,
);

/** History up to and including the given run, oldest first; with `after`, only what follows that position. */
async function loadHistory(
  on: Queryable,
  tenantId: TenantId,
  sessionId: SessionId,
  upToRunOrdinal: number,
  after: MessagePosition = { runOrdinal: -1, stepIndex: -2, part: 0, callIndex: 0 },
): Promise<HistoryEntry[]> {
  const rows = await run(on, loadHistoryStatement, {
    sessionId,
    tenantId,
    upToRunOrdinal,
    afterRunOrdinal: after.runOrdinal,
    afterStepIndex: after.stepIndex,
    afterPart: after.part,
    afterCallIndex: after.callIndex,
  });
  return rows.map((row) => ({
    message: row.content,
    position: {
      runOrdinal: row.run_ordinal,
      stepIndex: row.step_index,
      part: row.part as MessagePosition["part"],
      callIndex: row.call_index,
    },
  }));
}

/** The tool message of one call in a session's history (part 2 of its step), scoped to the tenant's session; undefined when there is none. */
async function toolMessageAt(
  db: DbExecutor,
  scope: { tenantId: TenantId; sessionId: SessionId },
  position: { runOrdinal: number; stepIndex: number; callIndex: number },
): Promise<HistoryMessage | undefined> {
  const [row] = await db
    .select({ content: messages.content })
    .from(messages)
    .where(
      and(
        eq(messages.tenantId, scope.tenantId),
        eq(messages.sessionId, scope.sessionId),
        eq(messages.runOrdinal, position.runOrdinal),
        eq(messages.stepIndex, position.stepIndex),
        eq(messages.part, 2),
        eq(messages.callIndex, position.callIndex),
        isNull(messages.branchId),
      ),
    );
  return row?.content;
}

/** The content of a run's last assistant message: a sub-agent's final answer (SPEC A1); undefined for none. */
async function lastAssistantMessageOfRun(tx: Database, runId: RunId): Promise<HistoryMessage | undefined> {
  const [last] = await tx
    .select({ content: messages.content })
    .from(messages)
    .innerJoin(runs, and(eq(runs.sessionId, messages.sessionId), eq(runs.ordinal, messages.runOrdinal)))
    .where(and(eq(runs.id, runId), eq(messages.role, "assistant")))
    .orderBy(desc(messages.stepIndex), desc(messages.part))
    .limit(1);
  return last?.content;
}

/** A session's whole history (without what rewinds set aside), in history order (`GET /v1/sessions/:id/messages`). */
async function messagesOfSession(db: DbExecutor, sessionId: SessionId): Promise<Array<typeof messages.$inferSelect>> {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.sessionId, sessionId), isNull(messages.branchId)))
    .orderBy(asc(messages.runOrdinal), asc(messages.stepIndex), asc(messages.part), asc(messages.callIndex));
}

/** `store.messages`. */
export const messagesRepository = repository({
  db: { insertMessage, toolMessageAt, lastAssistantMessageOfRun, messagesOfSession },
  pg: { loadHistory },
});
