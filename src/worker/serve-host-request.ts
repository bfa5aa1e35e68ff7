import { captureRewindTip } from "../branches/capture-rewind-tip.js";
import { isFoyaError, notFound } from "../errors.js";
import { fileChangeWire } from "../files/file-change-wire.js";
import type { HostFolder } from "../files/host-folder.js";
import { listProjectTrash, restoreProjectTrashEntry } from "../files/project-trash-entries.js";
import { revertFileChanges } from "../files/revert-file-changes.js";
import type { HostReply, HostRequest, HostRequestJobData, HostRequestValues } from "../hosts/host-request.js";
import { movedReply } from "../queue/worker-replies.js";
import { claimProjectCopy, type HostWorkspaceDeps, isPlacedHere, type PlacedProject, prepareHostWorkspace } from "./host-workspace.js";
import type { JobDeps } from "./job-deps.js";

export type ServeHostRequestDeps = HostWorkspaceDeps & Pick<JobDeps, "logger">;

/**
 * Answers one request of the API on a project's workspace (src/hosts/host-request.ts), on the
 * host the project is placed on: `movedReply` when it is not placed here at the request's epoch
 * any more; a refusal (404, 409, 400) as the API answered it when it ran the operation itself;
 * `failed` for anything else, logged here.
 */
export async function serveHostRequest(
  deps: ServeHostRequestDeps,
  host: { hostId: string; jobId: string },
  data: HostRequestJobData,
  signal: AbortSignal,
): Promise<HostReply<unknown> | typeof movedReply> {
  const placed: PlacedProject = { tenantId: data.tenantId, projectId: data.projectId, epoch: data.placement.epoch };
  if (data.placement.hostId !== host.hostId || !(await isPlacedHere(deps, host.hostId, placed))) return movedReply;
  try {
    // The job names the project; that it is the tenant's and live is read here, never taken from the job.
    if (!(await deps.store.projects.findOwnedProject(data.tenantId, data.projectId))) throw notFound("project");
    return { ok: true, value: await perform(deps, placed, data.request, signal) };
  } catch (error) {
    if (isFoyaError(error) && (error.code === "not_found" || error.code === "conflict" || error.code === "bad_request"))
      return { ok: false, code: error.code, message: error.message, ...(error.current ? { current: error.current } : {}) };
    deps.logger.error({ err: error, jobId: host.jobId, tenantId: data.tenantId, projectId: data.projectId }, "host request failed");
    return {
      ok: false,
      code: "failed",
      message: `the request failed on host ${host.hostId}; the operator finds why in its log (job ${host.jobId})`,
    };
  }
}

async function perform(
  deps: ServeHostRequestDeps,
  placed: PlacedProject,
  request: HostRequest,
  signal: AbortSignal,
): Promise<HostRequestValues[HostRequest["operation"]]> {
  const { tenantId, projectId } = placed;
  switch (request.operation) {
    case "revert-file-changes": {
      const host = await readyFolder(deps, placed, signal);
      const reverted = await revertFileChanges(deps.store, host, {
        tenantId,
        projectId,
        changeId: request.changeId,
        andLater: request.andLater,
      });
      return { reverted: reverted.map(fileChangeWire) };
    }
    case "list-trash":
      // The trash is beside the folder, not in it: the copy is claimed (a stale one set aside), nothing rebuilt.
      return listProjectTrash(await claimedFolder(deps, placed), {
        limit: request.limit,
        ...(request.after ? { after: request.after } : {}),
      });
    case "restore-trash-entry":
      return restoreProjectTrashEntry(await readyFolder(deps, placed, signal), request.entryId);
    case "capture-rewind-tip": {
      const session = await deps.store.sessions.sessionOfTenant(tenantId, request.sessionId);
      if (!session || session.projectId !== projectId) throw notFound("session");
      // A folder that is missing (or was a stale copy) has nothing newer than the latest checkpoint: none.
      const host = await claimedFolder(deps, placed);
      const checkpointDeps = { ...deps, maxFileBytes: deps.config.workspaces.checkpointMaxFileBytes };
      return captureRewindTip(checkpointDeps, { tenantId, projectId, sessionId: session.id, workspaceDir: host.workspaceDir });
    }
    default: {
      const unknown: never = request;
      throw new Error(`unknown host request ${JSON.stringify(unknown)}`);
    }
  }
}

/** The copy claimed for this placement and its folder present (rebuilt from the latest checkpoint when missing). */
async function readyFolder(deps: ServeHostRequestDeps, placed: PlacedProject, signal: AbortSignal): Promise<HostFolder> {
  const prepared = await prepareHostWorkspace(deps, placed, signal);
  if (prepared.kind === "project_deleted") throw notFound("project");
  return { workspacesDir: deps.config.workspaces.dir, workspaceDir: prepared.workspaceDir };
}

/** The copy claimed for this placement, the folder as it is. */
async function claimedFolder(deps: ServeHostRequestDeps, placed: PlacedProject): Promise<HostFolder> {
  const { workspaceDir } = await claimProjectCopy(deps, placed);
  return { workspacesDir: deps.config.workspaces.dir, workspaceDir };
}
