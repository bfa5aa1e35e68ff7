import type { Config } from "../config.js";
import type { tenants } from "../db/schema.js";
import type { Repositories } from "../store/store.js";
import { notFound } from "../errors.js";
import { mergeLimits, type ProcessLimits } from "../core/process-limits.js";
import { mergeQuotas, type TenantQuotas } from "../core/tenant-quotas.js";
import type { TenantId } from "../ids.js";

/**
 * What the operator decides about a tenant's tool processes (SPEC S7, S8), set with the
 * admin API (`PATCH /v1/tenants/{id}`). The API reads them when a Full Access session or
 * run starts; workers read them on every tool batch, through `createTenantSettingsCache`.
 */
export interface TenantSettings {
  /** Assigned once, never reused: the tenant's processes run as host uid and gid `toolUidOf(config, settings)`. */
  readonly toolUidSlot: number;
  /** The operator's Full Access grant; the deployment must allow Full Access too (`fullAccessRefusal`). */
  readonly fullAccess: boolean;
  /** The operator's overrides of `config.toolLimits`; an absent key keeps the deployment's value (`effectiveToolLimits`). */
  readonly limits: Readonly<Partial<ProcessLimits>>;
  /** The operator's overrides of `config.quotas` (SPEC X5; `effectiveQuotas`). */
  readonly quotas: Readonly<Partial<TenantQuotas>>;
}

type TenantRow = typeof tenants.$inferSelect;

export function tenantSettingsOf(row: Pick<TenantRow, "toolUidSlot" | "fullAccess" | "toolLimits" | "quotas">): TenantSettings {
  return Object.freeze({
    toolUidSlot: row.toolUidSlot,
    fullAccess: row.fullAccess,
    limits: Object.freeze({ ...row.toolLimits }),
    quotas: Object.freeze({ ...row.quotas }),
  });
}

/** The tenant's settings as they are now, or undefined for no such tenant. */
export async function readTenantSettings(store: Pick<Repositories, "tenants">, tenantId: TenantId): Promise<TenantSettings | undefined> {
  const row = await store.tenants.readTenantSettingsRow(tenantId);
  return row ? tenantSettingsOf(row) : undefined;
}

/** The host uid (and gid) of the tenant's tool processes. */
export function toolUidOf(config: Pick<Config, "sandbox">, settings: Pick<TenantSettings, "toolUidSlot">): number {
  return config.sandbox.toolUidBase + settings.toolUidSlot;
}

/** The limits each tool call of the tenant runs under: the deployment's, with the operator's overrides on top. */
export function effectiveToolLimits(config: Pick<Config, "toolLimits">, settings: Pick<TenantSettings, "limits">): ProcessLimits {
  return mergeLimits(config.toolLimits, settings.limits);
}

/** What the tenant may use of the deployment: its quotas, with the operator's overrides on top (SPEC X5). */
export function effectiveQuotas(config: Pick<Config, "quotas">, settings: Pick<TenantSettings, "quotas">): TenantQuotas {
  return mergeQuotas(config.quotas, settings.quotas);
}

/**
 * Why the tenant may not use Full Access, naming each missing grant and how an operator
 * gives it; null when both the deployment and the tenant's flag allow it. Every place that
 * checks (session creation, run start, tool batches) answers with this message.
 */
export function fullAccessRefusal(config: Pick<Config, "sandbox">, settings: Pick<TenantSettings, "fullAccess">): string | null {
  const missing: string[] = [];
  if (!config.sandbox.fullAccessAllowed) {
    missing.push("this deployment does not allow it (an operator sets FOYA_ALLOW_FULL_ACCESS=true)");
  }
  if (!settings.fullAccess) {
    missing.push('this tenant has no grant (an operator sends PATCH /v1/tenants/{id} {"fullAccess": true} with the admin token)');
  }
  if (missing.length === 0) return null;
  return `Full Access is not granted: ${missing.join(", and ")}. Use approval mode "auto" or "manual" meanwhile.`;
}

/** How long a cached entry is used before it is read again: an operator's change applies within this. */
const defaultTenantSettingsTtlMs = 5_000;
const maxCachedTenants = 10_000;

/** A process's cache of tenant settings, for readers that run often (every tool batch). */
export interface TenantSettingsCache {
  /** The tenant's settings, read from Postgres at most once per TTL; throws not_found for no such tenant. */
  get(tenantId: TenantId): Promise<TenantSettings>;
  /** The tenant's settings read from Postgres now (and cached), for a decision that cannot be undone. */
  fresh(tenantId: TenantId): Promise<TenantSettings>;
}

export function createTenantSettingsCache(store: Pick<Repositories, "tenants">, ttlMs = defaultTenantSettingsTtlMs): TenantSettingsCache {
  const entries = new Map<string, { settings: TenantSettings; readAt: number }>();
  // Concurrent misses for one tenant share one query.
  const reading = new Map<string, Promise<TenantSettings>>();

  async function read(tenantId: TenantId): Promise<TenantSettings> {
    const settings = await readTenantSettings(store, tenantId);
    if (!settings) throw notFound("tenant");
    entries.delete(tenantId);
    entries.set(tenantId, { settings, readAt: performance.now() });
    if (entries.size > maxCachedTenants) entries.delete(entries.keys().next().value as string);
    return settings;
  }

  return {
    get(tenantId) {
      const cached = entries.get(tenantId);
      if (cached && performance.now() - cached.readAt < ttlMs) return Promise.resolve(cached.settings);
      const pending = reading.get(tenantId);
      if (pending) return pending;
      const started = read(tenantId).finally(() => reading.delete(tenantId));
      reading.set(tenantId, started);
      return started;
    },
    fresh: read,
  };
}
