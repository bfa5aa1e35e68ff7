import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError, notFound } from "../../errors.js";
import { cancelRun } from "../../runs/cancel-run.js";
import { createRun } from "../../runs/create-run.js";
import type { ApiServices, App } from "../app-env.js";
import type { EventStreamSlots } from "../limits/event-stream-slots.js";
import {
  ErrorSchema,
  errorResponses,
  EventsPageSchema,
  fullAccessRefusedResponse,
  IdParam,
  RunCreateSchema,
  RunSchema,
} from "../schemas.js";
import { serializeRun } from "../serialize.js";
import { streamSessionEvents } from "../session-event-stream.js";
import type { SessionFeeds } from "../session-feed.js";
import { findSession, idOf } from "./find-owned.js";

const startRun = createRoute({
  method: "post",
  path: "/v1/sessions/{id}/runs",
  summary: "Start a turn with the user's input",
  request: { params: IdParam, body: { content: { "application/json": { schema: RunCreateSchema } }, required: true } },
  responses: {
    202: { content: { "application/json": { schema: RunSchema } }, description: "Accepted; the run will reach a terminal state" },
    409: { content: { "application/json": { schema: ErrorSchema } }, description: "The session has an active run (ifActive=reject)" },
    ...errorResponses,
    ...fullAccessRefusedResponse,
  },
});

const getRun = createRoute({
  method: "get",
  path: "/v1/runs/{id}",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: RunSchema } }, description: "The run" }, ...errorResponses },
});

const cancel = createRoute({
  method: "post",
  path: "/v1/runs/{id}/cancel",
  summary: "Cancel a run: running tools are aborted, the partial answer and every call's state are kept",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: RunSchema } }, description: "The run, now terminal" }, ...errorResponses },
});

const listEvents = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/events",
  summary: "Session events: SSE when Accept is text/event-stream (resume with Last-Event-ID), else JSON pages",
  request: {
    params: IdParam,
    query: z.object({
      after: z.coerce.number().int().min(0).default(0),
      limit: z.coerce.number().int().min(1).max(1000).default(200),
      token: z.string().optional().openapi({
        description:
          "A stream token of this session (POST /v1/sessions/{id}/stream-tokens), in place of the Authorization header, for EventSource; an API key is never accepted here.",
      }),
    }),
  },
  responses: {
    200: {
      content: {
        "application/json": { schema: EventsPageSchema },
        "text/event-stream": { schema: z.string().openapi({ description: "id: sequence, event: type, data: the event as JSON" }) },
      },
      description: "Events after the given sequence number",
    },
    ...errorResponses,
    429: {
      ...errorResponses[429],
      description: `${errorResponses[429].description}; for SSE, also: the tenant already has as many open event streams as the deployment allows (too_many_streams)`,
    },
  },
});

/** What the event stream route needs besides the services: the tenant's stream slots and the process's session feeds. */
export interface EventStreamSupport {
  slots: EventStreamSlots;
  feeds: SessionFeeds;
}

export function registerRunRoutes(app: App, services: ApiServices, streams: EventStreamSupport): void {
  app.openapi(startRun, async (c) => {
    const body = c.req.valid("json");
    const run = await createRun(services, {
      tenantId: c.get("tenantId"),
      sessionId: idOf("ses", c.req.valid("param").id, "session"),
      input: body.input,
      ifActive: body.ifActive,
      ...(body.onInterrupted ? { onInterrupted: body.onInterrupted } : {}),
    });
    return c.json(serializeRun(run), 202);
  });

  app.openapi(getRun, async (c) => {
    const run = await services.store.runs.runOfTenant(c.get("tenantId"), idOf("run", c.req.valid("param").id, "run"));
    if (!run) throw notFound("run");
    return c.json(serializeRun(run, await services.store.modelUsage.usageOfRun(run.tenantId, run.id)), 200);
  });

  app.openapi(cancel, async (c) => {
    const run = await cancelRun(services, { tenantId: c.get("tenantId"), runId: idOf("run", c.req.valid("param").id, "run") });
    return c.json(serializeRun(run, await services.store.modelUsage.usageOfRun(run.tenantId, run.id)), 200);
  });

  app.openapi(listEvents, async (c) => {
    const tenantId = c.get("tenantId");
    const session = await findSession(services.store, tenantId, c.req.valid("param").id);
    const query = c.req.valid("query");
    if ((c.req.header("accept") ?? "").includes("text/event-stream")) {
      const lastEventId = Number.parseInt(c.req.header("last-event-id") ?? "", 10);
      const afterSeq = Number.isFinite(lastEventId) && lastEventId >= 0 ? lastEventId : query.after;
      const slot = await streams.slots.acquire(tenantId);
      if (!slot) {
        const max = services.config.api.maxStreamsPerTenant;
        throw new FoyaError(
          "too_many_streams",
          `this tenant already has ${max} open event streams, the most allowed; close one, or read events as JSON pages with ?after=`,
        );
      }
      return streamSessionEvents(c, services, {
        tenantId,
        sessionId: session.id,
        afterSeq,
        keepaliveMs: services.config.api.sseKeepaliveMs,
        slot,
        feeds: streams.feeds,
      }) as never;
    }
    const events = await services.store.events.readEvents(tenantId, session.id, query.after, { limit: query.limit });
    const page = events.map((e) => ({ ...e, data: e.data as unknown as Record<string, unknown> }));
    return c.json({ events: page, next: events.at(-1)?.seq ?? query.after }, 200);
  });
}
