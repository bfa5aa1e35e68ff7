import { createRoute, z } from "@hono/zod-openapi";
import { forkSession } from "../../branches/fork-session.js";
import { rewindSession } from "../../branches/rewind-session.js";
import type { BranchAt } from "../../core/branch.js";
import type { BranchId, RunId } from "../../ids.js";
import { notFound } from "../../errors.js";
import { rewindTipViaHost } from "../../hosts/rewind-tip-via-host.js";
import type { BranchRow } from "../../store/branches.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam, MessageSchema, SessionSchema } from "../schemas.js";
import { serializeMessage, serializeSession } from "../serialize.js";
import { findSession, idOf } from "./find-owned.js";

/**
 * Forks and rewinds (SPEC W2): a new session from any committed point of a session's history,
 * with the workspace as it stood there; or the same session taken back to that point, what
 * followed kept as a branch that a later rewind can bring back.
 */
const PointSchema = z
  .object({
    runOrdinal: z.number().int().openapi({ description: "The run's place in the session (1, 2, …); 0: the start." }),
    stepIndex: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "After this step of the run (its tool results included); null: after the whole run." }),
  })
  .openapi("HistoryPoint");

const AtSchema = z
  .union([
    z.object({ runId: z.string(), stepIndex: z.number().int().min(0).optional() }).strict(),
    z.object({ stepIndex: z.number().int().min(0) }).strict(),
    z.object({ messageId: z.string() }).strict(),
  ])
  .openapi("BranchPoint", {
    description:
      "`runId`: after that run (or after its step `stepIndex`); `stepIndex` alone: a step of the latest run; `messageId`: a user message goes back to just before its run (edit and resend), any other message to the end of its step.",
  });

const NotUndoneSchema = z
  .object({
    toolCallId: z.string(),
    callId: z.string(),
    runId: z.string(),
    stepIndex: z.number().int(),
    name: z.string(),
    reason: z.enum(["network", "mcp", "unknown_effects", "background_command", "full_access", "sub_agent"]),
    stillRunning: z.boolean(),
  })
  .openapi("NotUndoneCall", {
    description: "A call after the point whose effects no checkpoint takes back: they happened outside the workspace's files.",
  });

const BranchSchema = z
  .object({
    id: z.string(),
    at: PointSchema,
    runIds: z
      .array(z.string())
      .openapi({ description: "Whole runs set aside (a run cut by the point keeps its place; its later steps are here)." }),
    messageCount: z.number().int(),
    tipCheckpointId: z.string().nullable().openapi({ description: "The workspace when the rewind was asked for." }),
    rewoundToCheckpointId: z.string().nullable(),
    restoredAt: z.string().nullable().openapi({ description: "Set once a later rewind brought this branch back." }),
    createdAt: z.string(),
  })
  .openapi("Branch");

const forkRoute = createRoute({
  method: "post",
  path: "/v1/sessions/{id}/fork",
  summary:
    "A new session in a new project from a point of this session's committed history, with the workspace as it stood then; no tool runs again",
  request: { params: IdParam, body: { content: { "application/json": { schema: z.object({ at: AtSchema }) } }, required: true } },
  responses: {
    201: {
      content: {
        "application/json": {
          schema: z.object({
            session: SessionSchema,
            projectId: z.string(),
            checkpointId: z.string(),
            runs: z.array(z.object({ from: z.string(), to: z.string(), ordinal: z.number().int(), cancelled: z.boolean() })),
            notUndone: z.array(NotUndoneSchema),
          }),
        },
      },
      description: "Forked",
    },
    ...errorResponses,
  },
});

const rewindRoute = createRoute({
  method: "post",
  path: "/v1/sessions/{id}/rewind",
  summary:
    "Take an idle session back to a point: later history becomes a branch, the workspace returns to that point before the next batch",
  request: {
    params: IdParam,
    body: {
      content: {
        "application/json": {
          schema: z.object({
            at: z.union([AtSchema, z.object({ branchId: z.string() }).strict()]).openapi({
              description: "A point as for a fork, or `branchId`: back to the tip of a branch an earlier rewind set aside.",
            }),
          }),
        },
      },
      required: true,
    },
  },
  responses: {
    200: {
      content: {
        "application/json": {
          schema: z.object({
            branch: BranchSchema,
            checkpointId: z.string(),
            tipCheckpointId: z.string().nullable(),
            restoredBranchId: z.string().nullable(),
            notUndone: z.array(NotUndoneSchema),
          }),
        },
      },
      description: "Rewound",
    },
    ...errorResponses,
  },
});

const listBranches = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/branches",
  summary: "What rewinds of this session set aside, newest first",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: z.object({ branches: z.array(BranchSchema) }) } }, description: "Branches" },
    ...errorResponses,
  },
});

const branchMessages = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/branches/{branchId}/messages",
  summary: "The messages a rewind set aside, in history order (read-only)",
  request: { params: IdParam.extend({ branchId: z.string() }) },
  responses: {
    200: { content: { "application/json": { schema: z.object({ messages: z.array(MessageSchema) }) } }, description: "Messages" },
    ...errorResponses,
  },
});

function serializeBranch(row: BranchRow & { runIds?: RunId[] }) {
  return {
    id: row.id,
    at: row.at,
    runIds: row.runIds ?? [],
    messageCount: row.messageCount,
    tipCheckpointId: row.tipCheckpointId,
    rewoundToCheckpointId: row.rewoundToCheckpointId,
    restoredAt: row.restoredAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

/** The wire's `at` as the service's: ids stay raw here, checked where they are looked up (unknown: 404). */
function atOf(
  raw: { runId: string; stepIndex?: number } | { stepIndex: number } | { messageId: string },
): Exclude<BranchAt, { branchId: unknown }> {
  if ("runId" in raw) return { runId: raw.runId as RunId, ...(raw.stepIndex !== undefined ? { stepIndex: raw.stepIndex } : {}) };
  return raw;
}

export function registerBranchRoutes(app: App, services: ApiServices): void {
  app.openapi(forkRoute, async (c) => {
    const tenantId = c.get("tenantId");
    const sessionId = idOf("ses", c.req.valid("param").id, "session");
    // No folder is made here (SPEC W3): the fork's host rebuilds it from the fork's checkpoint at its first batch.
    const forked = await forkSession(services, { tenantId, sessionId, at: atOf(c.req.valid("json").at) });
    return c.json(
      {
        session: serializeSession(forked.session),
        projectId: forked.projectId,
        checkpointId: forked.checkpoint.id,
        runs: forked.runs,
        notUndone: forked.notUndone,
      },
      201,
    );
  });

  // The folder as it stands is looked at by the project's host (SPEC W3).
  const captureTip = rewindTipViaHost(services.hostRequests, services.logger);
  app.openapi(rewindRoute, async (c) => {
    const tenantId = c.get("tenantId");
    const sessionId = idOf("ses", c.req.valid("param").id, "session");
    const raw = c.req.valid("json").at;
    // A malformed branch id is looked up as given and not found (404), as an unknown one.
    const at: BranchAt = "branchId" in raw ? { branchId: raw.branchId as BranchId } : atOf(raw);
    const rewound = await rewindSession(services, { tenantId, sessionId, at, captureTip });
    return c.json(
      {
        branch: serializeBranch(rewound.branch),
        checkpointId: rewound.checkpoint.id,
        tipCheckpointId: rewound.tipCheckpointId,
        restoredBranchId: rewound.restoredBranchId,
        notUndone: rewound.notUndone,
      },
      200,
    );
  });

  app.openapi(listBranches, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const rows = await services.store.branches.branchesOfSession(session.tenantId, session.id);
    return c.json({ branches: rows.map(serializeBranch) }, 200);
  });

  app.openapi(branchMessages, async (c) => {
    const { id, branchId } = c.req.valid("param");
    const session = await findSession(services.store, c.get("tenantId"), id);
    const branch = await services.store.branches.branchOfSession(session.tenantId, session.id, idOf("brn", branchId, "branch"));
    if (!branch) throw notFound("branch");
    const rows = await services.store.branches.messagesOfBranch(session.tenantId, branch.id);
    return c.json({ messages: rows.map(serializeMessage) }, 200);
  });
}
