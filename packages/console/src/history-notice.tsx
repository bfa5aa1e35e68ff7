import type { HistoryPoint } from "@foya/client";
import { Link } from "./link.js";
import { pointText } from "./point-text.js";
import type { SessionHistory } from "./session-history.js";

/**
 * Where the session's history was bent: the fork it came from, and its latest rewind. A fork at
 * the very start copies no run and so has no session_forked event: the session's own record says it.
 */
export function HistoryNotice(props: { history: SessionHistory; sessionForkedFrom: { sessionId: string; at: HistoryPoint } | null }) {
  const { lastRewind } = props.history;
  const forkedFrom = props.history.forkedFrom ?? (props.sessionForkedFrom && { ...props.sessionForkedFrom, notUndone: null });
  return (
    <>
      {forkedFrom && (
        <p class="notice forked">
          Forked from <Link to={{ screen: "session", sessionId: forkedFrom.sessionId }}>{forkedFrom.sessionId}</Link> at{" "}
          {pointText(forkedFrom.at)}
          {forkedFrom.notUndone === null ? "." : notUndone(forkedFrom.notUndone)}
        </p>
      )}
      {lastRewind && (
        <p class="notice rewound">
          {lastRewind.restoredBranchId && <>Brought back branch {lastRewind.restoredBranchId}. </>}
          Rewound to {pointText(lastRewind.at)}: what followed ({lastRewind.messagesSetAside} messages) is branch{" "}
          <span class="mono">{lastRewind.branchId}</span>
          {notUndone(lastRewind.notUndone)}
        </p>
      )}
    </>
  );
}

/** Calls after the point whose effects outside the workspace no checkpoint takes back (events carry at most 100). */
function notUndone(count: number): string {
  if (count === 0) return "; no call after that point had effects outside the workspace.";
  const calls = `${count >= 100 ? "100 or more" : count} call${count === 1 ? "" : "s"}`;
  return `; ${calls} after that point had effects outside the workspace that were not undone.`;
}
