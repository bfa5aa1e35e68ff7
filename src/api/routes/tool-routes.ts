import { createRoute, z } from "@hono/zod-openapi";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, foyaId, ToolInfoSchema } from "../schemas.js";
import { findSession } from "./find-owned.js";
import { dropAgentAtDepthLimit } from "../../agents/child-limits.js";

const listTools = createRoute({
  method: "get",
  path: "/v1/tools",
  summary: "The registry as a session sees it, with exposure",
  request: { query: z.object({ session: foyaId() }) },
  responses: {
    200: { content: { "application/json": { schema: z.object({ tools: z.array(ToolInfoSchema) }) } }, description: "Tools" },
    ...errorResponses,
  },
});

export function registerToolRoutes(app: App, services: ApiServices): void {
  app.openapi(listTools, async (c) => {
    const session = await findSession(services.db.db, c.get("tenantId"), c.req.valid("query").session);
    const { registry } = await services.catalogViaWorkers.forProject({ tenantId: session.tenantId, projectId: session.projectId });
    const exposed = new Set(
      dropAgentAtDepthLimit(registry.exposedFor(session), session, services.config.runs.agentMaxDepth).map((tool) => tool.name),
    );
    const tools = registry
      .list()
      .filter((tool) => tool.exposure !== "hidden")
      .map((tool) => ({
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        exposure: tool.exposure,
        sideEffect: tool.sideEffect,
        exposedNow: exposed.has(tool.name),
      }));
    return c.json({ tools }, 200);
  });
}
