import type { FoyaClient } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { navigate } from "./route.js";

/** Forks the session after a step of a run (SPEC W2) and opens the new session, whose page shows the copied history. */
export function ForkButton(props: { client: FoyaClient; sessionId: string; runId: string; stepIndex: number }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fork = async () => {
    setBusy(true);
    setError(null);
    try {
      const forked = await props.client.sessions.fork(props.sessionId, { runId: props.runId, stepIndex: props.stepIndex });
      navigate({ screen: "session", sessionId: forked.session.id });
    } catch (failure) {
      setError(describeError(failure));
      setBusy(false);
    }
  };
  return (
    <span class="fork">
      <button type="button" class="secondary small" disabled={busy} onClick={() => void fork()}>
        Fork from here
      </button>
      {error && <span class="error">{error}</span>}
    </span>
  );
}
