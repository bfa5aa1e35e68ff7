import { createRoute } from "@hono/zod-openapi";
import { newId } from "../../ids.js";
import { deleteProject } from "../../runs/delete-project.js";
import { hostWorkspacePath } from "../../workspace/host-copies.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam, ProjectCreateSchema, ProjectSchema } from "../schemas.js";
import { serializeProject } from "../serialize.js";
import { findProject, idOf } from "./find-owned.js";

const createProject = createRoute({
  method: "post",
  path: "/v1/projects",
  summary: "Create a project; the server chooses its workspace folder",
  request: { body: { content: { "application/json": { schema: ProjectCreateSchema } }, required: true } },
  responses: { 201: { content: { "application/json": { schema: ProjectSchema } }, description: "Created" }, ...errorResponses },
});

const getProject = createRoute({
  method: "get",
  path: "/v1/projects/{id}",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: ProjectSchema } }, description: "The project" }, ...errorResponses },
});

const deleteProjectRoute = createRoute({
  method: "delete",
  path: "/v1/projects/{id}",
  summary:
    "Delete a project: it answers 404 at once and its sessions are deleted (runs cancelled, history kept); its workspace and its trash are then removed for good by a worker, in the background",
  request: { params: IdParam },
  responses: { 204: { description: "Deleted; its files are being removed" }, ...errorResponses },
});

export function registerProjectRoutes(app: App, services: ApiServices): void {
  app.openapi(createProject, async (c) => {
    const { name } = c.req.valid("json");
    const tenantId = c.get("tenantId");
    const id = newId("prj");
    // No folder is made here (SPEC W3): the host the project is placed on makes it for its first batch.
    const workspacePath = hostWorkspacePath(services.config.workspaces.dir, { tenantId, projectId: id });
    const project = await services.store.projects.insertProject({ id, tenantId, name, workspacePath });
    if (!project) throw new Error("project insert returned nothing");
    return c.json(serializeProject(project), 201);
  });

  app.openapi(getProject, async (c) => {
    const project = await findProject(services.store, c.get("tenantId"), c.req.valid("param").id);
    return c.json(serializeProject(project), 200);
  });

  app.openapi(deleteProjectRoute, async (c) => {
    await deleteProject(services, { tenantId: c.get("tenantId"), projectId: idOf("prj", c.req.valid("param").id, "project") });
    return c.body(null, 204);
  });
}
