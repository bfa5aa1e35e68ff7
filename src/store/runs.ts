/**
 * Runs (SPEC D2, D4): their claims (`run-claims.ts`), leases (`run-leases.ts`), guarded
 * transitions (`run-transitions.ts`), place in a session (`run-placement.ts`), locks and reads
 * (`run-reads.ts`), and what a batch judges its calls by (`gate-rules.ts`). This module is the
 * face of all of them; `store.runs` is its repository.
 */

export type { CallRow, ClaimedRun, RunRow } from "./run-rows.js";
export type { StoredApproval } from "./gate-rules.js";
export { gateRules } from "./gate-rules.js";
export { claimBatch, claimStep, historyOrigin, type StepClaim } from "./run-claims.js";
export { lostJobCandidates, redispatchLostJob, releaseForRetry, releaseRunsOfWorker, renewLeases } from "./run-leases.js";
export {
  addActivatedTools,
  countInterruption,
  finishRun,
  moveToNextStep,
  parkRun,
  resumeParkedRun,
} from "./run-transitions.js";
export { insertRun, placeRun, releaseSessionSlot } from "./run-placement.js";
export { lockHeldRun, lockOpenRunsOfSession, lockRun, lockRunOfTenant, readRun, runOfTenant } from "./run-reads.js";
