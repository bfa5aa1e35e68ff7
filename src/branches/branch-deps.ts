import { treeDigest } from "../checkpoints/tree-digest.js";
import type { HistoryPoint, NotUndoneCall } from "../core/branch.js";
import type { Config } from "../config.js";
import { FoyaError, notFound } from "../errors.js";
import type { CheckpointId, SessionId, TenantId } from "../ids.js";
import type { CheckpointRow, NewCheckpoint } from "../store/checkpoints.js";
import type { Store } from "../store/store.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import type { UnitOfWork } from "../unit-of-work/unit-of-work.js";
import { notUndoneCalls } from "./not-undone.js";

/** What a fork or a rewind needs: the store and its unit of work, the tools (what their calls did), the settings (no workspace: SPEC W3). */
export interface BranchDeps {
  store: Store;
  unitOfWork: UnitOfWork;
  tools: Pick<ToolRegistry, "get">;
  config: Pick<Config, "workspaces">;
}

/** The session and its project, this tenant's and live (D8: anything else is not found). */
export async function liveSessionWithProject(store: Store, tenantId: TenantId, sessionId: SessionId) {
  const found = await store.sessions.sessionWithProject(sessionId);
  if (!found || found.session.tenantId !== tenantId || found.session.deletedAt !== null || found.project.deletedAt !== null) {
    throw notFound("session");
  }
  return found;
}

/** The abandoned calls after the point whose effects no checkpoint takes back. */
export async function notUndoneAfter(
  deps: Pick<BranchDeps, "store" | "tools">,
  scope: { tenantId: TenantId; sessionId: SessionId; fullAccess: boolean },
  point: HistoryPoint,
): Promise<NotUndoneCall[]> {
  const rows = await deps.store.branches.startedCallsAfter(scope.tenantId, scope.sessionId, point);
  return notUndoneCalls(rows, { sideEffectOf: (name) => deps.tools.get(name)?.sideEffect, fullAccess: scope.fullAccess });
}

/** The totals and digest a copy of `source`'s tree carries: the source's own, or an empty tree's. */
export async function treeTotals(
  store: Store,
  tenantId: TenantId,
  source: CheckpointId | null,
): Promise<Pick<NewCheckpoint, "entryCount" | "fileBytes" | "treeDigest">> {
  if (source === null) return { entryCount: 0, fileBytes: 0, treeDigest: treeDigest(new Map()) };
  const row: CheckpointRow | undefined = await store.checkpoints.checkpointOfTenant(tenantId, source);
  if (!row) throw new FoyaError("internal", `checkpoint ${source} is not the tenant's`);
  return { entryCount: row.entryCount, fileBytes: row.fileBytes, treeDigest: row.treeDigest };
}

/** Events carry at most this many abandoned calls; the answer to the request carries them all (up to 1,000). */
export const notUndoneInEvents = 100;
