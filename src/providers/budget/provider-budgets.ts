import type { TenantId } from "../../ids.js";
import type { Usage } from "../provider.js";

/**
 * The contract of provider budgets (SPEC PR3): what every worker asks before it calls a
 * provider profile, counted in Redis so all of them share one budget per profile.
 *
 * - **Budget.** Requests, input tokens and output tokens per sliding window (a minute unless
 *   configured shorter), and requests in flight. Input tokens are estimated before the call from
 *   the request's characters at the ratio the profile's reported usage taught; output tokens are
 *   reserved at the profile's recent average. Both are corrected with the reported usage when
 *   the lease is settled, in the window slice the call was counted in (providers count a request
 *   when it arrives).
 * - **Pause.** A 429 or overload answer with a wait pauses the profile for every worker: one key.
 * - **Fair share** (X5). While another tenant waits for the profile, a tenant gets a new grant only
 *   while its own use in the window is under its share: the limit × its weight (its activeRuns
 *   quota) / the weights of it and the tenants waiting. Nobody waiting: one tenant may use all.
 * - A request larger than a whole limit goes alone, into an empty window, rather than never.
 */
export interface ProviderBudgets {
  /** A lease to call the profile now, or how long to wait and why. Never throws: Redis away grants an uncounted lease. */
  acquire(ask: BudgetAsk): Promise<BudgetDecision>;
  /** Pauses the profile for every worker for `ms` from now; a longer pause already set stays. */
  pause(profile: string, ms: number): Promise<void>;
  /** The profile's window as metrics and `GET /v1/usage` show it, with one tenant's part when named. */
  state(profile: string, tenantId?: TenantId): Promise<ProfileBudgetState>;
}

export interface BudgetAsk {
  profile: string;
  tenantId: TenantId;
  /** The tenant's weight in the fair share: its activeRuns quota (X5). */
  weight: number;
  /** Who waits, one per step job, so each of a tenant's waiting steps keeps the tenant counted. */
  waiterId: string;
  /** Characters of the request (`requestChars`), which the budget turns into estimated input tokens. */
  inputChars: number;
}

/** Why a step waits: the profile is paused, one of its limits is used up, or its tenant is at its fair share. */
export type BudgetWaitReason = "paused" | "requests" | "input_tokens" | "output_tokens" | "concurrency" | "fair_share";

export type BudgetDecision = { kind: "granted"; lease: BudgetLease } | { kind: "wait"; ms: number; reason: BudgetWaitReason };

export interface BudgetLease {
  readonly profile: string;
  /** What was counted before the call. */
  readonly estimate: { inputTokens: number; outputTokens: number };
  /**
   * Ends the call's place among the requests in flight and corrects the window with the usage
   * the provider reported (undefined: the estimate stands, as for a call that failed). Idempotent;
   * never throws.
   */
  settle(usage: Usage | undefined): Promise<void>;
}

export interface BudgetCounts {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Requests in flight. */
  concurrent: number;
}

export interface ProfileBudgetState {
  profile: string;
  windowMs: number;
  /** The configured limits (0: none), or null for a profile without a budget. */
  limits: BudgetCounts | null;
  /** Counted in the current window across every tenant. */
  used: BudgetCounts;
  /** The named tenant's part of `used`. */
  tenantUsed?: BudgetCounts;
  /** Milliseconds the profile stays paused; 0 when it is not. */
  pausedForMs: number;
}
