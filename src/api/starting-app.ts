import { Hono } from "hono";
import { requestId } from "hono/request-id";
import { FoyaError, isFoyaError } from "../errors.js";
import { foyaErrorResponse } from "./error-response.js";

/** What a client is told to wait before trying again while the process starts. */
const retryAfterSeconds = 2;

/**
 * What the API answers between listening and serving, while start-up waits for Postgres or
 * Redis (SPEC D9): `/healthz` 200 (the process is alive), `/readyz` 503 with
 * `checks.startup` saying what it waits for, and every other request 503 `starting` with
 * `Retry-After`. Nothing here touches Postgres or Redis.
 */
export function createStartingApp(describe: () => string): Hono {
  const app = new Hono();
  app.use("*", requestId());
  app.get("/healthz", (c) => c.json({ status: "ok" as const }, 200));
  app.get("/readyz", (c) => c.json({ status: "unavailable" as const, checks: { startup: describe() } }, 503));
  app.all("*", () => {
    throw new FoyaError("starting", `the service is starting (${describe()}); try again shortly`, { retryAfterSeconds });
  });
  app.onError((error, c) => {
    if (isFoyaError(error)) return foyaErrorResponse(c, error);
    return c.json({ error: { code: "internal", message: "internal error" } }, 500);
  });
  return app;
}
