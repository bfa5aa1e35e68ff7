import type { Usage } from "../../providers/provider.js";
import type { JobDeps } from "../job-deps.js";
import type { TenantId } from "../../ids.js";

/**
 * The model request as operators see it (SPEC X8): a span of its own, its latency in
 * `foya_model_request_seconds` (outcome ok, error or cancelled) and the tokens it reported, with
 * how many of the input tokens the provider's prompt cache served or took (PR4).
 * `usage` is read once `work` has ended, however it ended.
 */
export function observeModelRequest(
  deps: Pick<JobDeps, "tracing" | "metrics">,
  request: { profile: string; model: string; tenantId: TenantId; signal: AbortSignal },
  usage: () => Usage | undefined,
  work: () => Promise<void>,
): Promise<void> {
  const { metrics } = deps;
  const { profile } = request;
  const started = performance.now();
  let outcome = "error";
  return deps.tracing.inSpan("model request", { "foya.provider_profile": profile, "gen_ai.request.model": request.model }, async (span) => {
    try {
      await work();
      outcome = "ok";
      const used = usage();
      if (used)
        span.setAttributes({
          "gen_ai.usage.input_tokens": used.inputTokens,
          "gen_ai.usage.output_tokens": used.outputTokens,
          ...(used.cacheReadTokens !== undefined ? { "gen_ai.usage.cache_read.input_tokens": used.cacheReadTokens } : {}),
          ...(used.cacheWriteTokens !== undefined ? { "gen_ai.usage.cache_creation.input_tokens": used.cacheWriteTokens } : {}),
        });
    } finally {
      metrics.modelRequestDuration.observe(
        { profile, outcome: request.signal.aborted ? "cancelled" : outcome },
        (performance.now() - started) / 1000,
      );
      const used = usage();
      if (used) {
        const tenant = metrics.tenantLabel(request.tenantId);
        metrics.modelTokens.inc({ profile, kind: "input", tenant }, used.inputTokens);
        metrics.modelTokens.inc({ profile, kind: "output", tenant }, used.outputTokens);
        if (used.cacheReadTokens) metrics.modelCacheTokens.inc({ profile, kind: "read", tenant }, used.cacheReadTokens);
        if (used.cacheWriteTokens) metrics.modelCacheTokens.inc({ profile, kind: "write", tenant }, used.cacheWriteTokens);
      }
    }
  });
}
