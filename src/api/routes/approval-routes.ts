import { createRoute, z } from "@hono/zod-openapi";
import { decideApproval, type ApprovalDecision } from "../../approvals/decide-approval.js";
import { judge } from "../../approvals/gate-batch.js";
import { preparePolicies } from "../../gateway/compiled-policy.js";
import type { ApprovalWithCall } from "../../store/approvals.js";
import { FoyaError, notFound } from "../../errors.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, foyaId, IdParam, text } from "../schemas.js";
import type { ApprovalStatus } from "../../core/statuses.js";
import { type TenantId, parseId } from "../../ids.js";
import { idOf } from "./find-owned.js";

const approvalStatuses = ["pending", "approved", "denied", "expired", "cancelled"] as const satisfies readonly ApprovalStatus[];

const ApprovalSchema = z
  .object({
    id: z.string(),
    status: z.enum(approvalStatuses),
    sessionId: z.string(),
    runId: z.string(),
    call: z.object({
      id: z.string().openapi({ description: "The provider's tool call id." }),
      tool: z.string(),
      arguments: z.string().openapi({ description: "The raw arguments exactly as the model produced them." }),
    }),
    requestReason: z.string().openapi({ description: "Why the gateway asked." }),
    displayDiff: z.string().nullable().openapi({ description: "What the call would change (write, edit); for people only." }),
    reason: z.string().nullable(),
    decidedByKeyId: z.string().nullable(),
    decidedAt: z.string().nullable(),
    editedArguments: z.string().nullable(),
    expiresAt: z.string(),
    createdAt: z.string(),
  })
  .openapi("Approval");

const DecisionSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    reason: text().max(10_000).optional(),
    arguments: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: "Approve with these arguments instead of the model's; validated again and recorded as an edit." }),
  })
  .strict()
  .openapi("ApprovalDecision");

const ListQuery = z.object({
  status: z.enum(approvalStatuses).optional(),
  sessionId: foyaId().optional(),
  runId: foyaId().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

const conflict = {
  409: {
    content: { "application/json": { schema: errorResponses[400].content["application/json"].schema } },
    description: "Already decided otherwise, or expired",
  },
};

const listApprovals = createRoute({
  method: "get",
  path: "/v1/approvals",
  summary: "The tenant's approvals, newest first; `status=pending` for what waits on a decision",
  request: { query: ListQuery },
  responses: {
    200: { content: { "application/json": { schema: z.object({ approvals: z.array(ApprovalSchema) }) } }, description: "Approvals" },
    ...errorResponses,
  },
});
const getApproval = createRoute({
  method: "get",
  path: "/v1/approvals/{id}",
  summary: "One approval with its call",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: ApprovalSchema } }, description: "The approval" }, ...errorResponses },
});
const decide = createRoute({
  method: "post",
  path: "/v1/approvals/{id}",
  summary: "Approve or deny a call; a repeated identical decision is a no-op",
  request: { params: IdParam, body: { content: { "application/json": { schema: DecisionSchema } }, required: true } },
  responses: {
    200: { content: { "application/json": { schema: ApprovalSchema } }, description: "The approval as decided" },
    ...errorResponses,
    ...conflict,
  },
});

type Row = ApprovalWithCall;

function serialize({ approval, callId, tool, argumentsRaw }: Row) {
  return {
    id: approval.id,
    status: approval.status,
    sessionId: approval.sessionId,
    runId: approval.runId,
    call: { id: callId, tool, arguments: argumentsRaw },
    requestReason: approval.requestReason,
    displayDiff: approval.displayDiff,
    reason: approval.reason,
    decidedByKeyId: approval.decidedByKeyId,
    decidedAt: approval.decidedAt?.toISOString() ?? null,
    editedArguments: approval.editedArguments,
    expiresAt: approval.expiresAt.toISOString(),
    createdAt: approval.createdAt.toISOString(),
  };
}

export function registerApprovalRoutes(app: App, services: ApiServices): void {
  const { store } = services;
  const findOne = async (tenantId: TenantId, id: string): Promise<Row> => {
    const row = await store.approvals.approvalWithCallOfTenant(tenantId, idOf("apr", id, "approval"));
    if (!row) throw notFound("approval");
    return row;
  };

  app.openapi(listApprovals, async (c) => {
    const query = c.req.valid("query");
    // A filter naming an id of another kind matches nothing, as an unknown id does.
    const sessionId = query.sessionId === undefined ? undefined : parseId("ses", query.sessionId);
    const runId = query.runId === undefined ? undefined : parseId("run", query.runId);
    if (sessionId === null || runId === null) return c.json({ approvals: [] }, 200);
    const rows = await store.approvals.listApprovalsWithCalls(c.get("tenantId"), { status: query.status, sessionId, runId }, query.limit);
    return c.json({ approvals: rows.map(serialize) }, 200);
  });

  app.openapi(getApproval, async (c) => c.json(serialize(await findOne(c.get("tenantId"), c.req.valid("param").id)), 200));

  app.openapi(decide, async (c) => {
    const tenantId = c.get("tenantId");
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const row = await findOne(tenantId, id);
    let decision: ApprovalDecision;
    if (body.decision === "approve") {
      const editedArguments = body.arguments === undefined ? undefined : JSON.stringify(body.arguments);
      if (editedArguments !== undefined) await checkEditedArguments(services, row, editedArguments);
      decision = {
        kind: "approve",
        ...(body.reason !== undefined ? { reason: body.reason } : {}),
        ...(editedArguments !== undefined ? { editedArguments } : {}),
      };
    } else {
      decision = { kind: "deny", ...(body.reason !== undefined ? { reason: body.reason } : {}) };
    }
    const result = await decideApproval(services, { tenantId, approvalId: row.approval.id, decision, keyId: c.get("apiKeyId") });
    return c.json(serialize({ ...row, approval: result.approval }), 200);
  });
}

/**
 * Edited arguments are validated again (schema), and judged again: an edit may
 * not turn the call into one the tenant's or project's policy denies.
 */
async function checkEditedArguments(services: ApiServices, row: Row, argumentsRaw: string): Promise<void> {
  const call = { callId: row.callId, name: row.tool, argumentsRaw };
  const scope = await services.store.sessions.sessionJudgeScope(row.approval.sessionId);
  if (!scope) throw notFound("session");
  const { executor } = await services.catalogViaWorkers.forProject({ tenantId: scope.tenantId, projectId: scope.projectId });
  const parsed = executor.parse(call);
  if (!parsed.ok) throw new FoyaError("bad_request", `the edited arguments are invalid: ${parsed.message}`);
  const policies = [scope.tenantPolicy, scope.projectPolicy];
  await preparePolicies(policies, [row.tool]);
  const verdict = judge({ approvalMode: scope.mode, workspaceDir: scope.workspaceDir }, policies, parsed);
  if (verdict.decision === "deny") throw new FoyaError("bad_request", `the edited arguments are denied by policy: ${verdict.reason}`);
}
