import { createRoute, z } from "@hono/zod-openapi";
import type { ApiServices, App } from "../app-env.js";
import { adminDisabledResponse, errorResponses } from "../schemas.js";

const WorkerSchema = z
  .object({
    id: z.string(),
    host: z.string(),
    pid: z.number().int(),
    startedAt: z.string(),
    lastSeenAt: z.string(),
    jobs: z.record(z.string(), z.number().int()).openapi({ description: "Jobs running per queue (`steps`, `tools`) at the last renewal." }),
    commands: z.number().int().openapi({ description: "Background commands the worker holds." }),
  })
  .openapi("Worker");

const listWorkers = createRoute({
  method: "get",
  path: "/v1/admin/workers",
  summary: "Live worker processes and what they hold, from their liveness records (admin token only)",
  security: [{ adminToken: [] }],
  responses: {
    200: {
      content: { "application/json": { schema: z.object({ workers: z.array(WorkerSchema) }) } },
      description: "Workers renewed within the liveness timeout",
    },
    ...errorResponses,
    ...adminDisabledResponse,
  },
});

/** Behind the admin token, which `createApp` checks on /v1/admin and below. */
export function registerAdminRoutes(app: App, services: ApiServices): void {
  app.openapi(listWorkers, async (c) => {
    const rows = await services.store.workers.liveWorkers(services.config.workers.livenessTimeoutMs);
    const workers = rows.map((row) => ({
      id: row.id,
      host: row.host,
      pid: row.pid,
      startedAt: row.startedAt.toISOString(),
      lastSeenAt: row.lastSeenAt.toISOString(),
      jobs: row.jobs,
      commands: row.commands,
    }));
    return c.json({ workers }, 200);
  });
}
