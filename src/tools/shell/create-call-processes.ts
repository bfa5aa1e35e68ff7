import type { Confinement } from "../../sandbox/confinement.js";
import type { ProcessLimits } from "../../core/process-limits.js";
import type { SandboxRunner } from "../../sandbox/sandbox-runner.js";
import type { CallProcesses } from "../call-processes.js";
import type { CallLayer, CallLayerOwner, CallLayers } from "../../sandbox/overlay/call-layers.js";
import { prepareShell, type PreparedLayer, type SandboxStartObserver } from "./spawn-shell.js";
import { compareManifests, takeManifest } from "../../workspace/workspace-manifest.js";
import { changedPathsOf, settleLayer } from "./settle-layer.js";
import type { ProcessIdentity } from "../../core/process-identity.js";

/** What a worker needs to run calls on a layer over the workspace (SPEC X7). */
export interface ShellLayering {
  layers: CallLayers;
  workspacesDir: string;
  owner: CallLayerOwner;
  onError(message: string, error: unknown): void;
}

/** The `CallProcesses` of one call: every process it starts gets this workspace, confinement, identity and limits. */
export function createCallProcesses(options: {
  runner: SandboxRunner | undefined;
  /** PATH of the processes. */
  toolPath: string;
  /** The workspace's real path: the working directory and HOME. */
  workspaceDir: string;
  confinement: Confinement;
  identity: ProcessIdentity;
  limits: ProcessLimits;
  /** Set when the session's mode may no longer start processes (Full Access revoked): every prepare answers it. */
  refusal?: string | null;
  /** Set when this worker records what this call's commands change (outside Full Access, or in it when the operator enabled it); used by foreground calls. */
  layering?: ShellLayering | null;
  observeStart?: SandboxStartObserver;
}): CallProcesses {
  return {
    limits: options.limits,
    async prepare(command, output, how = {}) {
      if (options.refusal) return { unavailable: options.refusal, code: "full_access_not_granted" };
      // The environment passes layering only where it applies: outside Full Access, or in it when the operator asked.
      const layering = how.recordChanges ? options.layering : null;
      let layer: CallLayer | null = null;
      try {
        layer = layering ? layering.layers.open(options.workspaceDir, layering.owner) : null;
      } catch (error) {
        // Recording is lost for this call, not the call: it runs on the workspace itself, as before X7.
        layering?.onError("a call's layer could not be made; the command runs unrecorded", error);
      }
      const prepared = await prepareShell({
        command,
        cwd: options.workspaceDir,
        path: options.toolPath,
        headBytes: output.headBytes,
        tailBytes: output.tailBytes,
        confinement: options.confinement,
        identity: options.identity,
        limits: options.limits,
        runner: options.runner,
        lifetime: how.background ? "background" : "call",
        ...(layer ? { overlay: layer.folders } : {}),
        ...(options.observeStart ? { observeStart: options.observeStart } : {}),
      });
      if ("unavailable" in prepared) {
        if (layer) layering?.layers.discard(layer);
        return { unavailable: prepared.unavailable, code: "sandbox_unavailable" };
      }
      if (how.summarizeChanges && options.layering) return { ...prepared, changeSummary: await summarizeChanges(options.workspaceDir) };
      if (!layer || !layering) return prepared;
      const held: PreparedLayer = {
        async settle(blobs) {
          try {
            const settled = await settleLayer(layer, { blobs, workspacesDir: layering.workspacesDir });
            // Its records live in its folder until the call's result is stored (run-call.ts).
            layering.layers.hold(layering.owner.toolCallId, layer);
            return { ...settled, changedPaths: changedPathsOf(settled.plan) };
          } catch (error) {
            // The upper folder stays, given up to the host: the project's next batch settles it before running anything.
            layering.layers.release(layer.dir);
            layering.onError(
              "a command's changes could not be applied; its layer is kept and settled before the project's next call",
              error,
            );
            throw error;
          }
        },
        discard: () => layering.layers.discard(layer),
      };
      return {
        ...prepared,
        layer: held,
        discard() {
          prepared.discard();
          held.discard();
        },
      };
    },
  };
}

/** Past this many entries a workspace's manifest stops, and the summary says it is partial. */
const manifestEntries = 100_000;

/** The manifest before a background command, and the summary of its changes once it ends (SPEC X7). */
async function summarizeChanges(workspaceDir: string): Promise<{ finish(): Promise<string | null> }> {
  const before = await takeManifest(workspaceDir, { maxEntries: manifestEntries });
  return {
    async finish() {
      const changes = compareManifests(before, await takeManifest(workspaceDir, { maxEntries: manifestEntries }));
      const parts = (["created", "modified", "deleted"] as const)
        .filter((kind) => changes[kind].length > 0)
        .map(
          (kind) => `${kind} ${changes[kind].length} (${changes[kind].slice(0, 10).join(", ")}${changes[kind].length > 10 ? ", ..." : ""})`,
        );
      if (parts.length === 0 && !changes.truncated) return null;
      return (
        `[files changed in the workspace while this background command ran: ${parts.join("; ") || "none found"}${changes.truncated ? " (the workspace is larger than the manifest, so this is partial)" : ""}. ` +
        "A background command works on the workspace itself, so these are summarized, not recorded as file changes, and cannot be reverted; other calls running meanwhile are included.]"
      );
    },
  };
}
