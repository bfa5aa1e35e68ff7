import { createRoute, z } from "@hono/zod-openapi";
import { describeConfinement } from "../../sandbox/confinement-report.js";
import type { ApiServices, App } from "../app-env.js";

const Health = z.object({
  status: z.enum(["ok", "unavailable"]),
  checks: z.record(z.string(), z.string()).optional(),
  /**
   * How this host confines tool processes (SPEC S7); informative, readiness does not depend on it.
   * Absent from an API-only process, which runs none (its workers log theirs at start-up).
   */
  details: z
    .object({ confinement: z.object({ identity: z.string(), limits: z.string(), sandbox: z.string(), network: z.string() }) })
    .optional(),
});

const healthz = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness",
  responses: { 200: { content: { "application/json": { schema: Health } }, description: "Alive" } },
});

const readyz = createRoute({
  method: "get",
  path: "/readyz",
  summary: "Readiness of Postgres and Redis, and how tool processes are confined on this host (not in an API-only process)",
  responses: {
    200: { content: { "application/json": { schema: Health } }, description: "Ready" },
    503: { content: { "application/json": { schema: Health } }, description: "A dependency is not answering" },
  },
});

/** "ok", "timeout" or "error": the driver's message (hosts, users) goes to the log, not to whoever asked. */
async function check(name: string, probe: () => Promise<unknown>, logger: ApiServices["logger"]): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), 2000).unref()));
  try {
    return (await Promise.race([probe().then(() => "ok" as const), timeout])) === "ok" ? "ok" : "timeout";
  } catch (error) {
    logger.warn({ err: error, dependency: name }, "readiness check failed");
    return "error";
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealthRoutes(app: App, services: ApiServices): void {
  app.openapi(healthz, (c) => c.json({ status: "ok" as const }, 200));
  app.openapi(readyz, async (c) => {
    const checks = {
      postgres: await check("postgres", () => services.store.health.pingPostgres(), services.logger),
      redis: await check("redis", () => services.redis.ping(), services.logger),
    };
    const ok = Object.values(checks).every((value) => value === "ok");
    const described = services.runsTools ? { details: { confinement: describeConfinement(services.config, services.identityMode) } } : {};
    return ok
      ? c.json({ status: "ok" as const, checks, ...described }, 200)
      : c.json({ status: "unavailable" as const, checks, ...described }, 503);
  });
}
