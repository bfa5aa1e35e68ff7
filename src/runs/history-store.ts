import { and, asc, eq, lte } from "drizzle-orm";
import type { HistoryMessage, MessagePosition, ResultPart } from "../core/history.js";
import type { TerminalToolCallStatus } from "../core/tool-call-status.js";
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

export interface ToolMessageInput {
  tenantId: string;
  sessionId: string;
  runId: string;
  runOrdinal: number;
  stepIndex: number;
  callIndex: number;
  callId: string;
  name: string;
  status: TerminalToolCallStatus;
  isError: boolean;
  content: ResultPart[];
}

export function insertToolMessage(tx: DbExecutor, input: ToolMessageInput): Promise<void> {
  return insertMessage(
    tx,
    { tenantId: input.tenantId, sessionId: input.sessionId, runId: input.runId },
    { runOrdinal: input.runOrdinal, stepIndex: input.stepIndex, part: 2, callIndex: input.callIndex },
    { role: "tool", callId: input.callId, name: input.name, status: input.status, isError: input.isError, content: input.content },
  );
}

/** History up to and including the given run, oldest first. */
export async function loadHistory(
  tx: DbExecutor,
  tenantId: string,
  sessionId: string,
  upToRunOrdinal: number,
): Promise<HistoryMessage[]> {
  const rows = await tx
    .select({ content: messages.content })
    .from(messages)
    .where(and(eq(messages.sessionId, sessionId), eq(messages.tenantId, tenantId), lte(messages.runOrdinal, upToRunOrdinal)))
    .orderBy(asc(messages.runOrdinal), asc(messages.stepIndex), asc(messages.part), asc(messages.callIndex));
  return rows.map((row) => row.content);
}
