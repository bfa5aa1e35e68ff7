import type { ScopedTools } from "../mcp/tool-catalog.js";
import type { JobDeps } from "./job-deps.js";
import type { SessionContextCache } from "./session-context-cache.js";
import type { RunId } from "../ids.js";

/**
 * The tools a run's project offers (built-ins plus its MCP servers', SPEC M1), resolved
 * before the job claims the run: starting an MCP server may take seconds, and no
 * transaction or lease should wait for it. A run that does not exist gets the built-ins;
 * its claim then finds it gone.
 */
export async function toolsOfRun(
  context: { deps: Pick<JobDeps, "catalog" | "tools" | "executor">; sessionContexts: SessionContextCache },
  runId: RunId,
): Promise<ScopedTools> {
  const { deps } = context;
  const scope = await context.sessionContexts.scopeOfRun(runId);
  return scope ? deps.catalog.forProject(scope) : { registry: deps.tools, executor: deps.executor };
}
