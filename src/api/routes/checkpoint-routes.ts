import { createRoute, z } from "@hono/zod-openapi";
import type { CheckpointRow } from "../../store/checkpoints.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { findSession } from "./find-owned.js";

/**
 * A session's workspace checkpoints (SPEC W1): one per tool batch that may have changed the
 * workspace, with the run and step it followed. What a client shows on a run's steps, and what a
 * fork or a rewind will name.
 */
const CheckpointSchema = z
  .object({
    id: z.string(),
    seq: z.number().int().openapi({ description: "1, 2, … per project, in the order they were taken." }),
    runId: z.string().nullable(),
    stepIndex: z.number().int().nullable(),
    reason: z.enum(["batch", "catch_up", "before_rewind", "rewind", "fork"]).openapi({
      description:
        "`batch`: after a tool batch; `catch_up`: changes the project's own work made since, taken before a batch; `before_rewind`: the folder when a rewind was asked for; `rewind`, `fork`: an earlier tree made the latest again.",
    }),
    full: z.boolean().openapi({ description: "A whole tree; otherwise a delta against the checkpoint before it." }),
    entryCount: z.number().int(),
    fileBytes: z.number().int(),
    treeDigest: z.string().openapi({ description: "sha256 of the whole tree's entries: equal trees, equal digests." }),
    createdAt: z.string(),
  })
  .openapi("Checkpoint");

function serialize(row: CheckpointRow) {
  return {
    id: row.id,
    seq: row.seq,
    runId: row.runId,
    stepIndex: row.stepIndex,
    reason: row.reason,
    full: row.baseId === null,
    entryCount: row.entryCount,
    fileBytes: row.fileBytes,
    treeDigest: row.treeDigest,
    createdAt: row.createdAt.toISOString(),
  };
}

const listCheckpoints = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/checkpoints",
  summary: "Workspace checkpoints of a session, oldest first",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: z.object({ checkpoints: z.array(CheckpointSchema) }) } }, description: "Checkpoints" },
    ...errorResponses,
  },
});

export function registerCheckpointRoutes(app: App, services: ApiServices): void {
  app.openapi(listCheckpoints, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const rows = await services.store.checkpoints.checkpointsOfSession(session.tenantId, session.id);
    return c.json({ checkpoints: rows.map(serialize) }, 200);
  });
}
