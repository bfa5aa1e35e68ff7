import { restoreMissingWorkspace } from "../checkpoints/restore-workspace.js";
import type { ProcessIdentity } from "../core/process-identity.js";
import { toolIdentity } from "../sandbox/tool-identity.js";
import { claimHostCopy, type ClaimedCopy, hostWorkspacePath } from "../workspace/host-copies.js";
import type { ProjectId, TenantId } from "../ids.js";
import type { JobDeps } from "./job-deps.js";

/**
 * A project's workspace on this host (SPEC W3), made ready for whatever works on it here: a tool
 * batch (src/worker/tool-batch/process.ts and workspace-present.ts), a request of the API
 * (src/worker/serve-host-request.ts) or a project's MCP server (src/worker/mcp-request-worker.ts). The host's copy is claimed for the
 * placement first (a copy of an earlier placement is set aside, never used); a missing folder is
 * then rebuilt from the project's latest checkpoint (SPEC W1).
 */
export type HostWorkspaceDeps = Pick<JobDeps, "store" | "config" | "knownTrees" | "tenantSettings" | "identityMode">;

/** A project on this host at a placement's epoch. */
export interface PlacedProject {
  tenantId: TenantId;
  projectId: ProjectId;
  epoch: number;
}

export interface ClaimedProjectCopy {
  workspaceDir: string;
  copy: ClaimedCopy;
  /** Who owns the files the rebuild writes: the tenant's tool uid when the worker can hand files over (it runs as root). */
  identity: ProcessIdentity | null;
  /** The project was just placed on this host: a missing folder is a move, not a loss. */
  moved: boolean;
}

/** Claims the host's copy for the placement (`claimHostCopy`), and says as whom and where it is. */
export async function claimProjectCopy(deps: HostWorkspaceDeps, placed: PlacedProject): Promise<ClaimedProjectCopy> {
  const ref = { tenantId: placed.tenantId, projectId: placed.projectId };
  const root = deps.config.workspaces.dir;
  const copy = await claimHostCopy(root, ref, placed.epoch);
  const identity = await toolOwnerOf(deps, placed.tenantId);
  return { workspaceDir: hostWorkspacePath(root, ref), copy, identity, moved: isMove(copy, placed.epoch) };
}

/** Who owns what a rebuild writes: the tenant's tool uid when the worker can hand files over (it runs as root), else nobody's in particular. */
export async function toolOwnerOf(
  deps: Pick<HostWorkspaceDeps, "tenantSettings" | "identityMode">,
  tenantId: TenantId,
): Promise<ProcessIdentity | null> {
  if (process.getuid?.() !== 0) return null;
  const settings = await deps.tenantSettings.get(tenantId);
  return toolIdentity(deps.identityMode, settings.toolUidSlot);
}

/** Whether a claimed copy was just placed on this host: a missing folder is then a move, not a loss. */
export function isMove(copy: ClaimedCopy, epoch: number): boolean {
  return copy.kind === "stale" || (copy.kind === "absent" && epoch > 1);
}

export type PreparedHostWorkspace = { kind: "ready"; workspaceDir: string } | { kind: "project_deleted" };

/**
 * The copy claimed and its folder present: rebuilt from the latest checkpoint when missing (empty
 * with none). A rewind's order to rebuild is left to the project's next batch, which tells its session.
 */
export async function prepareHostWorkspace(
  deps: HostWorkspaceDeps,
  placed: PlacedProject,
  signal?: AbortSignal,
): Promise<PreparedHostWorkspace> {
  const claimed = await claimProjectCopy(deps, placed);
  const scope = { tenantId: placed.tenantId, projectId: placed.projectId, workspaceDir: claimed.workspaceDir, identity: claimed.identity };
  const restored = await restoreMissingWorkspace(deps, scope, signal);
  return restored.kind === "project_deleted" ? { kind: "project_deleted" } : { kind: "ready", workspaceDir: claimed.workspaceDir };
}

/** Whether the project is placed on this host at this epoch now (a request routed before a move is answered `moved`). */
export async function isPlacedHere(
  deps: Pick<JobDeps, "store" | "config">,
  hostId: string,
  placed: { projectId: ProjectId; epoch: number },
): Promise<boolean> {
  const placement = await deps.store.placements.placementOf(placed.projectId, deps.config.workers.livenessTimeoutMs);
  return placement?.hostId === hostId && placement.epoch === placed.epoch;
}
