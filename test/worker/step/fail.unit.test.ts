import { describe, expect, it, vi } from "vitest";
import { FoyaError } from "../../../src/errors.js";
import { failStep, type FailedAttempt } from "../../../src/worker/step/fail.js";
import type { JobDeps } from "../../../src/worker/job-deps.js";

/** A step attempt of a job allowed `attempts` attempts, `made` made before this one. */
function failedAttempt(made: number, attempts: number): FailedAttempt {
  const run = { id: "run_1", tenantId: "ten_1", sessionId: "ses_1", fence: 7 };
  return {
    job: { id: "job_1", attemptsMade: made, opts: { attempts }, data: { runId: "run_1", stepIndex: 0 }, updateData: async () => {} },
    prepared: { run, step: { index: 0, attempt: made + 1 } },
    signal: new AbortController().signal,
    sink: undefined,
  } as unknown as FailedAttempt;
}

/** The unit of work a failing attempt uses: records the leases it gives back. */
function unitOfWork() {
  const releaseLease = vi.fn(async (_run: unknown) => true);
  const fx = { store: { runs: { releaseLease } } };
  const deps = {
    unitOfWork: { transactFenced: async <T>(work: (effects: typeof fx) => Promise<T>) => work(fx) },
    logger: { warn: () => {} },
  } as unknown as Pick<JobDeps, "unitOfWork" | "logger">;
  return { deps, releaseLease };
}

describe("a step attempt that fails", () => {
  it("is retried with the run's lease given back, so another worker's retry claims the run after its backoff, not after the lease", async () => {
    const { deps, releaseLease } = unitOfWork();
    const attempt = failedAttempt(0, 3);
    const error = new FoyaError("provider_error", "upstream exploded");
    await expect(failStep(deps, attempt, error)).rejects.toBe(error);
    expect(releaseLease).toHaveBeenCalledWith(attempt.prepared.run);
  });

  it("with Postgres away, is retried without a statement that would only meet the outage again", async () => {
    const { deps, releaseLease } = unitOfWork();
    const error = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    await expect(failStep(deps, failedAttempt(0, 3), error)).rejects.toBe(error);
    expect(releaseLease).not.toHaveBeenCalled();
  });
});
