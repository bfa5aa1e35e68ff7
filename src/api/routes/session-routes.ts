import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError, notFound } from "../../errors.js";
import { newId } from "../../ids.js";
import { deleteSession } from "../../runs/delete-session.js";
import { fullAccessRefusal, readTenantSettings } from "../../tenants/tenant-settings.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, fullAccessRefusedResponse, IdParam, MessageSchema, SessionCreateSchema, SessionSchema } from "../schemas.js";
import { serializeMessage, serializeSession } from "../serialize.js";
import { findProject, findSession, idOf } from "./find-owned.js";

const createSession = createRoute({
  method: "post",
  path: "/v1/sessions",
  summary: "Create a session in a project",
  request: { body: { content: { "application/json": { schema: SessionCreateSchema } }, required: true } },
  responses: {
    201: { content: { "application/json": { schema: SessionSchema } }, description: "Created" },
    ...errorResponses,
    ...fullAccessRefusedResponse,
  },
});

const listSessions = createRoute({
  method: "get",
  path: "/v1/sessions",
  summary: "The tenant's sessions that are not deleted, newest first (sub-agents' included: see parent)",
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }) },
  responses: {
    200: { content: { "application/json": { schema: z.object({ sessions: z.array(SessionSchema) }) } }, description: "Sessions" },
    ...errorResponses,
  },
});

const getSession = createRoute({
  method: "get",
  path: "/v1/sessions/{id}",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: SessionSchema } }, description: "The session" }, ...errorResponses },
});

const removeSession = createRoute({
  method: "delete",
  path: "/v1/sessions/{id}",
  summary: "Delete a session: cancels its runs, keeps its history for audit",
  request: { params: IdParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses },
});

const listMessages = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/messages",
  summary: "Canonical history, in the order the model sees it",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: z.object({ messages: z.array(MessageSchema) }) } }, description: "History" },
    ...errorResponses,
  },
});

export function registerSessionRoutes(app: App, services: ApiServices): void {
  app.openapi(createSession, async (c) => {
    const body = c.req.valid("json");
    const tenantId = c.get("tenantId");
    const project = await findProject(services.store, tenantId, body.projectId);
    const providerProfile = body.providerProfile ?? services.config.providers.defaultProfile;
    if (!services.providers.has(providerProfile)) {
      throw new FoyaError("bad_request", `provider profile "${providerProfile}" is not configured on this server`);
    }
    if (body.approvalMode === "full_access") {
      // Read now, not cached: a grant the operator just gave or revoked applies at once.
      const settings = await readTenantSettings(services.store, tenantId);
      if (!settings) throw notFound("tenant");
      const refusal = fullAccessRefusal(services.config, settings);
      if (refusal) throw new FoyaError("full_access_not_granted", refusal);
    }
    const session = await services.store.sessions.insertSession({
      id: newId("ses"),
      tenantId,
      projectId: project.id,
      approvalMode: body.approvalMode,
      providerProfile,
      model: body.model ?? null,
      toolAllowList: body.toolAllowList ?? null,
      runMode: body.runMode,
      onInterrupted: body.onInterrupted,
      systemPrompt: body.systemPrompt ?? null,
    });
    if (!session) throw new Error("session insert returned nothing");
    return c.json(serializeSession(session), 201);
  });

  app.openapi(listSessions, async (c) => {
    const rows = await services.store.sessions.listLiveSessions(c.get("tenantId"), c.req.valid("query").limit);
    return c.json({ sessions: rows.map(serializeSession) }, 200);
  });

  app.openapi(getSession, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    return c.json(serializeSession(session), 200);
  });

  app.openapi(removeSession, async (c) => {
    await deleteSession(services, { tenantId: c.get("tenantId"), sessionId: idOf("ses", c.req.valid("param").id, "session") });
    return c.body(null, 204);
  });

  app.openapi(listMessages, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const rows = await services.store.messages.messagesOfSession(session.id);
    return c.json({ messages: rows.map(serializeMessage) }, 200);
  });
}
