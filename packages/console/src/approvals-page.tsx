import type { Approval, FoyaClient } from "@foya/client";
import { useState } from "preact/hooks";
import { describeError } from "./console-client.js";
import { DiffView } from "./diff-view.js";
import { Link } from "./link.js";
import { useLoader } from "./use-loader.js";

/** How often the inbox looks for new requests; decisions reload it at once. */
const pollMs = 2_000;

/** Pending approvals, newest first: what a call would do and why the gateway asked; approve, deny, or edit and approve (SPEC X3). */
export function ApprovalsPage(props: { client: FoyaClient }) {
  const pending = useLoader(() => props.client.approvals.list({ status: "pending" }), pollMs);
  return (
    <section>
      <h1>Approvals</h1>
      {pending.error && <p class="error">{pending.error}</p>}
      {pending.data?.length === 0 && <p class="hint">Nothing waits for a decision.</p>}
      {(pending.data ?? []).map((approval) => (
        <ApprovalCard key={approval.id} client={props.client} approval={approval} onDecided={pending.reload} />
      ))}
    </section>
  );
}

function ApprovalCard(props: { client: FoyaClient; approval: Approval; onDecided: () => Promise<void> }) {
  const { client, approval } = props;
  const [reason, setReason] = useState("");
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = async (decision: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await decision();
      await props.onDecided();
    } catch (failure) {
      // 409: decided elsewhere first, or expired; the reload shows what stands.
      setError(describeError(failure));
      await props.onDecided();
    } finally {
      setBusy(false);
    }
  };
  const withReason = reason.trim() ? { reason: reason.trim() } : {};
  const approveEdited = () => {
    let edited: unknown;
    try {
      edited = JSON.parse(editing ?? "");
    } catch {
      setError("the edited arguments are not JSON");
      return;
    }
    if (typeof edited !== "object" || edited === null || Array.isArray(edited)) {
      setError("the edited arguments must be a JSON object");
      return;
    }
    void decide(() => client.approvals.approve(approval.id, { ...withReason, editedArguments: edited as Record<string, unknown> }));
  };
  return (
    <article class="card approval" data-approval-id={approval.id}>
      <header class="row">
        <strong>{approval.call.tool}</strong>
        <span class="hint">
          session <Link to={{ screen: "session", sessionId: approval.sessionId }}>{approval.sessionId}</Link> · run{" "}
          <span class="mono">{approval.runId}</span> · expires {new Date(approval.expiresAt).toLocaleString()}
        </span>
      </header>
      <p class="why">{approval.requestReason}</p>
      {approval.displayDiff && <DiffView diff={approval.displayDiff} />}
      {editing === null ? (
        <pre class="arguments">{pretty(approval.call.arguments)}</pre>
      ) : (
        <textarea
          class="arguments"
          rows={8}
          value={editing}
          onInput={(event) => setEditing(event.currentTarget.value)}
          aria-label="Edited arguments"
        />
      )}
      <label>
        Reason (optional)
        <input value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      </label>
      <div class="row">
        {editing === null ? (
          <>
            <button type="button" disabled={busy} onClick={() => void decide(() => client.approvals.approve(approval.id, withReason))}>
              Approve
            </button>
            <button
              type="button"
              class="danger"
              disabled={busy}
              onClick={() => void decide(() => client.approvals.deny(approval.id, withReason))}
            >
              Deny
            </button>
            <button type="button" class="secondary" disabled={busy} onClick={() => setEditing(pretty(approval.call.arguments))}>
              Edit arguments
            </button>
          </>
        ) : (
          <>
            <button type="button" disabled={busy} onClick={approveEdited}>
              Approve with edits
            </button>
            <button type="button" class="secondary" disabled={busy} onClick={() => setEditing(null)}>
              Cancel edit
            </button>
          </>
        )}
      </div>
      {error && <p class="error">{error}</p>}
    </article>
  );
}

/** The model's raw arguments, indented when they parse (they may not: SPEC T5). */
function pretty(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}
