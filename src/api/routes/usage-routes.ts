import { createRoute, z } from "@hono/zod-openapi";
import { notFound } from "../../errors.js";
import { effectiveQuotas, effectiveToolLimits, readTenantSettings } from "../../tenants/tenant-settings.js";
import type { ApiServices, App } from "../app-env.js";
import type { TenantId } from "../../ids.js";
import type { ProfileBudgetState } from "../../providers/budget/provider-budgets.js";
import { errorResponses, QuotasSchema } from "../schemas.js";

const count = (description: string) => z.number().int().nonnegative().openapi({ description });

const BudgetCountsSchema = z.object({
  requests: count("Requests (for `used`: counted in the current window)."),
  inputTokens: count("Input tokens: estimated before each call, corrected with the reported usage."),
  outputTokens: count("Output tokens: reserved before each call at the profile's average, corrected with the reported usage."),
  concurrent: count("Requests in flight (for `used`: now)."),
});

const ProviderUsageSchema = z
  .object({
    profile: z.string().openapi({ description: "The provider profile's name." }),
    windowMs: count("The window the per-minute limits count over, in milliseconds; 0 for a profile without a budget."),
    limits: BudgetCountsSchema.nullable().openapi({
      description: "The profile's budget per window (0: no limit), shared by every tenant; null: none.",
    }),
    used: BudgetCountsSchema.openapi({ description: "What the tenant's own steps count in the current window." }),
    pausedForMs: count("Milliseconds the profile stays paused after a 429 or overload answer of its provider; 0 when it is not."),
  })
  .openapi("ProviderUsage");

const noCounts = { requests: 0, inputTokens: 0, outputTokens: 0, concurrent: 0 };

const UsageSchema = z
  .object({
    quotas: QuotasSchema.openapi({ description: "The tenant's quotas: the deployment's, with the operator's overrides." }),
    backgroundCommandsLimit: z
      .number()
      .int()
      .positive()
      .openapi({ description: "Background commands the tenant may have running at once (a process limit, S7)." }),
    usage: z.object({
      activeRuns: count("Runs admitted and queued for a worker or running now (against quotas.activeRuns)."),
      queuedRuns: count("Runs waiting for a slot or behind their session's active run (against quotas.queuedRuns)."),
      tokensToday: count("Model tokens recorded since midnight UTC (against quotas.tokensPerDay)."),
      cacheReadTokensToday: count("Of today's input tokens, those the providers read from their prompt caches (SPEC PR4)."),
      cacheWriteTokensToday: count("Of today's input tokens, those the providers wrote to their prompt caches."),
      storageBytes: count("Bytes of file-change contents and artifacts kept (against quotas.storageBytes)."),
      backgroundCommands: count("Background commands running now (against backgroundCommandsLimit)."),
      toolCalls: count("Tool calls running now across every worker (against quotas.toolCalls)."),
    }),
    providers: z.array(ProviderUsageSchema).openapi({
      description:
        "Each provider profile with a shared budget, or paused now (SPEC PR3): its limits per window, the tenant's own use of it in the current window, and how long it stays paused.",
    }),
  })
  .openapi("Usage");

const getUsage = createRoute({
  method: "get",
  path: "/v1/usage",
  summary: "The calling tenant's use of the deployment against its quotas (SPEC X5)",
  responses: { 200: { content: { "application/json": { schema: UsageSchema } }, description: "Use and quotas" }, ...errorResponses },
});

export function registerUsageRoutes(app: App, services: ApiServices): void {
  app.openapi(getUsage, async (c) => {
    const tenantId = c.get("tenantId");
    const { store } = services;
    const settings = await readTenantSettings(store, tenantId);
    if (!settings) throw notFound("tenant");
    const [activeRuns, queuedRuns, tokens, bytes, runningCommands, toolCalls, providers] = await Promise.all([
      store.tenantAdmission.countWorkingRuns(tenantId),
      store.tenantAdmission.countWaitingRuns(tenantId),
      store.modelUsage.usageOfTenantToday(tenantId),
      store.tenantAdmission.storedBytes(tenantId),
      store.commands.countRunningCommands(tenantId),
      services.store.toolCallSlots.runningCallsOf(tenantId),
      providerUsage(services, tenantId),
    ]);
    return c.json(
      {
        quotas: effectiveQuotas(services.config, settings),
        backgroundCommandsLimit: effectiveToolLimits(services.config, settings).backgroundCommands,
        usage: {
          activeRuns,
          queuedRuns,
          // The same sum as the daily quota's (tenantAdmission.tokensToday).
          tokensToday: tokens.inputTokens + tokens.outputTokens,
          cacheReadTokensToday: tokens.cacheReadTokens,
          cacheWriteTokensToday: tokens.cacheWriteTokens,
          storageBytes: bytes,
          backgroundCommands: runningCommands,
          toolCalls,
        },
        providers,
      },
      200,
    );
  });
}

/** The tenant's part of each provider budget (PR3), from Redis; a profile Redis does not answer for is left out. */
async function providerUsage(services: Pick<ApiServices, "config" | "providerBudgets" | "logger">, tenantId: TenantId) {
  const states = await Promise.all(
    services.config.providers.profiles.map((profile) =>
      services.providerBudgets.state(profile.name, tenantId).catch((error: unknown) => {
        services.logger.warn({ err: error, profile: profile.name }, "reading a provider budget failed");
        return undefined;
      }),
    ),
  );
  return states
    .filter((state): state is ProfileBudgetState => state !== undefined && (state.limits !== null || state.pausedForMs > 0))
    .map(({ profile, windowMs, limits, tenantUsed, pausedForMs }) => ({
      profile,
      windowMs,
      limits,
      used: tenantUsed ?? noCounts,
      pausedForMs,
    }));
}
