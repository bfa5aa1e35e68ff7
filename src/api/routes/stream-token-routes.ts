import { createRoute, z } from "@hono/zod-openapi";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { streamTokenTtlSeconds, type StreamTokens } from "../stream-token.js";
import { findSession } from "./find-owned.js";

const StreamTokenSchema = z
  .object({
    token: z
      .string()
      .openapi({ description: "Opens this session's event stream as `GET /v1/sessions/{id}/events?token=…`; nothing else." }),
    sessionId: z.string(),
    expiresAt: z.string().openapi({
      description: `When the token stops opening streams (${streamTokenTtlSeconds} s after minting); a stream already open goes on.`,
    }),
  })
  .openapi("StreamToken");

const mintStreamToken = createRoute({
  method: "post",
  path: "/v1/sessions/{id}/stream-tokens",
  summary:
    "A short-lived token for one session's event stream, for clients such as EventSource that cannot send an Authorization header (the API key never goes in a URL)",
  request: { params: IdParam },
  responses: { 201: { content: { "application/json": { schema: StreamTokenSchema } }, description: "The token" }, ...errorResponses },
});

export function registerStreamTokenRoutes(app: App, services: Pick<ApiServices, "store">, tokens: StreamTokens): void {
  app.openapi(mintStreamToken, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const { token, expiresAt } = tokens.mint({ tenantId: c.get("tenantId"), apiKeyId: c.get("apiKeyId"), sessionId: session.id });
    return c.json({ token, sessionId: session.id, expiresAt: expiresAt.toISOString() }, 201);
  });
}
