import type { FoyaClient } from "@foya/client";
import { useEffect, useState } from "preact/hooks";
import { BranchesPanel } from "./branches-panel.js";
import { describeError } from "./console-client.js";
import { FileChangesPanel } from "./file-changes-panel.js";
import { HistoryNotice } from "./history-notice.js";
import { inHistory } from "./rewind-fold.js";
import { RunCard } from "./run-card.js";
import { applySessionEvent, emptyHistory, type SessionHistory } from "./session-history.js";
import { followSessionEvents } from "./session-events.js";
import { useLoader } from "./use-loader.js";
import { useUserMessages } from "./use-user-messages.js";

/**
 * One session: start a run, watch every run of the session live, fork from a step or edit and
 * resend a message, bring back what a rewind set aside, review and revert its file changes.
 */
export function SessionPage(props: { client: FoyaClient; sessionId: string }) {
  const { client, sessionId } = props;
  const [history, setHistory] = useState<SessionHistory>(emptyHistory);
  const [streamError, setStreamError] = useState<string | null>(null);
  const session = useLoader(() =>
    client.api.GET("/v1/sessions/{id}", { params: { path: { id: sessionId } } }).then(({ data, error }) => {
      if (error) throw new Error(error.error.message);
      return data;
    }),
  );
  const changes = useLoader(() => client.fileChanges.list(sessionId));
  const branches = useLoader(() => client.sessions.branches(sessionId));
  const inputs = useUserMessages(client, sessionId);

  useEffect(
    () =>
      followSessionEvents(
        client,
        sessionId,
        (event) => {
          setStreamError(null);
          setHistory((current) => applySessionEvent(current, event));
          // New file changes land with their call's end; a run's end may have reverted nothing, but is cheap to check.
          if ((event.type === "tool_end" && event.data.fileChanges?.length) || event.type === "run_end") void changes.reload();
          // A run's input is a message of the history from its start; a rewind changes which messages are in it.
          if (event.type === "run_start" || event.type === "run_end" || event.type === "session_rewound") void inputs.reload();
          if (event.type === "session_rewound") void branches.reload();
        },
        setStreamError,
      ),
    [client, sessionId],
  );

  // Newest first; runs a rewind set aside are in the Branches panel until brought back.
  const runs = history.runs.filter(inHistory).reverse();
  const setAsideRuns = new Set(history.runs.filter((run) => !inHistory(run)).map((run) => run.runId));
  return (
    <section class="session">
      <h1>
        Session <span class="mono">{sessionId}</span>
      </h1>
      {session.error && <p class="error">{session.error}</p>}
      {session.data && (
        <p class="hint">
          project <span class="mono">{session.data.projectId}</span> · approval mode {session.data.approvalMode} · provider{" "}
          {session.data.providerProfile}
        </p>
      )}
      <HistoryNotice history={history} sessionForkedFrom={session.data?.forkedFrom ?? null} />
      <RunForm client={client} sessionId={sessionId} />
      {streamError && <p class="error">event stream: {streamError} (retrying)</p>}
      <div class="columns">
        <div class="runs">
          {runs.length === 0 && <p class="hint">No runs yet.</p>}
          {runs.map((run) => (
            <RunCard key={run.runId} run={run} client={client} sessionId={sessionId} input={inputs.byRun.get(run.runId)} />
          ))}
        </div>
        <div class="side">
          <BranchesPanel client={client} sessionId={sessionId} branches={branches} />
          <FileChangesPanel client={client} changes={changes} setAsideRuns={setAsideRuns} />
        </div>
      </div>
    </section>
  );
}

function RunForm(props: { client: FoyaClient; sessionId: string }) {
  const [input, setInput] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [started, setStarted] = useState<string | null>(null);
  const start = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const run = await props.client.runs.start(props.sessionId, input, { ifActive: "enqueue" });
      setStarted(run.id);
      setInput("");
    } catch (failure) {
      setError(describeError(failure));
    }
  };
  return (
    <form class="card run-form" onSubmit={start}>
      <label>
        Message
        <textarea
          name="input"
          rows={3}
          value={input}
          onInput={(event) => setInput(event.currentTarget.value)}
          placeholder="What should the agent do?"
          required
        />
      </label>
      <div class="row">
        <button type="submit" disabled={input.trim() === ""}>
          Start run
        </button>
        {/* Its progress shows in the run's card below, from the event stream. */}
        {started && (
          <span class="hint">
            started <span class="mono">{started}</span>
          </span>
        )}
      </div>
      {error && <p class="error">{error}</p>}
    </form>
  );
}
