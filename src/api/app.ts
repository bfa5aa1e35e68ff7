import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { FoyaError, isFoyaError } from "../errors.js";
import { isConnectionError } from "../startup/dependency-wait.js";
import type { ApiServices, App, AppEnv } from "./app-env.js";
import { foyaErrorResponse } from "./error-response.js";
import { acceptStreamToken, requireAdminToken, requireApiKey } from "./auth.js";
import { createStreamTokens } from "./stream-token.js";
import { registerStreamTokenRoutes } from "./routes/stream-token-routes.js";
import { registerConsoleRoutes } from "./console-routes.js";
import { registerAdminRoutes } from "./routes/admin-routes.js";
import { registerUsageRoutes } from "./routes/usage-routes.js";
import { registerTrashRoutes } from "./routes/trash-routes.js";
import { apiKeyRateLimit } from "./limits/api-key-rate-limit.js";
import { createAuthFailureLockout } from "./limits/auth-failure-lockout.js";
import { createEventStreamSlots } from "./limits/event-stream-slots.js";
import { createFixedWindowCounter } from "./limits/fixed-window-counter.js";
import { requestBodyLimit } from "./limits/request-body-limit.js";
import { findUnstorableString } from "./limits/unstorable-string.js";
import { registerApprovalRoutes } from "./routes/approval-routes.js";
import { registerArtifactRoutes } from "./routes/artifact-routes.js";
import { registerCommandRoutes } from "./routes/command-routes.js";
import { registerCheckpointRoutes } from "./routes/checkpoint-routes.js";
import { registerBranchRoutes } from "./routes/branch-routes.js";
import { registerFileChangeRoutes } from "./routes/file-change-routes.js";
import { registerMcpRoutes } from "./routes/mcp-routes.js";
import { registerHealthRoutes } from "./routes/health-routes.js";
import { registerMetricsRoutes } from "./routes/metrics-routes.js";
import { requestTelemetry } from "./request-telemetry.js";
import { registerPolicyRoutes } from "./routes/policy-routes.js";
import { registerProjectRoutes } from "./routes/project-routes.js";
import { registerRunRoutes } from "./routes/run-routes.js";
import { registerSessionRoutes } from "./routes/session-routes.js";
import { registerTenantRoutes } from "./routes/tenant-routes.js";
import { registerToolRoutes } from "./routes/tool-routes.js";
import { registerWebhookRoutes } from "./routes/webhook-routes.js";
import { createSessionFeeds } from "./session-feed.js";
import { createSessionSequenceWatch } from "./session-sequence-watch.js";

/**
 * The routes behind an API key. `/x/*` also matches `/x`, and a request must match exactly one
 * of these, or it would be authenticated, and counted by the rate limit, more than once.
 */
const tenantPaths = [
  "/v1/projects/*",
  "/v1/sessions/*",
  "/v1/runs/*",
  "/v1/tools",
  "/v1/file-changes/*",
  "/v1/commands/*",
  "/v1/approvals/*",
  "/v1/policy",
  "/v1/webhooks/*",
  "/v1/artifacts/*",
  "/v1/mcp-servers/*",
  "/v1/usage",
];

/**
 * Builds the HTTP API; tests call `app.request(...)` in-process, servers mount it with @hono/node-server.
 *
 * Every request passes, in order: a request id; authentication (an admin token on /v1/tenants and /v1/admin,
 * an API key on the tenant routes, or a session's stream token on its event stream), refused early for an address with too many failures, then
 * the key's rate limit; the body limit of the route; then the route's schemas, after which any
 * string Postgres cannot store is refused (SPEC S10).
 */
export function createApp(services: ApiServices): App {
  const { config, logger } = services;
  const limits = config.api;
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) {
        const message = result.error.issues.map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`).join("; ");
        return c.json({ error: { code: "bad_request", message } }, 400);
      }
      const unstorable = findUnstorableString(result.data);
      if (unstorable !== undefined) {
        const where = `${result.target === "json" ? "body" : result.target}${unstorable}`;
        return c.json({ error: { code: "bad_request", message: `${where}: must not contain NUL characters or unpaired surrogates` } }, 400);
      }
      return undefined;
    },
  });

  const internalError = (c: Context<AppEnv>, error: Error) => {
    // Driver and library messages can hold SQL, hosts or connection strings: logged, never answered.
    const id = c.get("requestId");
    logger.error({ err: error, requestId: id, method: c.req.method, path: c.req.path }, "request failed");
    return c.json({ error: { code: "internal", message: `internal error; the operator can find it in the log by request id ${id}` } }, 500);
  };
  app.onError((error, c) => {
    if (isFoyaError(error) && error.code !== "internal") return foyaErrorResponse(c, error);
    if (error instanceof HTTPException && error.status < 500) {
      return c.json({ error: { code: httpExceptionCode(error.status), message: error.message } }, error.status);
    }
    // A connection lost mid-request is the dependency's outage, not a bug: a transaction it cut
    // rolled back, and work committed before it is carried on by the sweeper (X4), so the client
    // reads the state again or retries, as after any 503.
    if (isConnectionError(error)) {
      logger.warn({ err: error, requestId: c.get("requestId"), method: c.req.method, path: c.req.path }, "request met a dependency outage");
      return foyaErrorResponse(
        c,
        new FoyaError("unavailable", "Postgres or Redis became unreachable during the request; try again shortly", {
          retryAfterSeconds: 1,
        }),
      );
    }
    return internalError(c, error);
  });
  app.notFound((c) => c.json({ error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } }, 404));

  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", { type: "http", scheme: "bearer" });
  app.openAPIRegistry.registerComponent("securitySchemes", "adminToken", { type: "http", scheme: "bearer" });
  app.openAPIRegistry.registerComponent("securitySchemes", "metricsToken", { type: "http", scheme: "bearer" });

  // Middleware first, every route after it: Hono runs both in the order they were added.
  const counter = createFixedWindowCounter(services.redis, logger);
  const lockout = createAuthFailureLockout({ counter, redis: services.redis, logger, limits, keyPrefix: config.redis.queuePrefix });
  app.use("*", requestId());
  app.use("*", requestTelemetry(services));
  // Also matches /v1/tenants itself.
  app.use("/v1/tenants/*", requireAdminToken(config.api.adminToken, lockout));
  app.use("/v1/admin/*", requireAdminToken(config.api.adminToken, lockout));
  const authenticated = requireApiKey(services.store, lockout);
  const rateLimited = apiKeyRateLimit(counter, limits, config.redis.queuePrefix);
  const streamTokens = createStreamTokens(config.api.streamTokenSecret);
  // Before the API key check of /v1/sessions/*, which a valid stream token lets through (SPEC E3).
  app.use("/v1/sessions/:id/events", acceptStreamToken(services.store, lockout, streamTokens));
  for (const path of tenantPaths) app.use(path, authenticated, rateLimited);
  app.use("*", requestBodyLimit(limits));

  registerHealthRoutes(app, services);
  registerMetricsRoutes(app, services, lockout);
  registerTenantRoutes(app, services, lockout);
  registerAdminRoutes(app, services);
  registerProjectRoutes(app, services);
  registerTrashRoutes(app, services);
  registerUsageRoutes(app, services);
  registerSessionRoutes(app, services);
  registerStreamTokenRoutes(app, services, streamTokens);
  registerRunRoutes(app, services, {
    // A slot outlives its stream's last keepalive by a few intervals, so only a dead process's slots lapse.
    slots: createEventStreamSlots({
      redis: services.redis,
      logger,
      keyPrefix: config.redis.queuePrefix,
      max: limits.maxStreamsPerTenant,
      ttlMs: Math.max(5_000, 3 * config.api.sseKeepaliveMs),
    }),
    // One feed per session with open streams in this process: one subscription, parse, frame and gap fill per event.
    feeds: createSessionFeeds({
      store: services.store,
      bus: services.bus,
      sequences: createSessionSequenceWatch(services.store, config.api.sseKeepaliveMs, logger),
      logger,
    }),
  });
  registerToolRoutes(app, services);
  registerFileChangeRoutes(app, services);
  registerCheckpointRoutes(app, services);
  registerBranchRoutes(app, services);
  registerCommandRoutes(app, services);
  registerApprovalRoutes(app, services);
  registerPolicyRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerArtifactRoutes(app, services);
  registerMcpRoutes(app, services);
  registerConsoleRoutes(app, config.api.consoleDir);

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Foya", version: "0.1.0", description: "Durable, multi-tenant runtime for an LLM agent's tool system" },
    security: [{ apiKey: [] }],
  });
  return app;
}

function httpExceptionCode(status: number): string {
  switch (status) {
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    default:
      return "bad_request";
  }
}
