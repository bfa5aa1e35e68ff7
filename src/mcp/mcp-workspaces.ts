import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import type { SandboxRunner } from "../sandbox/sandbox-runner.js";
import { toolIdentity, type IdentityMode } from "../sandbox/tool-identity.js";
import { effectiveToolLimits, type TenantSettingsCache } from "../tenants/tenant-settings.js";
import { createWorkspaceFolder, type WorkspaceOwnership } from "../workspace/project-workspace.js";
import type { McpSandbox } from "./mcp-config.js";
import { sanitizeMcpNamePart } from "./mcp-tools.js";

/**
 * Where and as whom stdio servers run: a project's server in the project's
 * workspace on this host, the one it is placed on (it may work on the project's
 * files, like the project's tools; SPEC W3); a
 * tenant-wide server in a folder of its own under the tenant's workspaces,
 * which no project sees. Either way as the tenant's uid, within its limits.
 */
export function mcpSandbox(options: {
  runner: SandboxRunner;
  store: Pick<Store, "projects">;
  config: Pick<Config, "workspaces" | "toolLimits" | "mcp">;
  tenantSettings: TenantSettingsCache;
  identityMode: IdentityMode;
  workspaceOwnership: WorkspaceOwnership;
}): McpSandbox {
  return {
    runner: options.runner,
    confined: options.config.mcp.sandbox,
    async placeFor(scope, name) {
      const settings = await options.tenantSettings.get(scope.tenantId);
      const identity = toolIdentity(options.identityMode, settings.toolUidSlot);
      const limits = effectiveToolLimits(options.config, settings);
      if (scope.projectId !== null) {
        if ((await options.store.projects.ownedProjectWorkspace(scope.tenantId, scope.projectId)) === undefined)
          throw new Error(`project ${scope.projectId} does not exist`);
        // This host's copy of the project (SPEC W3), where its batches run; made if it has none yet.
        const workspacePath = await createWorkspaceFolder(options.config.workspaces.dir, [scope.tenantId, scope.projectId], identity);
        await options.workspaceOwnership.ensure(workspacePath, identity);
        return { workspaceDir: workspacePath, identity, limits };
      }
      const workspaceDir = await createWorkspaceFolder(
        options.config.workspaces.dir,
        [scope.tenantId, "_mcp", sanitizeMcpNamePart(name)],
        identity,
      );
      return { workspaceDir, identity, limits };
    },
  };
}
