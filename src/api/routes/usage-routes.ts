import { createRoute, z } from "@hono/zod-openapi";
import { notFound } from "../../errors.js";
import { effectiveQuotas, effectiveToolLimits, readTenantSettings } from "../../tenants/tenant-settings.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, QuotasSchema } from "../schemas.js";

const count = (description: string) => z.number().int().nonnegative().openapi({ description });

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
    const [activeRuns, queuedRuns, tokens, bytes, runningCommands, toolCalls] = await Promise.all([
      store.tenantAdmission.countWorkingRuns(tenantId),
      store.tenantAdmission.countWaitingRuns(tenantId),
      store.modelUsage.usageOfTenantToday(tenantId),
      store.tenantAdmission.storedBytes(tenantId),
      store.commands.countRunningCommands(tenantId),
      services.store.toolCallSlots.runningCallsOf(tenantId),
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
      },
      200,
    );
  });
}
