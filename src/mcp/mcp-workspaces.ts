import { mkdir, realpath } from "node:fs/promises";
import path from "node:path";
import { and, eq } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { projects } from "../db/schema.js";
import type { SandboxRunner } from "../sandbox/sandbox-runner.js";
import type { McpSandbox } from "./mcp-config.js";
import { sanitizeMcpNamePart } from "./mcp-tools.js";

/**
 * Where sandboxed stdio servers run: a project's server in the project's workspace (it may
 * work on the project's files, like the project's tools); a tenant-wide server in a folder of
 * its own under the tenant's workspaces, which no project sees.
 */
export function mcpSandbox(options: { runner: SandboxRunner; db: Database; workspacesDir: string }): McpSandbox {
  return {
    runner: options.runner,
    async workspaceFor(scope, name) {
      if (scope.projectId !== null) {
        const [project] = await options.db
          .select({ workspacePath: projects.workspacePath })
          .from(projects)
          .where(and(eq(projects.id, scope.projectId), eq(projects.tenantId, scope.tenantId)));
        if (!project) throw new Error(`project ${scope.projectId} does not exist`);
        return project.workspacePath;
      }
      const folder = path.join(options.workspacesDir, scope.tenantId, "_mcp", sanitizeMcpNamePart(name));
      await mkdir(folder, { recursive: true });
      return realpath(folder);
    },
  };
}
