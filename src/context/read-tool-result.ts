import { and, eq } from "drizzle-orm";
import type { DbExecutor } from "../db/client.js";
import { messages } from "../db/schema.js";
import { parseReference, resultText } from "./project-results.js";

/**
 * The full text of a stored tool result, found by the reference the context
 * compiler printed in its projection (SPEC O3). Scoped to one tenant's session,
 * so a reference can never reach another session's history.
 */
export async function readToolResult(
  db: DbExecutor,
  scope: { tenantId: string; sessionId: string },
  reference: string,
): Promise<{ name: string; text: string; isError: boolean } | undefined> {
  const position = parseReference(reference);
  if (!position) return undefined;
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
      ),
    );
  const message = row?.content;
  if (message?.role !== "tool") return undefined;
  return { name: message.name, text: resultText(message.content), isError: message.isError };
}
