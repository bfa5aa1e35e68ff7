import type { WorkspaceFiles } from "../workspace/workspace-files.js";
import type { CallProcesses } from "./call-processes.js";
import type { FileChangeRecord } from "../core/file-change-record.js";
import type { ApprovalSubject, SideEffect, ToolResult } from "../core/tool-contract.js";
import type { ApprovalMode } from "../core/session.js";

/**
 * The tool contract (SPEC T1-T5, L3). A tool validates its own input, does its
 * work, and returns a result. Business failures are results with `isError` and
 * a stable `errorCode` the model can act on; only infrastructure failures throw.
 */

// The contract's data, shared with the folders below tools (gateway, artifacts, core), lives in src/core.
export type { ApprovalSubject, BinaryResultPart, SideEffect, StoredToolResult, ToolResult, ToolResultPart } from "../core/tool-contract.js";
export type { FileChangeRecord };

/**
 * direct: sent from the turn's start; deferred: sent after tool_search activates it; hidden: never
 * sent, calls refused (R4); contextual: sent only while the request needs it (history_read_tool_result
 * while a projected result is in the context, O3).
 */
export type Exposure = "direct" | "deferred" | "hidden" | "contextual";

/** Everything a tool may use; there is no global current session (L3). */
export interface ToolContext {
  tenantId: string;
  sessionId: string;
  runId: string;
  projectId: string;
  /**
   * The project's workspace, through the one door that cannot leave it (S6):
   * every file a tool reads or writes goes through it. Tools get no host path.
   */
  workspace: WorkspaceFiles;
  /** Starts this call's processes: confined, as the tenant's uid, within its limits (S3, S7, S8). */
  processes: CallProcesses;
  approvalMode: ApprovalMode;
  provider: { profile: string; model: string };
  /** Names of the tools exposed to the model in the step that produced this call. */
  exposedTools: readonly string[];
  /** The deferred-tool activator (R5): find deferred tools and activate them for this turn. */
  deferredTools: {
    search(query: string, limit: number): ReadonlyArray<{ name: string; description: string }>;
    /** Exposed from the next step of this run; never beyond it. */
    activate(names: readonly string[]): Promise<void>;
  };
  /** Aborted when the run is cancelled, or when a draining worker's grace period ends. */
  signal: AbortSignal;
  /** Reports progress to clients as a `tool_update` event; settles once it is recorded (or dropped: the call was answered), never rejects. */
  reportProgress(message: string): Promise<void>;
  /** Background commands of this session (B1): started here, owned by this worker, readable anywhere. */
  commands: {
    start(command: string): Promise<{ id: string } | { error: string }>;
    get(id: string): Promise<BackgroundCommandView | undefined>;
    cancel(id: string): Promise<BackgroundCommandView | undefined>;
  };
  /** The session's task list: replaced whole, announced as `tasks_updated`. */
  tasks: {
    replace(tasks: ReadonlyArray<{ title: string; status: "pending" | "in_progress" | "done" }>): Promise<void>;
  };
  /** The session's canonical history, for tools that read it back (O3). */
  history: {
    /** The full text of a stored tool result, by the reference the context compiler gave it; undefined if there is none. */
    readToolResult(reference: string): Promise<{ name: string; text: string; isError: boolean } | undefined>;
  };
  /** Sub-agents (A1): starts a child run, never wider than this session, whose final answer becomes this call's result. */
  subagents: {
    start(request: SubAgentRequest): Promise<SubAgentStart>;
  };
  /** The tenant's content-addressed blob store (file contents for review and revert). */
  blobs: {
    /** Stores the bytes once per digest; answers their sha256. */
    put(content: Buffer): Promise<string>;
  };
}

/** What a sub-agent is asked to do, and how far it may reach: each limit may only narrow the parent's. */
export interface SubAgentRequest {
  task: string;
  /** Tool names; a subset of what the parent session may use. Absent: the parent's own set. */
  tools?: string[];
  readOnly?: boolean;
  approvalMode?: ApprovalMode;
  /** The sub-agent's system prompt. */
  instructions?: string;
}

export type SubAgentStart =
  | { ok: true; childSessionId: string; childRunId: string; depth: number }
  | { ok: false; errorCode: string; message: string };

/** What tools see of a background command. */
export interface BackgroundCommandView {
  id: string;
  command: string;
  status: "running" | "exited" | "failed" | "killed" | "cancelled" | "lost";
  exitCode: number | null;
  signal: string | null;
  /** Bounded: head and tail of stdout and stderr, with omitted counts. */
  output: string;
  outputBytes: number;
  outputLines: number;
}

export interface ToolCallInput {
  callId: string;
  name: string;
  argumentsRaw: string;
}

export interface Tool<Args = unknown> {
  name: string;
  description: string;
  /** JSON Schema of the arguments object; enforced before `run` (T5). */
  parameters: Record<string, unknown>;
  exposure: Exposure;
  sideEffect: SideEffect;
  /** Parallel capability (P1); may look at the call's arguments. Absent means serial. */
  parallel?: boolean | ((args: Args) => boolean);
  /** What the approval gateway judges; absent means the tool is judged by its side-effect class alone. */
  approvalSubject?: (args: Args) => ApprovalSubject;
  /**
   * Why this call would be refused before any side effect, whatever a human
   * decided (a path the workspace door refuses): the gateway then denies it with
   * this reason instead of asking anyone (S11). Null when it may run.
   */
  refusal?: (context: Pick<ToolContext, "workspace" | "approvalMode">, args: Args) => Promise<ToolRefusal | null>;
  /** The change the call would make, as a diff for an approver to read (X3); null when there is none to show. */
  previewDiff?: (context: Pick<ToolContext, "workspace">, args: Args) => Promise<string | null>;
  run(context: ToolContext, args: Args, call: ToolCallInput): Promise<ToolResult>;
}

/** A refusal known before running: the stable code and message the model would get from `run`. */
export interface ToolRefusal {
  code: string;
  message: string;
}

/** Registers tools of any argument type in one list. */
export type AnyTool = Tool<never>;

export function defineTool<Args>(tool: Tool<Args>): AnyTool {
  return tool as unknown as AnyTool;
}

export function errorResult(errorCode: string, message: string): ToolResult {
  return { content: [{ type: "text", text: message }], isError: true, errorCode };
}

export function textResult(text: string): ToolResult {
  return { content: [{ type: "text", text }] };
}
