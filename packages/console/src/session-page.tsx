import type { FoyaClient } from "@foya/client";
import { useEffect, useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { FileChangesPanel } from "./file-changes-panel.js";
import { RunCard } from "./run-card.js";
import { applyEvent, type Timeline } from "./run-timeline.js";
import { followSessionEvents } from "./session-events.js";
import { useLoader } from "./use-loader.js";

/** One session: start a run, watch every run of the session live, review and revert its file changes. */
export function SessionPage(props: { client: FoyaClient; sessionId: string }) {
  const { client, sessionId } = props;
  const [timeline, setTimeline] = useState<Timeline>([]);
  const [streamError, setStreamError] = useState<string | null>(null);
  const session = useLoader(() =>
    client.api.GET("/v1/sessions/{id}", { params: { path: { id: sessionId } } }).then(({ data, error }) => {
      if (error) throw new Error(error.error.message);
      return data;
    }),
  );
  const changes = useLoader(() => client.fileChanges.list(sessionId));

  useEffect(
    () =>
      followSessionEvents(
        client,
        sessionId,
        (event) => {
          setStreamError(null);
          setTimeline((current) => applyEvent(current, event));
          // New file changes land with their call's end; a run's end may have reverted nothing, but is cheap to check.
          if ((event.type === "tool_end" && event.data.fileChanges?.length) || event.type === "run_end") void changes.reload();
        },
        setStreamError,
      ),
    [client, sessionId],
  );

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
      <RunForm client={client} sessionId={sessionId} />
      {streamError && <p class="error">event stream: {streamError} (retrying)</p>}
      <div class="columns">
        <div class="runs">
          {timeline.length === 0 && <p class="hint">No runs yet.</p>}
          {timeline
            .slice()
            .reverse()
            .map((run) => (
              <RunCard key={run.runId} run={run} client={client} sessionId={sessionId} />
            ))}
        </div>
        <FileChangesPanel client={client} changes={changes} />
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
