import type { FoyaClient, Session } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { Link } from "./link.js";
import { navigate } from "./route.js";
import { useLoader } from "./use-loader.js";

type ApprovalMode = Session["approvalMode"];

/** The tenant's sessions, newest first, and a form that creates one (in a new or a listed project). */
export function SessionsPage(props: { client: FoyaClient }) {
  const { client } = props;
  const sessions = useLoader(async () => {
    const { data, error } = await client.api.GET("/v1/sessions", { params: { query: { limit: 100 } } });
    if (error) throw new Error(error.error.message);
    return data.sessions;
  });
  const projectIds = [...new Set((sessions.data ?? []).map((session) => session.projectId))];
  return (
    <section>
      <h1>Sessions</h1>
      <NewSessionForm client={client} projectIds={projectIds} />
      {sessions.error && <p class="error">{sessions.error}</p>}
      {sessions.data?.length === 0 && <p class="hint">No sessions yet.</p>}
      {sessions.data && sessions.data.length > 0 && (
        <table class="list">
          <thead>
            <tr>
              <th>Session</th>
              <th>Project</th>
              <th>Approval mode</th>
              <th>Active run</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {sessions.data.map((session) => (
              <tr key={session.id} data-session-id={session.id}>
                <td>
                  <Link to={{ screen: "session", sessionId: session.id }}>{session.id}</Link>
                  {session.parent && <span class="tag">sub-agent</span>}
                </td>
                <td class="mono">{session.projectId}</td>
                <td>{session.approvalMode}</td>
                <td class="mono">{session.activeRunId ?? "–"}</td>
                <td>{new Date(session.createdAt).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function NewSessionForm(props: { client: FoyaClient; projectIds: string[] }) {
  const [projectId, setProjectId] = useState("new");
  const [projectName, setProjectName] = useState("console");
  const [approvalMode, setApprovalMode] = useState<ApprovalMode>("manual");
  const [error, setError] = useState<string | null>(null);
  const create = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      let project = projectId;
      if (project === "new") {
        const created = await props.client.api.POST("/v1/projects", { body: { name: projectName } });
        if (created.error) throw new Error(created.error.error.message);
        project = created.data.id;
      }
      const session = await props.client.api.POST("/v1/sessions", { body: { projectId: project, approvalMode } });
      if (session.error) throw new Error(session.error.error.message);
      navigate({ screen: "session", sessionId: session.data.id });
    } catch (failure) {
      setError(describeError(failure));
    }
  };
  return (
    <form class="card row" onSubmit={create}>
      <label>
        Project
        <select value={projectId} onChange={(event) => setProjectId(event.currentTarget.value)}>
          <option value="new">New project…</option>
          {props.projectIds.map((id) => (
            <option key={id} value={id}>
              {id}
            </option>
          ))}
        </select>
      </label>
      {projectId === "new" && (
        <label>
          Name
          <input value={projectName} onInput={(event) => setProjectName(event.currentTarget.value)} required />
        </label>
      )}
      <label>
        Approval mode
        <select value={approvalMode} onChange={(event) => setApprovalMode(event.currentTarget.value as ApprovalMode)}>
          <option value="manual">manual</option>
          <option value="auto">auto</option>
          <option value="full_access">full access</option>
        </select>
      </label>
      <button type="submit">Create session</button>
      {error && <p class="error">{error}</p>}
    </form>
  );
}
