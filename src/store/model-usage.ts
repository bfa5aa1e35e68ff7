import { and, eq, gte, sql, type SQL } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { steps } from "../db/schema.js";
import type { RunId, TenantId } from "../ids.js";
import { repository } from "./repository.js";

/**
 * Model tokens summed from the steps' recorded usage (`steps.usage`, the last attempt of each
 * step): per run and per tenant since midnight UTC. `inputTokens` is the whole prompt; the
 * cache counts say how much of it the provider read from, or wrote to, its prompt cache (SPEC PR4).
 */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

// The key is one of four fixed names, written into the statement (a parameter would make `->>` ambiguous).
const sumOf = (field: keyof ModelUsage): SQL => sql`coalesce(sum((${steps.usage} ->> ${sql.raw(`'${field}'`)})::bigint), 0)::text`;

async function sumUsage(db: Database, where: SQL | undefined): Promise<ModelUsage> {
  const { rows } = await db.execute<Record<keyof ModelUsage, string>>(sql`
    select ${sumOf("inputTokens")} as "inputTokens", ${sumOf("outputTokens")} as "outputTokens",
      ${sumOf("cacheReadTokens")} as "cacheReadTokens", ${sumOf("cacheWriteTokens")} as "cacheWriteTokens"
    from ${steps} where ${where}`);
  const row = rows[0];
  return {
    inputTokens: Number(row?.inputTokens ?? 0),
    outputTokens: Number(row?.outputTokens ?? 0),
    cacheReadTokens: Number(row?.cacheReadTokens ?? 0),
    cacheWriteTokens: Number(row?.cacheWriteTokens ?? 0),
  };
}

/** The run's tokens, over all its steps (steps_run_index_idx). */
function usageOfRun(db: Database, tenantId: TenantId, runId: RunId): Promise<ModelUsage> {
  return sumUsage(db, and(eq(steps.runId, runId), eq(steps.tenantId, tenantId)));
}

/** The tenant's tokens since midnight UTC, the window of its daily token quota (steps_tenant_day_idx). */
function usageOfTenantToday(db: Database, tenantId: TenantId): Promise<ModelUsage> {
  return sumUsage(
    db,
    and(eq(steps.tenantId, tenantId), gte(steps.createdAt, sql`date_trunc('day', now() at time zone 'utc') at time zone 'utc'`)),
  );
}

/** `store.modelUsage`. */
export const modelUsageRepository = repository({ db: { usageOfRun, usageOfTenantToday } });
