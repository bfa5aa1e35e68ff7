import { createRoute, z } from "@hono/zod-openapi";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, foyaId, ToolInfoSchema } from "../schemas.js";
import { findSession } from "./find-owned.js";
import { dropAgentAtDepthLimit } from "../../agents/child-limits.js";

const McpServerListingSchema = z
  .object({
    name: z.string(),
    projectId: z.string().nullable().openapi({ description: "null for a tenant-wide server" }),
    status: z.enum(["listed", "unavailable"]).openapi({
      description:
        "`unavailable`: the server could not list its tools this time (`error` says why); its tools are missing, or its last known ones",
    }),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  })
  .openapi("McpServerListing");

const listTools = createRoute({
  method: "get",
  path: "/v1/tools",
  summary: "The registry as a session sees it, with exposure, and whether each MCP server of its project answered",
  request: { query: z.object({ session: foyaId() }) },
  responses: {
    200: {
      content: {
        "application/json": { schema: z.object({ tools: z.array(ToolInfoSchema), mcpServers: z.array(McpServerListingSchema) }) },
      },
      description: "Tools",
    },
    ...errorResponses,
  },
});

export function registerToolRoutes(app: App, services: ApiServices): void {
  app.openapi(listTools, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("query").session);
    const { registry, mcpServers } = await services.catalogViaWorkers.forProject({
      tenantId: session.tenantId,
      projectId: session.projectId,
    });
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
    return c.json({ tools, mcpServers }, 200);
  });
}
