import type { FoyaClient } from "@foya/client";
import { useMemo } from "preact/hooks";
import { useLoader } from "./use-loader.js";
import type { UserMessage } from "./user-message.js";

/** Each run's input, from the session's history (GET /v1/sessions/{id}/messages), by run id; `reload` after runs start or rewinds. */
export function useUserMessages(client: FoyaClient, sessionId: string): { byRun: Map<string, UserMessage>; reload: () => Promise<void> } {
  const messages = useLoader(() => client.sessions.messages(sessionId));
  const byRun = useMemo(() => {
    const inputs = new Map<string, UserMessage>();
    for (const message of messages.data ?? []) {
      const text = message.content.text;
      if (message.role === "user" && typeof text === "string" && !inputs.has(message.runId))
        inputs.set(message.runId, { id: message.id, text });
    }
    return inputs;
  }, [messages.data]);
  return { byRun, reload: messages.reload };
}
