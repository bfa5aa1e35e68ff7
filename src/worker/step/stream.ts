import { compileMessages } from "../../context/compile-request.js";
import type { EventBody } from "../../core/events.js";
import type { ModelProvider } from "../../providers/provider.js";
import type { ProviderCapabilities } from "../../providers/provider-registry.js";
import type { StepResult } from "../../store/steps.js";
import type { JobDeps } from "../job-deps.js";
import type { SessionRow } from "../session-context-cache.js";
import { observeModelRequest } from "./observe-model-request.js";
import type { PreparedStep } from "./start.js";
import type { StepEventSink } from "./step-event-sink.js";
import { emptyFold, foldedResponse, foldStreamPart } from "./stream-fold.js";

export interface StepModel {
  provider: ModelProvider;
  capabilities: ProviderCapabilities;
}

/** What the model answered, with the live events its sink had not written yet (the commit writes them). */
export type StreamedStep = Omit<StepResult, "preGrants"> & { pendingEvents: EventBody[] };

/** The session's model; throws `provider_config` for a profile this deployment does not have (the step fails at once). */
export function modelOf(deps: Pick<JobDeps, "providers">, session: Pick<SessionRow, "providerProfile">): StepModel {
  return { provider: deps.providers.get(session.providerProfile), capabilities: deps.providers.capabilities(session.providerProfile) };
}

/**
 * Phase 3 of the step job (process.ts), the stream: the history compiled for this model, then
 * its response streamed, each part folded into the answer (stream-fold.ts) and its live event
 * sent to the sink (text and argument deltas coalesced, `tool_begin` at once).
 */
export async function streamModel(
  deps: Pick<JobDeps, "store" | "tracing" | "metrics">,
  prepared: PreparedStep,
  model: StepModel,
  sink: StepEventSink,
  signal: AbortSignal,
): Promise<StreamedStep> {
  const { run, session } = prepared;
  const { provider, capabilities } = model;
  const request = {
    model: session.model ?? provider.defaultModel,
    messages: await compileMessages(prepared.history, {
      imageInput: capabilities.imageInput,
      artifacts: deps.store.artifacts.artifactReader({ tenantId: run.tenantId, sessionId: run.sessionId }),
      resultLimit: prepared.resultLimit,
    }),
    tools: prepared.tools.registry.schemasFor(prepared.exposed),
    parallelToolCalls: capabilities.parallelToolCalls,
    ...(session.systemPrompt ? { system: session.systemPrompt } : {}),
  };
  const fold = emptyFold();
  const observed = { profile: provider.profile, model: request.model, tenantId: run.tenantId, signal };
  await observeModelRequest(
    deps,
    observed,
    () => fold.finish?.usage,
    async () => {
      for await (const part of provider.stream(request, signal)) {
        const live = foldStreamPart(fold, part);
        if (live) sink.push(live.body, live.urgent ? { urgent: true } : undefined);
      }
    },
  );
  const pendingEvents = await sink.takePending();
  return { ...foldedResponse(fold), pendingEvents };
}
