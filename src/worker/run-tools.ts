import type { ScopedTools } from "../mcp/tool-catalog.js";
import type { JobContext } from "./job-context.js";

/**
 * The tools a run's project offers (built-ins plus its MCP servers', SPEC M1), resolved
 * before the job claims the run: starting an MCP server may take seconds, and no
 * transaction or lease should wait for it. A run that does not exist gets the built-ins;
 * its claim then finds it gone.
 */
export async function toolsOfRun(context: JobContext, runId: string): Promise<ScopedTools> {
  const { services } = context;
  const scope = await context.sessionContexts.scopeOfRun(services.db.db, runId);
  return scope ? services.catalog.forProject(scope) : { registry: services.tools, executor: services.executor };
}
