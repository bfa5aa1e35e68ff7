/**
 * What one tenant may use of a shared deployment (SPEC X5): the deployment's defaults
 * (`FOYA_QUOTA_*`), with the operator's per-tenant overrides on top
 * (`PATCH /v1/tenants/{id} {"quotas": {...}}`). 0 means no limit where a limit is optional.
 */
export interface TenantQuotas {
  /**
   * Runs placed and working at once (queued for a worker or running; a run waiting for a
   * person holds no worker and is not counted). Later runs wait, in order, until one ends:
   * this is what keeps one tenant's flood from filling the shared queues, and a tenant's
   * share of the workers is in proportion to it (a weight).
   */
  activeRuns: number;
  /** Runs waiting for a slot; beyond it `POST .../runs` answers 429 with Retry-After. */
  queuedRuns: number;
  /** Model tokens (input + output, from recorded usage) per UTC day; 0: no limit. Over it, new runs are refused. */
  tokensPerDay: number;
  /** Bytes of file-change contents and artifacts kept; 0: no limit. Over it, new runs are refused. */
  storageBytes: number;
  /**
   * Tool calls running at once across every worker (a call waiting on its sub-agent holds no
   * process and is not counted); 0: no limit beyond five per run (P3) times `activeRuns`. A
   * batch starts only while the tenant is under it, and each call takes a slot as it starts.
   */
  toolCalls: number;
}

const quotaNames = ["activeRuns", "queuedRuns", "tokensPerDay", "storageBytes", "toolCalls"] as const satisfies ReadonlyArray<
  keyof TenantQuotas
>;

export function mergeQuotas(defaults: TenantQuotas, overrides: Readonly<Partial<TenantQuotas>>): TenantQuotas {
  const merged = { ...defaults };
  for (const name of quotaNames) {
    const value = overrides[name];
    if (typeof value === "number") merged[name] = value;
  }
  return merged;
}
