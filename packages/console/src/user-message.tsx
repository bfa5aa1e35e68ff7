import type { FoyaClient } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";

/** A run's input as the session's history holds it: the user message that started the run. */
export interface UserMessage {
  id: string;
  text: string;
}

/**
 * The run's input with "Edit and resend" (SPEC W2): the session is rewound to just before this
 * message's run (that run and any later ones become a branch), then a new run starts with the
 * edited text. The timeline follows from the event stream (session_rewound, then the new run).
 */
export function UserMessageView(props: { client: FoyaClient; sessionId: string; message: UserMessage }) {
  const { client, sessionId, message } = props;
  const [draft, setDraft] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const resend = async (event: Event) => {
    event.preventDefault();
    if (draft === null) return;
    setBusy(true);
    setError(null);
    try {
      await client.sessions.rewind(sessionId, { messageId: message.id });
      await client.runs.start(sessionId, draft);
      setDraft(null);
    } catch (failure) {
      // 409: a run is active; the rewind refuses and nothing changed.
      setError(describeError(failure));
    } finally {
      setBusy(false);
    }
  };
  if (draft === null)
    return (
      <div class="user-message" data-message-id={message.id}>
        <div class="user-text">{message.text}</div>
        <button type="button" class="secondary small" onClick={() => setDraft(message.text)}>
          Edit and resend
        </button>
      </div>
    );
  return (
    <form class="user-message editing" data-message-id={message.id} onSubmit={resend}>
      <label>
        Edited message
        <textarea rows={3} value={draft} onInput={(event) => setDraft(event.currentTarget.value)} required />
      </label>
      <div class="row">
        <button type="submit" disabled={busy || draft.trim() === ""}>
          Resend
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={() => setDraft(null)}>
          Cancel
        </button>
        <span class="hint">this run and what followed it are set aside as a branch</span>
      </div>
      {error && <p class="error">{error}</p>}
    </form>
  );
}
