import type { Branch, FoyaClient } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { pointText } from "./point-text.js";
import type { Loaded } from "./use-loader.js";

/** What rewinds of the session set aside, newest first, each with "Bring back" (a rewind to the branch's tip). */
export function BranchesPanel(props: { client: FoyaClient; sessionId: string; branches: Loaded<Branch[]> }) {
  const { client, sessionId, branches } = props;
  const [error, setError] = useState<string | null>(null);
  const bringBack = async (branch: Branch) => {
    setError(null);
    try {
      // The page follows from the event stream: session_rewound sets today's runs aside and brings these back.
      await client.sessions.rewind(sessionId, { branchId: branch.id });
    } catch (failure) {
      setError(describeError(failure));
    }
  };
  if (!branches.data?.length && !branches.error) return null;
  return (
    <section class="branches">
      <h2>Branches</h2>
      {branches.error && <p class="error">{branches.error}</p>}
      {error && <p class="error">{error}</p>}
      <ul class="list">
        {(branches.data ?? []).map((branch) => (
          <li key={branch.id} data-branch-id={branch.id} class={branch.restoredAt ? "restored" : ""}>
            <div class="row">
              <span class="mono">{branch.id}</span>
              <span class="tag">after {pointText(branch.at)}</span>
              {branch.restoredAt && <span class="tag">brought back</span>}
            </div>
            <p class="hint">
              {branch.runIds.length} run{branch.runIds.length === 1 ? "" : "s"}, {branch.messageCount} message
              {branch.messageCount === 1 ? "" : "s"} set aside {new Date(branch.createdAt).toLocaleString()}
            </p>
            {!branch.restoredAt && (
              <button type="button" class="secondary small" onClick={() => void bringBack(branch)}>
                Bring back
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
