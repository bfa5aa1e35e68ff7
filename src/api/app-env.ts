import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../services.js";
import type { ApiKeyId, TenantId } from "../ids.js";

/** Typed request context: the authenticated tenant and key, never globals. */
export interface AppEnv {
  Variables: {
    tenantId: TenantId;
    apiKeyId: ApiKeyId;
    /** A stream token opens one session's event stream only (src/api/stream-token.ts). */
    authenticatedBy: "api_key" | "stream_token";
  };
}

export type App = OpenAPIHono<AppEnv>;

/**
 * What route modules receive from the composition root. MCP servers are reached only through
 * workers (`mcpViaWorkers`, `catalogViaWorkers`): no route starts a tool or MCP server process. No
 * route touches a workspace either (SPEC W3): what is done on one is asked of the host the project
 * is placed on (`hostRequests`).
 */
export type ApiServices = Pick<
  Services,
  | "config"
  | "store"
  | "unitOfWork"
  | "bus"
  | "dispatcher"
  | "tools"
  | "executor"
  | "catalogViaWorkers"
  | "providers"
  | "providerBudgets"
  | "failpoints"
  | "redis"
  | "logger"
  | "mcpViaWorkers"
  | "tenantSettings"
  | "identityMode"
  | "runsTools"
  | "metrics"
  | "tracing"
  | "hostRequests"
>;
