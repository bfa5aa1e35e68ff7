import type { ApprovalPolicy } from "../core/policy.js";
import { approvals, projects, sessions, tenants, toolCalls } from "../db/schema.js";
import { col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import type { CallId, ProjectId } from "../ids.js";

/**
 * What a batch judges its calls by (SPEC S1): the tenant's and the project's approval
 * policies, and the approvals people already gave. The claims read them in the same
 * statement (`run-claims.ts`); `gateRules` reads them again when a batch plans after its claim.
 */

/** An approval a human already gave for one of the batch's calls. */
export interface StoredApproval {
  toolCallId: CallId;
  status: string;
  editedArguments: string | null;
  grantsNetwork: boolean;
}

/** The policies in force and the approvals given, as the statements below answer them. */
export interface GateRulesRead {
  policies: ApprovalPolicy[];
  decided: Map<string, StoredApproval>;
}

/** A JSON list of the `approved` approvals of the calls `callsWhere` picks from `tool_calls tc`, as `StoredApproval`s. */
export function decidedApprovalsJson(callsWhere: string): string {
  return `coalesce((select jsonb_agg(jsonb_build_object('toolCallId', a.${col(approvals.toolCallId)}, 'status', a.${col(approvals.status)},
                 'editedArguments', a.${col(approvals.editedArguments)}, 'grantsNetwork', a.${col(approvals.grantsNetwork)}))
               from ${tbl(approvals)} a join ${tbl(toolCalls)} tc on tc.${col(toolCalls.id)} = a.${col(approvals.toolCallId)}
               where ${callsWhere} and a.${col(approvals.status)} = 'approved'), '[]'::jsonb)`;
}

/**
 * Joins a session's project (`p`) and tenant (`t`) to a row source `source` with a `"sessionId"`
 * column, so a statement can select `policiesColumns`.
 */
export function policiesJoin(source: string): string {
  return `join ${tbl(sessions)} se on se.${col(sessions.id)} = ${source}."sessionId"
   join ${tbl(projects)} p on p.${col(projects.id)} = se.${col(sessions.projectId)}
   join ${tbl(tenants)} t on t.${col(tenants.id)} = p.${col(projects.tenantId)}`;
}

/** The tenant's and the project's policies, from `policiesJoin` (or any `p` and `t`). */
export const policiesColumns = `t.${col(tenants.policy)} as "tenantPolicy", p.${col(projects.policy)} as "projectPolicy"`;

/** A statement's row as `decidedApprovalsJson` and `policiesColumns` answer it, made usable. */
export function gateRulesOf(row: {
  tenantPolicy: ApprovalPolicy;
  projectPolicy: ApprovalPolicy;
  decided: StoredApproval[];
}): GateRulesRead {
  return {
    policies: [row.tenantPolicy, row.projectPolicy],
    decided: new Map(row.decided.map((approval) => [approval.toolCallId, approval])),
  };
}

/**
 * gateRules
 * Guard: none (a read). Params: the project, the call ids.
 * Result: the tenant's and the project's approval policies and the approvals already given for
 * these calls: what a batch judges by when it plans again after its claim (settle).
 */
const gateRulesStatement = statement<
  { projectId: ProjectId; callIds: readonly CallId[] },
  { tenantPolicy: ApprovalPolicy; projectPolicy: ApprovalPolicy; decided: StoredApproval[] }
>(
  "gate_rules",
  `select ${policiesColumns}, ${decidedApprovalsJson(`tc.${col(toolCalls.id)} = any(:callIds::text[])`)} as decided
   from ${tbl(projects)} p join ${tbl(tenants)} t on t.${col(tenants.id)} = p.${col(projects.tenantId)}
   where p.${col(projects.id)} = :projectId`,
);

export async function gateRules(on: Queryable, projectId: ProjectId, callIds: readonly CallId[]): Promise<GateRulesRead> {
  const [row] = await run(on, gateRulesStatement, { projectId, callIds });
  if (!row) throw new Error(`project ${projectId} vanished`);
  return gateRulesOf(row);
}
