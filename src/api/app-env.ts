import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../services.js";

/** Typed request context: the authenticated tenant and key, never globals. */
export interface AppEnv {
  Variables: {
    tenantId: string;
    apiKeyId: string;
  };
}

export type App = OpenAPIHono<AppEnv>;

/** What route modules receive from the composition root. */
export type ApiServices = Pick<Services, "config" | "db" | "bus" | "dispatcher" | "tools" | "executor" | "catalog" | "providers" | "failpoints" | "redis" | "logger" | "mcp" | "tenantSettings" | "identityMode" | "metrics" | "tracing">;
