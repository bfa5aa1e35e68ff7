import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError } from "../../errors.js";
import { sameSecret } from "../same-secret.js";
import { presented } from "../auth.js";
import type { AuthFailureLockout } from "../limits/auth-failure-lockout.js";
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
 * admin token, so a scraper's secret opens nothing else. Wrong tokens are counted and locked out
 * like every other credential (SPEC S10), in a scope of their own. Without a token configured the
 * route does not exist here (404); `FOYA_METRICS_PORT` serves the same text on a port of its own.
 */
export function registerMetricsRoutes(
  app: App,
  services: Pick<ApiServices, "config" | "metrics">,
  lockout: Pick<AuthFailureLockout, "check" | "record">,
): void {
  const token = services.config.metrics.token;
  if (!token) return;
  const expected = Buffer.from(`Bearer ${token}`);
  const refused = () => new FoyaError("unauthorized", "GET /metrics needs Authorization: Bearer <FOYA_METRICS_TOKEN>");
  app.openapi(getMetrics, async (c) => {
    const header = c.req.header("authorization");
    if (header === undefined) throw refused();
    const credential = presented("metrics", header);
    await lockout.check(c, credential);
    if (!sameSecret(Buffer.from(header), expected)) {
      await lockout.record(c, credential);
      throw refused();
    }
    const { registry } = services.metrics;
    return c.text(await registry.metrics(), 200, { "content-type": registry.contentType });
  });
}
