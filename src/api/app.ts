import { OpenAPIHono } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import { isFoyaError } from "../errors.js";
import type { ApiServices, App, AppEnv } from "./app-env.js";
import { requireApiKey } from "./auth.js";
import { registerApprovalRoutes } from "./routes/approval-routes.js";
import { registerArtifactRoutes } from "./routes/artifact-routes.js";
import { registerCommandRoutes } from "./routes/command-routes.js";
import { registerFileChangeRoutes } from "./routes/file-change-routes.js";
import { registerMcpRoutes } from "./routes/mcp-routes.js";
import { registerHealthRoutes } from "./routes/health-routes.js";
import { registerPolicyRoutes } from "./routes/policy-routes.js";
import { registerProjectRoutes } from "./routes/project-routes.js";
import { registerRunRoutes } from "./routes/run-routes.js";
import { registerSessionRoutes } from "./routes/session-routes.js";
import { registerTenantRoutes } from "./routes/tenant-routes.js";
import { registerToolRoutes } from "./routes/tool-routes.js";
import { registerWebhookRoutes } from "./routes/webhook-routes.js";

/** Builds the HTTP API; tests call `app.request(...)` in-process, servers mount it with @hono/node-server. */
export function createApp(services: ApiServices): App {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) {
        const message = result.error.issues.map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`).join("; ");
        return c.json({ error: { code: "bad_request", message } }, 400);
      }
      return undefined;
    },
  });

  app.onError((error, c) => {
    if (isFoyaError(error)) {
      return c.json({ error: { code: error.code, message: error.message } }, error.httpStatus as 400);
    }
    if (error instanceof HTTPException) {
      return c.json({ error: { code: error.status === 415 ? "unsupported_media_type" : "bad_request", message: error.message } }, error.status);
    }
    services.logger.error({ err: error, path: c.req.path }, "request failed");
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  app.notFound((c) => c.json({ error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } }, 404));

  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", { type: "http", scheme: "bearer" });
  app.openAPIRegistry.registerComponent("securitySchemes", "adminToken", { type: "http", scheme: "bearer" });

  registerHealthRoutes(app, services);
  registerTenantRoutes(app, services);
  const authenticated = requireApiKey(services.db.db);
  for (const path of ["/v1/projects", "/v1/projects/*", "/v1/sessions", "/v1/sessions/*", "/v1/runs/*", "/v1/tools", "/v1/file-changes/*", "/v1/commands/*", "/v1/approvals", "/v1/approvals/*", "/v1/policy", "/v1/webhooks", "/v1/webhooks/*", "/v1/artifacts/*", "/v1/mcp-servers", "/v1/mcp-servers/*"]) {
    app.use(path, authenticated);
  }
  registerProjectRoutes(app, services);
  registerSessionRoutes(app, services);
  registerRunRoutes(app, services);
  registerToolRoutes(app, services);
  registerFileChangeRoutes(app, services);
  registerCommandRoutes(app, services);
  registerApprovalRoutes(app, services);
  registerPolicyRoutes(app, services);
  registerWebhookRoutes(app, services);
  registerArtifactRoutes(app, services);
  registerMcpRoutes(app, services);

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Foya", version: "0.1.0", description: "Durable, multi-tenant runtime for an LLM agent's tool system" },
    security: [{ apiKey: [] }],
  });
  return app;
}
