import type { JobDeps } from "../job-deps.js";
import type { Confinement } from "../../sandbox/confinement.js";
import type { CallLayerOwner } from "../../sandbox/overlay/call-layers.js";
import { toolIdentity } from "../../sandbox/tool-identity.js";
import { effectiveToolLimits, fullAccessRefusal } from "../../tenants/tenant-settings.js";
import type { CallProcesses } from "../../tools/call-processes.js";
import { createCallProcesses } from "../../tools/shell/create-call-processes.js";
import { doorJournal } from "./door-journal.js";
import type { ToolContext } from "../../tools/tool.js";
import { projectWorkspaceFiles } from "../../workspace/project-workspace.js";
import type { WorkspaceFiles } from "../../workspace/workspace-files.js";
import type { ApprovalMode } from "../../core/session.js";
import type { TenantId } from "../../ids.js";

/** Where and as whom every call of one batch works (SPEC S6, S7, S8); built once per batch attempt. */
export interface BatchToolEnvironment {
  /** The project's workspace door. */
  workspace: WorkspaceFiles;
  /** The processes of one call, with the network its grant allows. */
  processesFor(grant: { network: boolean }, owner?: CallLayerOwner): CallProcesses;
  /** One call's journal of door writes (`door-journal.ts`); undefined where this worker keeps no call layers. */
  fileJournalFor(owner: CallLayerOwner, blobs: ToolContext["blobs"]): ToolContext["fileJournal"];
}

/** What building the environment uses. */
export type EnvironmentDeps = Pick<
  JobDeps,
  "config" | "sandbox" | "callLayers" | "logger" | "tenantSettings" | "identityMode" | "workspaceOwnership" | "metrics" | "tracing"
>;

/**
 * Reads the tenant's settings (cached a few seconds, so an operator's change
 * applies within them), makes sure the workspace belongs to the tenant's uid,
 * and builds what the calls' contexts share. A Full Access session whose grant
 * was revoked keeps its file tools (the door confines them in every mode) but
 * starts no process.
 */
export async function batchToolEnvironment(
  services: EnvironmentDeps,
  input: { tenantId: TenantId; approvalMode: ApprovalMode; workspacePath: string },
): Promise<BatchToolEnvironment> {
  const { config } = services;
  const settings = await services.tenantSettings.get(input.tenantId);
  const identity = toolIdentity(services.identityMode, settings.toolUidSlot);
  const limits = effectiveToolLimits(config, settings);
  await services.workspaceOwnership.ensure(input.workspacePath, identity);
  const fullAccess = input.approvalMode === "full_access";
  const refusal = fullAccess ? fullAccessRefusal(config, settings) : null;
  return {
    workspace: projectWorkspaceFiles(config.workspaces.dir, input.workspacePath),
    fileJournalFor(owner, blobs) {
      const { callLayers } = services;
      if (!callLayers.ok) return undefined;
      return doorJournal({
        layers: callLayers.layers,
        workspaceDir: input.workspacePath,
        owner,
        blobs,
        onError: (message, error) => services.logger.error({ err: error, toolCallId: owner.toolCallId }, message),
      });
    },
    processesFor(grant, owner) {
      const confinement: Confinement = fullAccess ? { kind: "full_access" } : { kind: "sandbox", network: grant.network };
      const { callLayers } = services;
      const layering =
        owner && callLayers.ok && (!fullAccess || config.sandbox.recordFullAccessShell)
          ? {
              layers: callLayers.layers,
              workspacesDir: config.workspaces.dir,
              owner,
              onError: (message: string, error: unknown) => services.logger.error({ err: error, toolCallId: owner.toolCallId }, message),
            }
          : null;
      return createCallProcesses({
        runner: services.sandbox,
        toolPath: config.tools.path,
        workspaceDir: input.workspacePath,
        confinement,
        identity,
        limits,
        refusal,
        layering,
        observeStart: () => observeSandboxStart(services),
      });
    },
  };
}

/** The sandbox's start (SPEC X8): a span under the tool call's, and its time in `foya_sandbox_start_seconds`. */
function observeSandboxStart(services: Pick<JobDeps, "metrics" | "tracing">): (outcome: "started" | "failed") => void {
  const started = performance.now();
  const span = services.tracing.tracer.startSpan("sandbox spawn");
  return (outcome) => {
    if (outcome === "started") services.metrics.sandboxStartSeconds.observe((performance.now() - started) / 1000);
    span.setAttribute("foya.sandbox.outcome", outcome);
    span.end();
  };
}
