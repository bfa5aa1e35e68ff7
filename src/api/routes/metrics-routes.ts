import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError } from "../../errors.js";
import { sameSecret } from "../same-secret.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses } from "../schemas.js";

const getMetrics = createRoute({
  method: "get",
  path: "/metrics",
  summary: "Prometheus metrics of this process and of the shared queues and database (SPEC X8), with the metrics token",
  security: [{ metricsToken: [] }],
  responses: {
    200: { content: { "text/plain": { schema: z.string() } }, description: "Prometheus text exposition format" },
    ...errorResponses,
  },
});

/**
 * `GET /metrics` behind its own bearer token (`FOYA_METRICS_TOKEN`): never an API key or the
 * admin token, so a scraper's secret opens nothing else. Without a token configured the route
 * does not exist here (404); `FOYA_METRICS_PORT` serves the same text on a port of its own.
 */
export function registerMetricsRoutes(app: App, services: Pick<ApiServices, "config" | "metrics">): void {
  const token = services.config.metrics.token;
  if (!token) return;
  const expected = Buffer.from(`Bearer ${token}`);
  app.openapi(getMetrics, async (c) => {
    const given = Buffer.from(c.req.header("authorization") ?? "");
    if (!sameSecret(given, expected)) {
      throw new FoyaError("unauthorized", "GET /metrics needs Authorization: Bearer <FOYA_METRICS_TOKEN>");
    }
    const { registry } = services.metrics;
    return c.text(await registry.metrics(), 200, { "content-type": registry.contentType });
  });
}
