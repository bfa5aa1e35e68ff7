import type { Confinement } from "../../sandbox/confinement.js";
import type { ProcessLimits } from "../../sandbox/process-limits.js";
import type { SandboxRunner } from "../../sandbox/sandbox-runner.js";
import type { ProcessIdentity } from "../../sandbox/tool-identity.js";
import type { CallProcesses } from "../call-processes.js";
import { prepareShell } from "./spawn-shell.js";

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
}): CallProcesses {
  return {
    limits: options.limits,
    async prepare(command, output) {
      if (options.refusal) return { unavailable: options.refusal, code: "full_access_not_granted" };
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
      });
      return "unavailable" in prepared ? { unavailable: prepared.unavailable, code: "sandbox_unavailable" } : prepared;
    },
  };
}
