import type { CallGrant } from "../../approvals/gate-batch.js";
import { startSubAgent } from "../../agents/start-sub-agent.js";
import { readToolResult } from "../../context/read-tool-result.js";
import type { StepRef } from "../../core/events.js";
import { storableText } from "../../core/storable-text.js";
import type { ScopedTools } from "../../mcp/tool-catalog.js";
import { requestCommandCancel } from "../../runs/cancel-command.js";
import type { CallRow, ClaimedRun } from "../../store/runs.js";
import type { CallProcesses } from "../../tools/call-processes.js";
import type { ToolContext } from "../../tools/tool.js";
import type { BackgroundCommands } from "../background-commands.js";
import type { JobDeps } from "../job-deps.js";
import type { SessionRow } from "../session-context-cache.js";
import type { BatchAttempt } from "./batch-attempt.js";
import { batchToolEnvironment, type BatchToolEnvironment, type EnvironmentDeps } from "./batch-tool-environment.js";
import type { ToolContextFor } from "./run-call.js";
import { changesAreReported, observedProcesses, observedWorkspace, type WorkspaceChangeLog } from "./workspace-changes.js";
import { type ProjectId, parseId } from "../../ids.js";

export type ToolContextDeps = Pick<JobDeps, "store" | "unitOfWork" | "bus" | "config" | "failpoints" | "logger">;

/** What every call of one batch attempt shares in its context; built once per attempt (`toolContextsOf`). */
export interface ToolContextScope {
  run: ClaimedRun;
  session: SessionRow;
  projectId: ProjectId;
  stepRef: StepRef;
  /** The tools exposed to the model in the step that made the calls. */
  stepTools: readonly string[];
  tools: ScopedTools;
  signal: AbortSignal;
  provider: { profile: string; model: string };
  environment: BatchToolEnvironment;
  /** The environment's door, noting what it changes in `changes`. */
  workspace: ToolContext["workspace"];
  changes: WorkspaceChangeLog;
  commands: BackgroundCommands;
}

/**
 * The one place a `ToolContext` is made (SPEC L3: there is no global current session), as
 * Temporal's activity builds its context: the call's scope, its workspace door and confined
 * processes (S6-S8), and every door a tool may use, each fenced by this batch attempt.
 */
function createToolContext(deps: ToolContextDeps, scope: ToolContextScope, call: CallRow, grant: CallGrant): ToolContext {
  const { run, session, stepRef, environment } = scope;
  const owner = { tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id, toolCallId: call.id };
  const isTool = (name: string) => scope.tools.registry.get(name) !== undefined;
  if (!changesAreReported(scope.tools, call.name)) scope.changes.unknown();
  const processes = () => observedProcesses(environment.processesFor(grant, owner), scope.changes);
  const blobs: ToolContext["blobs"] = { put: (content) => deps.store.blobs.putBlob(run.tenantId, content) };
  const fileJournal = environment.fileJournalFor(owner, blobs);
  return {
    tenantId: run.tenantId,
    sessionId: run.sessionId,
    runId: run.id,
    projectId: scope.projectId,
    workspace: scope.workspace,
    ...(fileJournal ? { fileJournal } : {}),
    processes: processes(),
    approvalMode: session.approvalMode,
    provider: scope.provider,
    exposedTools: scope.stepTools,
    signal: scope.signal,
    deferredTools: {
      search: (query, limit) => scope.tools.registry.searchDeferred(query, session, limit),
      // Fenced like every write of this batch: a superseded attempt activates nothing.
      activate: (names) => deps.store.runs.addActivatedTools(run, names),
    },
    blobs,
    subagents: { start: (request) => startSubAgent(deps, { run, session, call, stepRef, isTool }, request) },
    history: { readToolResult: (reference) => readToolResult(deps.store, run, reference) },
    tasks: { replace: (tasks) => replaceTasks(deps, scope, tasks) },
    commands: commandsOf(deps, scope, processes),
    reportProgress: (message) => reportProgress(deps, scope, call, message),
  };
}

/** `createToolContext` bound to one batch attempt: the session's model and the calls' environment, resolved once. */
export async function toolContextsOf(
  deps: ToolContextDeps & EnvironmentDeps & Pick<JobDeps, "providers">,
  commands: BackgroundCommands,
  attempt: BatchAttempt,
): Promise<ToolContextFor> {
  const { run, session } = attempt;
  const provider = deps.providers.get(session.providerProfile);
  const environment = await batchToolEnvironment(deps, {
    tenantId: run.tenantId,
    approvalMode: session.approvalMode,
    workspacePath: attempt.workspaceDir,
  });
  const model = { profile: provider.profile, model: session.model ?? provider.defaultModel };
  const workspace = observedWorkspace(environment.workspace, attempt.changes);
  const scope: ToolContextScope = { ...attempt, provider: model, environment, workspace, commands };
  return (call, grant) => createToolContext(deps, scope, call, grant);
}

async function replaceTasks(
  deps: Pick<JobDeps, "unitOfWork">,
  scope: ToolContextScope,
  tasks: Parameters<ToolContext["tasks"]["replace"]>[0],
) {
  const { run, stepRef } = scope;
  await deps.unitOfWork.transact(async (fx) => {
    await fx.store.sessions.replaceSessionTasks(run.sessionId, tasks);
    await fx.emit(run.tenantId, run.sessionId, [{ runId: run.id, step: stepRef, body: { type: "tasks_updated", tasks: [...tasks] } }]);
  });
}

/** The session's background commands (B1): started on this worker with the call's processes, readable anywhere. */
function commandsOf(
  deps: Pick<JobDeps, "store" | "bus">,
  scope: ToolContextScope,
  processes: () => CallProcesses,
): ToolContext["commands"] {
  const { run } = scope;
  // A command id comes from the model: one of another shape names no command.
  const find = async (raw: string) => {
    const id = parseId("cmd", raw);
    return id === null ? undefined : deps.store.commands.findCommand(run.tenantId, id, run.sessionId);
  };
  return {
    start: (command) =>
      scope.commands.start({ tenantId: run.tenantId, sessionId: run.sessionId, runId: run.id, command, processes: processes() }),
    get: find,
    async cancel(id) {
      const found = await find(id);
      if (found) await requestCommandCancel(deps, found);
      return found && (await find(id));
    },
  };
}

/**
 * Fenced like a result: progress lands only while this attempt still runs the call. The
 * promise settles once it is recorded or dropped, never rejects: a tool need not await it.
 */
function reportProgress(deps: Pick<JobDeps, "store" | "bus" | "logger">, scope: ToolContextScope, call: CallRow, message: string) {
  const { run } = scope;
  return deps.store.toolCalls
    .appendCallProgress(run, call, scope.stepRef, storableText(message))
    .then((events) => deps.bus.publish(events))
    .catch((error: unknown) => deps.logger.warn({ err: error, runId: run.id, callId: call.callId }, "tool progress was not recorded"));
}
