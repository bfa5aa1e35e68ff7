import { createRoute, z } from "@hono/zod-openapi";
import type { ApiServices, App } from "../app-env.js";
import { ErrorSchema, errorResponses, hostRequestResponses, IdParam } from "../schemas.js";
import { findProject } from "./find-owned.js";

const TrashEntrySchema = z
  .object({
    id: z.string(),
    path: z.string().openapi({ description: "Where the entry was, relative to the workspace." }),
    kind: z.enum(["file", "folder", "link", "other"]),
    bytes: z.number().int().nullable(),
    deletedAt: z.string(),
  })
  .openapi("TrashEntry");

const entryId = z.string().regex(/^[0-9a-f-]{36}$/);

const EntryParams = z.object({
  id: IdParam.shape.id,
  entryId: entryId.openapi({ param: { name: "entryId", in: "path" } }),
});

const TrashPageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  after: entryId.optional().openapi({ description: "The `next` of the previous page: entries after this one, older." }),
});

const listProjectTrash = createRoute({
  method: "get",
  path: "/v1/projects/{id}/trash",
  summary:
    "What `delete` and reverts removed from the project's workspace, newest first, in pages (SPEC F4); kept for FOYA_TRASH_RETENTION_DAYS",
  request: { params: IdParam, query: TrashPageQuery },
  responses: {
    200: {
      content: {
        "application/json": {
          schema: z
            .object({
              entries: z.array(TrashEntrySchema),
              next: z.string().nullable().openapi({ description: "Pass as `after` for the next page; null when this page is the last." }),
            })
            .openapi("TrashPage"),
        },
      },
      description: "One page of the project's trash",
    },
    ...errorResponses,
    ...hostRequestResponses,
  },
});

const restoreTrashEntry = createRoute({
  method: "post",
  path: "/v1/projects/{id}/trash/{entryId}/restore",
  summary: "Put a trashed file, link or folder back where it was; its folder must exist and nothing may be there now",
  request: { params: EntryParams },
  responses: {
    200: { content: { "application/json": { schema: z.object({ path: z.string() }) } }, description: "Restored" },
    ...errorResponses,
    ...hostRequestResponses,
    409: {
      content: { "application/json": { schema: ErrorSchema } },
      description: "Something exists at that path again, or its folder is gone",
    },
  },
});

/** The trash is kept on the host the project is placed on (SPEC W3): read and restored there. */
export function registerTrashRoutes(app: App, services: ApiServices): void {
  app.openapi(listProjectTrash, async (c) => {
    const tenantId = c.get("tenantId");
    const project = await findProject(services.store, tenantId, c.req.valid("param").id);
    const { limit, after } = c.req.valid("query");
    const page = await services.hostRequests.ask(
      { tenantId, projectId: project.id },
      { operation: "list-trash", limit, after: after ?? null },
    );
    return c.json(page, 200);
  });

  app.openapi(restoreTrashEntry, async (c) => {
    const { id, entryId } = c.req.valid("param");
    const tenantId = c.get("tenantId");
    const project = await findProject(services.store, tenantId, id);
    const restored = await services.hostRequests.ask({ tenantId, projectId: project.id }, { operation: "restore-trash-entry", entryId });
    return c.json(restored, 200);
  });
}
