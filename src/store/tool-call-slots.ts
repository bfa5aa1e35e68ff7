import { toolCalls } from "../db/schema.js";
import { col, tbl, type Queryable } from "./sql-text.js";
import { run, statement } from "./named-sql.js";
import { repository } from "./repository.js";
import type { TenantId } from "../ids.js";

/**
 * A tenant's tool calls running at once across every worker, against its `toolCalls` quota
 * (SPEC X5). The calls' own `running` rows are the count: nothing else to keep in step, and a
 * crashed worker's calls stop counting when the next claim marks them `interrupted`. A call
 * waiting on its sub-agent holds no process and is not counted (its child's calls are).
 */

/**
 * runningCalls
 * Guard: none (a read). Params: the tenant. Result: the tenant's running calls, through the partial
 * index `tool_calls_running_tenant_idx`.
 */
const runningCallsStatement = statement<{ tenantId: TenantId }, { running: number }>(
  "running_calls_of_tenant",
  `select count(*)::int as running from ${tbl(toolCalls)}
   where ${col(toolCalls.tenantId)} = :tenantId and ${col(toolCalls.status)} = 'running' and ${col(toolCalls.childRunId)} is null`,
);

/**
 * lockCallSlots
 * Params: the tenant. Held until the transaction ends, so the count read after it (a statement of
 * its own: under read committed it sees every mark committed before the lock was granted) and the
 * marks that follow it are one step for the tenant: two workers never both take the last slot.
 */
const lockCallSlotsStatement = statement<{ tenantId: TenantId }, Record<string, unknown>>(
  "lock_call_slots",
  `select pg_advisory_xact_lock(hashtextextended('foya.tool-call-slots.' || :tenantId, 0))`,
);

async function runningCallsOf(on: Queryable, tenantId: TenantId): Promise<number> {
  const [row] = await run(on, runningCallsStatement, { tenantId });
  return row?.running ?? 0;
}

/**
 * Inside a transaction: locks the tenant's call slots until it ends and answers how many of
 * `wanted` calls may start now under `quota`. The caller marks that many `running` in the same
 * transaction.
 */
async function takeCallSlots(tx: Queryable, tenantId: TenantId, quota: number, wanted: number): Promise<number> {
  await run(tx, lockCallSlotsStatement, { tenantId });
  const running = await runningCallsOf(tx, tenantId);
  return Math.max(0, Math.min(wanted, quota - running));
}

/** `store.toolCallSlots`. */
export const toolCallSlotsRepository = repository({
  pg: { runningCallsOf, takeCallSlots },
});
