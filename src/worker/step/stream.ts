import { compileMessages } from "../../context/compile-request.js";
import type { EventBody } from "../../core/events.js";
import type { BudgetLease } from "../../providers/budget/provider-budgets.js";
import type { ModelProvider, ProviderRequest } from "../../providers/provider.js";
import type { ProviderCapabilities } from "../../providers/provider-registry.js";
import type { StepResult } from "../../store/steps.js";
import type { JobDeps } from "../job-deps.js";
import { observeModelRequest } from "./observe-model-request.js";
import type { PreparedStep } from "./start.js";
import type { StepEventSink } from "./step-event-sink.js";
import { emptyFold, foldedResponse, foldStreamPart } from "./stream-fold.js";

export interface StepModel {
  provider: ModelProvider;
  capabilities: ProviderCapabilities;
}

/** A model call admitted to its profile's budget (admit.ts): the request compiled for that profile, and its lease. */
export interface ModelCall {
  model: StepModel;
  request: ProviderRequest;
  lease: BudgetLease;
}

/** What the model answered, with the live events its sink had not written yet (the commit writes them). */
export type StreamedStep = Omit<StepResult, "preGrants"> & { pendingEvents: EventBody[] };

/** Whether any of the attempt's output went to the sink: after that, no other profile may answer it (PR3, X1). */
export interface StreamProgress {
  output: boolean;
}

/** A profile's model; throws `provider_config` for a profile this deployment does not have (the step fails at once). */
export function modelOf(deps: Pick<JobDeps, "providers">, profile: string): StepModel {
  return { provider: deps.providers.get(profile), capabilities: deps.providers.capabilities(profile) };
}

/**
 * The step's history compiled for this model (O2, I3), with its tools. The session's own profile
 * is asked for the session's model; a fallback profile for its own default model.
 */
export async function requestFor(deps: Pick<JobDeps, "store">, prepared: PreparedStep, model: StepModel): Promise<ProviderRequest> {
  const { run, session } = prepared;
  const { provider, capabilities } = model;
  const ownProfile = provider.profile === session.providerProfile;
  return {
    model: (ownProfile ? session.model : undefined) ?? provider.defaultModel,
    messages: await compileMessages(prepared.history, {
      imageInput: capabilities.imageInput,
      artifacts: deps.store.artifacts.artifactReader({ tenantId: run.tenantId, sessionId: run.sessionId }),
      resultLimit: prepared.resultLimit,
    }),
    tools: prepared.tools.registry.schemasFor(prepared.exposed),
    parallelToolCalls: capabilities.parallelToolCalls,
    ...(session.systemPrompt ? { system: session.systemPrompt } : {}),
  };
}

/**
 * Phase 3 of the step job (process.ts), the stream: the admitted call's response streamed, each
 * part folded into the answer (stream-fold.ts) and its live event sent to the sink (text and
 * argument deltas coalesced, `tool_begin` at once). The budget's lease is settled with the usage
 * the provider reported, however the stream ended.
 */
export async function streamModel(
  deps: Pick<JobDeps, "tracing" | "metrics">,
  prepared: PreparedStep,
  call: ModelCall,
  sink: StepEventSink,
  signal: AbortSignal,
  progress: StreamProgress,
): Promise<StreamedStep> {
  const { provider } = call.model;
  const { request } = call;
  const fold = emptyFold();
  const observed = { profile: provider.profile, model: request.model, tenantId: prepared.run.tenantId, signal };
  try {
    await observeModelRequest(
      deps,
      observed,
      () => fold.finish?.usage,
      async () => {
        for await (const part of provider.stream(request, signal)) {
          const live = foldStreamPart(fold, part);
          if (!live) continue;
          progress.output = true;
          sink.push(live.body, live.urgent ? { urgent: true } : undefined);
        }
      },
    );
  } finally {
    await call.lease.settle(fold.finish?.usage);
  }
  const pendingEvents = await sink.takePending();
  return { ...foldedResponse(fold), pendingEvents, answeredBy: { profile: provider.profile, model: request.model } };
}
