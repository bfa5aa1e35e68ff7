import { createRoute, z } from "@hono/zod-openapi";
import { notFound } from "../../errors.js";
import { fileChangeWire } from "../../files/file-change-wire.js";
import type { ApiServices, App } from "../app-env.js";
import { ErrorSchema, errorResponses, hostRequestResponses, IdParam } from "../schemas.js";
import { findSession, idOf } from "./find-owned.js";

const FileChangeSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    runId: z.string(),
    toolCallId: z.string().nullable(),
    path: z.string(),
    existedBefore: z.boolean(),
    modeBefore: z.number().nullable(),
    modeAfter: z.number().nullable(),
    sha256Before: z.string().nullable(),
    sha256After: z.string().nullable(),
    notApplied: z.enum(["changed_since"]).nullable().openapi({
      description:
        "Set when the change was recorded but not made: the workspace's file changed after the command made its version (SPEC X7), so the newer content was kept. Both versions are kept; a revert has nothing to undo.",
    }),
    revertedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("FileChange");
const FileChangeWithDiffSchema = FileChangeSchema.extend({ diff: z.string() }).openapi("FileChangeWithDiff");

const listChanges = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/file-changes",
  summary: "File changes of a session, oldest first (review)",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: z.object({ fileChanges: z.array(FileChangeSchema) }) } }, description: "Changes" },
    ...errorResponses,
  },
});

const getChange = createRoute({
  method: "get",
  path: "/v1/file-changes/{id}",
  summary: "One file change with its unified diff",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: FileChangeWithDiffSchema } }, description: "The change" },
    ...errorResponses,
  },
});

const revert = createRoute({
  method: "post",
  path: "/v1/file-changes/{id}/revert",
  summary: "Revert a change, or it and every later change of its session; refused with 409 if a file changed since",
  request: {
    params: IdParam,
    body: { content: { "application/json": { schema: z.object({ andLater: z.boolean().default(false) }).strict() } }, required: false },
  },
  responses: {
    200: {
      content: { "application/json": { schema: z.object({ reverted: z.array(FileChangeSchema) }) } },
      description: "What was reverted",
    },
    409: {
      content: { "application/json": { schema: ErrorSchema } },
      description: "A file changed since, or the change was already reverted",
    },
    ...errorResponses,
    ...hostRequestResponses,
  },
});

export function registerFileChangeRoutes(app: App, services: ApiServices): void {
  app.openapi(listChanges, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const rows = await services.store.fileChanges.fileChangesOfSession(session.id);
    return c.json({ fileChanges: rows.map(fileChangeWire) }, 200);
  });

  app.openapi(getChange, async (c) => {
    const row = await services.store.fileChanges.fileChangeOfTenant(c.get("tenantId"), idOf("fch", c.req.valid("param").id, "file change"));
    if (!row) throw notFound("file change");
    return c.json({ ...fileChangeWire(row), diff: row.diff }, 200);
  });

  app.openapi(revert, async (c) => {
    const body = c.req.valid("json") as { andLater?: boolean } | undefined;
    const tenantId = c.get("tenantId");
    const changeId = idOf("fch", c.req.valid("param").id, "file change");
    const owned = await services.store.fileChanges.fileChangeSessionOfTenant(tenantId, changeId);
    if (!owned) throw notFound("file change");
    // The files are on the project's host (SPEC W3): the revert runs there.
    const { reverted } = await services.hostRequests.ask(
      { tenantId, projectId: owned.projectId },
      { operation: "revert-file-changes", changeId, andLater: body?.andLater ?? false },
    );
    return c.json({ reverted }, 200);
  });
}
