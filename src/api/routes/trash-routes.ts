import { createRoute, z } from "@hono/zod-openapi";
import { FoyaError, notFound } from "../../errors.js";
import { dropTrashRecord, findTrashEntry, listTrashPage, projectTrashRoot } from "../../workspace/project-trash.js";
import { projectWorkspaceFiles } from "../../workspace/project-workspace.js";
import { isWorkspaceError } from "../../workspace/workspace-files.js";
import type { ApiServices, App } from "../app-env.js";
import { ErrorSchema, errorResponses, IdParam } from "../schemas.js";
import { findProject } from "./find-owned.js";
import type { TenantId } from "../../ids.js";

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
    409: {
      content: { "application/json": { schema: ErrorSchema } },
      description: "Something exists at that path again, or its folder is gone",
    },
  },
});

export function registerTrashRoutes(app: App, services: ApiServices): void {
  const projectOf = async (tenantId: TenantId, id: string) => {
    const project = await findProject(services.store, tenantId, id);
    return { workspacePath: project.workspacePath, trash: projectTrashRoot(services.config.workspaces.dir, project.workspacePath) };
  };

  app.openapi(listProjectTrash, async (c) => {
    const project = await projectOf(c.get("tenantId"), c.req.valid("param").id);
    const page = await listTrashPage(project.trash, project.workspacePath, c.req.valid("query"));
    return c.json({ entries: page.entries.map((entry) => ({ ...entry, deletedAt: entry.deletedAt.toISOString() })), next: page.next }, 200);
  });

  app.openapi(restoreTrashEntry, async (c) => {
    const { id, entryId } = c.req.valid("param");
    const project = await projectOf(c.get("tenantId"), id);
    const entry = await findTrashEntry(project.trash, project.workspacePath, entryId);
    if (!entry) throw notFound("trash entry");
    const workspace = projectWorkspaceFiles(services.config.workspaces.dir, project.workspacePath);
    try {
      const restored = await workspace.restoreFromTrash(entry.path, entry.hostPath);
      // The entry is back: its record goes too.
      await dropTrashRecord(entry);
      return c.json(restored, 200);
    } catch (error) {
      if (isWorkspaceError(error)) {
        const conflict = error.code === "already_exists" || error.code === "file_not_found" || error.code === "not_a_directory";
        throw new FoyaError(conflict ? "conflict" : "bad_request", error.message);
      }
      throw error;
    }
  });
}
