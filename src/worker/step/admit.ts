import type { BudgetWaitReason } from "../../providers/budget/provider-budgets.js";
import { requestChars } from "../../providers/budget/request-chars.js";
import { effectiveQuotas } from "../../tenants/tenant-settings.js";
import type { JobDeps } from "../job-deps.js";
import type { PreparedStep } from "./start.js";
import { modelOf, requestFor, type ModelCall } from "./stream.js";

/** Why a step waits for its provider: its budget's reason, or `throttled`: the provider itself refused for load. */
export type StepWaitReason = BudgetWaitReason | "throttled";

/** A step that waits, holding no worker (wait-for-provider.ts), about `ms`, for `profile`. */
export interface ProviderWait {
  kind: "wait";
  ms: number;
  reason: StepWaitReason;
  profile: string;
}

export interface Admitted {
  kind: "admitted";
  call: ModelCall;
  /** The profile's place in the chain: 0 the session's own, then its fallbacks. */
  index: number;
}

export type AdmitDeps = Pick<JobDeps, "config" | "store" | "providers" | "providerBudgets" | "tenantSettings">;

/** The profiles a step may call, in order: its session's, then that profile's fallbacks (PR3). */
export function profileChain(deps: Pick<JobDeps, "config">, profile: string): string[] {
  const config = deps.config.providers.profiles.find((candidate) => candidate.name === profile);
  return [profile, ...(config?.fallbacks ?? [])];
}

/**
 * Admission to a provider (PR3): from `chain[from]` on, the first profile whose shared budget
 * lets a call go now, moving past a profile only while it is paused. The request is compiled
 * for the profile it would go to, and counted by its characters; the tenant's weight in the
 * budget's fair share is its activeRuns quota (X5). When none lets it go, the soonest wait.
 */
export async function admit(
  deps: AdmitDeps,
  prepared: PreparedStep,
  chain: readonly string[],
  from: number,
  waiterId: string,
): Promise<Admitted | ProviderWait> {
  const { tenantId } = prepared.run;
  const weight = effectiveQuotas(deps.config, await deps.tenantSettings.get(tenantId)).activeRuns;
  let soonest: ProviderWait | undefined;
  for (let index = from; index < chain.length; index++) {
    const profile = chain[index] as string;
    const model = modelOf(deps, profile);
    const request = await requestFor(deps, prepared, model);
    const decision = await deps.providerBudgets.acquire({ profile, tenantId, weight, waiterId, inputChars: requestChars(request) });
    if (decision.kind === "granted") return { kind: "admitted", index, call: { model, request, lease: decision.lease } };
    if (!soonest || decision.ms < soonest.ms) soonest = { kind: "wait", ms: decision.ms, reason: decision.reason, profile };
    if (decision.reason !== "paused") break;
  }
  return soonest ?? { kind: "wait", ms: 1000, reason: "paused", profile: chain[from] ?? "" };
}
