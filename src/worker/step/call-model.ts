import type { JobDeps } from "../job-deps.js";
import { admit, profileChain, type AdmitDeps, type Admitted, type ProviderWait } from "./admit.js";
import type { FailedAttempt } from "./fail.js";
import { afterRefusal } from "./provider-refusal.js";
import { openStepEvents } from "./start.js";
import { streamModel, type StreamedStep } from "./stream.js";

export type CalledModel = { kind: "streamed"; streamed: StreamedStep } | ProviderWait;

/**
 * Phase 3 of the step job (process.ts), the model call, in the order docs/architecture/providers.md
 * names: admission to a profile's shared budget (admit.ts: the session's profile, or while it is
 * paused its fallbacks), the step's events opened (its start is written with the first of them),
 * the stream, and on a failure before any output, the provider's pause honoured and the next
 * profile tried (provider-refusal.ts). A step that must wait answers when and why; it waits
 * outside the worker (wait-for-provider.ts).
 */
export async function callModel(
  deps: AdmitDeps & Pick<JobDeps, "bus" | "tracing" | "metrics">,
  attempt: FailedAttempt,
): Promise<CalledModel> {
  const { prepared, job, signal } = attempt;
  const chain = profileChain(deps, prepared.session.providerProfile);
  let from = 0;
  for (;;) {
    const admission = await admit(deps, prepared, chain, from, job.id ?? `${prepared.run.id}/${prepared.step.index}`);
    if (admission.kind === "wait") return admission;
    if (job.data.waitingSince !== undefined) await endWaiting(job, admission);
    attempt.sink ??= openStepEvents(deps, prepared, signal);
    const progress = { output: false };
    const profile = chain[admission.index] as string;
    try {
      const streamed = await streamModel(deps, prepared, admission.call, attempt.sink, signal, progress);
      if (admission.index > 0) deps.metrics.providerFallbacks.inc({ from: chain[0], to: profile });
      return { kind: "streamed", streamed };
    } catch (error) {
      const hasFallback = admission.index + 1 < chain.length;
      const next = await afterRefusal(deps, { job, signal, profile, hasFallback, output: progress.output }, error);
      if (next.kind === "throw") throw error;
      if (next.kind === "wait") return next.wait;
      from = admission.index + 1;
    }
  }
}

/** A step that waited goes on: its next wait is news again. A lease it cannot use is given back. */
async function endWaiting(job: FailedAttempt["job"], admission: Admitted): Promise<void> {
  const { waitingSince: _done, ...data } = job.data;
  try {
    await job.updateData(data);
  } catch (error) {
    await admission.call.lease.settle(undefined);
    throw error;
  }
}
