import type { FileChange, FoyaClient } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { DiffView } from "./diff-view.js";
import type { Loaded } from "./use-loader.js";

/**
 * A session's file changes, oldest first, each with its diff and a revert (SPEC F3). Changes of
 * runs a rewind set aside are no longer in the workspace: shown as such, with nothing to revert.
 */
export function FileChangesPanel(props: { client: FoyaClient; changes: Loaded<FileChange[]>; setAsideRuns: ReadonlySet<string> }) {
  const { client, changes, setAsideRuns } = props;
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState<Record<string, string>>({});
  const toggle = async (change: FileChange) => {
    if (open[change.id] !== undefined) {
      const { [change.id]: _closed, ...rest } = open;
      setOpen(rest);
      return;
    }
    try {
      setOpen({ ...open, [change.id]: await client.fileChanges.diff(change.id) });
    } catch (failure) {
      setError(describeError(failure));
    }
  };
  const revert = async (change: FileChange, andLater: boolean) => {
    setError(null);
    try {
      await client.fileChanges.revert(change.id, { andLater });
    } catch (failure) {
      // 409: the file changed since, or the change was reverted already; nothing was touched.
      setError(describeError(failure));
    }
    await changes.reload();
  };
  return (
    <section class="file-changes">
      <h2>File changes</h2>
      {changes.error && <p class="error">{changes.error}</p>}
      {error && <p class="error">{error}</p>}
      {changes.data?.length === 0 && <p class="hint">No file changes.</p>}
      <ul class="list">
        {(changes.data ?? []).map((change) => {
          const setAside = setAsideRuns.has(change.runId);
          return (
            <li key={change.id} data-change-id={change.id} class={change.revertedAt || setAside ? "reverted" : ""}>
              <div class="row">
                <span class="mono">{change.path}</span>
                <span class="tag">{change.existedBefore ? "modified" : "created"}</span>
                {change.revertedAt && <span class="tag">reverted</span>}
                {setAside && <span class="tag">set aside</span>}
                <button type="button" class="secondary" onClick={() => void toggle(change)}>
                  {open[change.id] !== undefined ? "Hide diff" : "Diff"}
                </button>
                {!change.revertedAt && !setAside && (
                  <>
                    <button type="button" onClick={() => void revert(change, false)}>
                      Revert
                    </button>
                    <button type="button" class="secondary" onClick={() => void revert(change, true)}>
                      Revert this and later
                    </button>
                  </>
                )}
              </div>
              {open[change.id] !== undefined && <DiffView diff={open[change.id] as string} />}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
