/**
 * Runs (SPEC D2, D4): their claims (`run-claims.ts`), leases (`run-leases.ts`), guarded
 * transitions (`run-transitions.ts`), place in a session (`run-placement.ts`), locks and reads
 * (`run-reads.ts`), and what a batch judges its calls by (`gate-rules.ts`). This module is the
 * face of all of them; `store.runs` is its repository.
 */

import { gateRules } from "./gate-rules.js";
import { repository } from "./repository.js";
import { claimBatch, claimBatches, claimStep, claimSteps } from "./run-claims.js";
import { lostJobCandidates, redispatchLostJob, releaseForRetry, releaseLease, releaseRunsOfWorker, renewLeases } from "./run-leases.js";
import { acceptRun, activateRun, afterRunEnd, insertRun, lockNextInSession, placeRun } from "./run-placement.js";
import { lockHeldRun, lockOpenRunsOfSession, lockRun, lockRunOfTenant, readRun, runOfTenant } from "./run-reads.js";
import { addActivatedTools, countInterruption, finishRun, moveToNextStep, parkRun, resumeParkedRun } from "./run-transitions.js";

export type { CallRow, ClaimedRun, RunRow } from "./run-rows.js";
export type { StoredApproval } from "./gate-rules.js";
export { historyOrigin, type BatchClaim, type StepClaim } from "./run-claims.js";

/** `store.runs`. */
export const runsRepository = repository({
  db: {
    releaseForRetry,
    releaseLease,
    redispatchLostJob,
    moveToNextStep,
    parkRun,
    resumeParkedRun,
    insertRun,
    placeRun,
    lockNextInSession,
    lockHeldRun,
    lockRun,
    lockRunOfTenant,
    lockOpenRunsOfSession,
    runOfTenant,
    readRun,
  },
  pg: {
    finishRun,
    afterRunEnd,
    acceptRun,
    activateRun,
    claimStep,
    claimSteps,
    claimBatch,
    claimBatches,
    renewLeases,
    releaseRunsOfWorker,
    lostJobCandidates,
    addActivatedTools,
    countInterruption,
    gateRules,
  },
});
