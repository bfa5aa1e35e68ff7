import type { Store } from "../store/store.js";
import { parseReference, resultText } from "./project-results.js";
import type { SessionId, TenantId } from "../ids.js";

/**
 * The full text of a stored tool result, found by the reference the context
 * compiler printed in its projection (SPEC O3). Scoped to one tenant's session,
 * so a reference can never reach another session's history.
 */
export async function readToolResult(
  store: Pick<Store, "messages">,
  scope: { tenantId: TenantId; sessionId: SessionId },
  reference: string,
): Promise<{ name: string; text: string; isError: boolean } | undefined> {
  const position = parseReference(reference);
  if (!position) return undefined;
  const message = await store.messages.toolMessageAt(scope, position);
  if (message?.role !== "tool") return undefined;
  return { name: message.name, text: resultText(message.content), isError: message.isError };
}
