import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError, notFound } from "../../errors.js";
import { refusedLiteralHost } from "../../net/address-guard.js";
import type { DeliveryWithAttempts, WebhookRow } from "../../store/webhooks.js";
import { generateWebhookSecret } from "../../webhooks/webhook-signature.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam, WebhookCreatedSchema, WebhookCreateSchema, WebhookDeliverySchema, WebhookSchema } from "../schemas.js";
import { idOf } from "./find-owned.js";

/** Never includes the secret: it is shown once, when the webhook is created. */
function serializeWebhook(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    eventTypes: row.eventTypes,
    description: row.description,
    enabled: row.disabledAt === null,
    createdAt: row.createdAt.toISOString(),
    disabledAt: row.disabledAt ? row.disabledAt.toISOString() : null,
  };
}

function serializeDelivery({ delivery, attempts }: DeliveryWithAttempts) {
  return {
    id: delivery.id,
    eventType: delivery.eventType,
    sessionId: delivery.sessionId,
    eventSeq: delivery.eventSeq,
    status: delivery.status,
    payload: delivery.payload,
    attempts: attempts.map((a) => ({
      id: a.id,
      attempt: a.attempt,
      statusCode: a.statusCode,
      error: a.error,
      durationMs: a.durationMs,
      at: a.createdAt.toISOString(),
    })),
    createdAt: delivery.createdAt.toISOString(),
    deliveredAt: delivery.deliveredAt ? delivery.deliveredAt.toISOString() : null,
  };
}

const create = createRoute({
  method: "post",
  path: "/v1/webhooks",
  summary: "Subscribe a URL to event types; deliveries are signed (Standard Webhooks) and retried with backoff",
  request: { body: { content: { "application/json": { schema: WebhookCreateSchema } }, required: true } },
  responses: {
    201: { content: { "application/json": { schema: WebhookCreatedSchema } }, description: "Created; the secret is shown only here" },
    ...errorResponses,
  },
});
const list = createRoute({
  method: "get",
  path: "/v1/webhooks",
  summary: "The tenant's webhooks, disabled ones included, without secrets",
  responses: {
    200: { content: { "application/json": { schema: z.object({ webhooks: z.array(WebhookSchema) }) } }, description: "Webhooks" },
    ...errorResponses,
  },
});
const get = createRoute({
  method: "get",
  path: "/v1/webhooks/{id}",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: WebhookSchema } }, description: "The webhook" }, ...errorResponses },
});
const remove = createRoute({
  method: "delete",
  path: "/v1/webhooks/{id}",
  summary: "Disable a webhook: no new deliveries, and pending ones are not sent; the delivery log is kept",
  request: { params: IdParam },
  responses: { 204: { description: "Disabled" }, ...errorResponses },
});
const deliveries = createRoute({
  method: "get",
  path: "/v1/webhooks/{id}/deliveries",
  summary: "Recent deliveries, newest first, with every attempt",
  request: { params: IdParam, query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }) },
  responses: {
    200: {
      content: { "application/json": { schema: z.object({ deliveries: z.array(WebhookDeliverySchema) }) } },
      description: "Deliveries",
    },
    ...errorResponses,
  },
});

export function registerWebhookRoutes(app: App, services: ApiServices): void {
  const { store } = services;

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    if (!services.config.webhooks.allowPrivate) {
      const refused = refusedLiteralHost(new URL(body.url).hostname);
      if (refused) throw new FoyaError("bad_request", `url: ${refused}`);
    }
    const eventTypes = body.eventTypes.includes("*") ? ["*"] : [...new Set(body.eventTypes)];
    const row = await store.webhooks.createWebhook({
      tenantId: c.get("tenantId"),
      url: body.url,
      eventTypes,
      description: body.description ?? null,
      secret: generateWebhookSecret(),
    });
    return c.json({ webhook: serializeWebhook(row), secret: row.secret }, 201);
  });

  app.openapi(list, async (c) => {
    const rows = await store.webhooks.listWebhooks(c.get("tenantId"));
    return c.json({ webhooks: rows.map(serializeWebhook) }, 200);
  });

  app.openapi(get, async (c) => {
    const row = await store.webhooks.findWebhook(c.get("tenantId"), idOf("whk", c.req.valid("param").id, "webhook"));
    if (!row) throw notFound("webhook");
    return c.json(serializeWebhook(row), 200);
  });

  app.openapi(remove, async (c) => {
    const row = await store.webhooks.disableWebhook(c.get("tenantId"), idOf("whk", c.req.valid("param").id, "webhook"));
    if (!row) throw notFound("webhook");
    return c.body(null, 204);
  });

  app.openapi(deliveries, async (c) => {
    const row = await store.webhooks.findWebhook(c.get("tenantId"), idOf("whk", c.req.valid("param").id, "webhook"));
    if (!row) throw notFound("webhook");
    const rows = await store.webhooks.listDeliveries(row.id, c.req.valid("query").limit);
    return c.json({ deliveries: rows.map(serializeDelivery) }, 200);
  });
}
