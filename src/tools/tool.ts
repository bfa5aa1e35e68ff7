import { z } from "zod";
import type { UpdateJournal, WorkspaceFiles } from "../workspace/workspace-files.js";
import type { CallProcesses } from "./call-processes.js";
import type { FileChangeRecord } from "../core/file-change-record.js";
import type { ApprovalSubject, SideEffect, ToolResult } from "../core/tool-contract.js";
import type { ApprovalMode } from "../core/session.js";
import type { ProjectId, RunId, SessionId, TenantId } from "../ids.js";

/**
 * The tool contract (SPEC T1-T5, L3). A tool validates its own input, does its
 * work, and returns a result. Business failures are results with `isError` and
 * a stable `errorCode` the model can act on; only infrastructure failures throw.
 */

// The contract's data, shared with the folders below tools (gateway, artifacts, core), lives in src/core.
export type { ApprovalSubject, SideEffect, StoredToolResult, ToolResult, ToolResultPart } from "../core/tool-contract.js";
export type { FileChangeRecord };

/**
 * direct: sent from the turn's start; deferred: sent after tool_search activates it; hidden: never
 * sent, calls refused (R4); contextual: sent only while the request needs it (history_read_tool_result
 * while a projected result is in the context, O3).
 */
export type Exposure = "direct" | "deferred" | "hidden" | "contextual";

/** Everything a tool may use; there is no global current session (L3). */
export interface ToolContext {
  tenantId: TenantId;
  sessionId: SessionId;
  runId: RunId;
  projectId: ProjectId;
  /**
   * The project's workspace, through the one door that cannot leave it (S6):
   * every file a tool reads or writes goes through it. Tools get no host path.
   */
  workspace: WorkspaceFiles;
  /**
   * For `workspace.update` (`door-journal.ts`): the record of a write is made, and kept beside the
   * workspace, before its version is placed, so a worker killed before the result is stored
   * loses no record (SPEC F1, D3); it comes back as `placedWith`. Absent where this worker keeps
   * no call layers: the record is then made after the write.
   */
  fileJournal?: UpdateJournal<FileChangeRecord>;
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
  | { ok: true; childSessionId: SessionId; childRunId: RunId; depth: number }
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
  /**
   * JSON Schema of the arguments object, as sent to the model (R2) and enforced before `run` (T5).
   * Built-in tools derive it from their zod schema (`defineTool`); MCP tools bring their server's.
   */
  parameters: Record<string, unknown>;
  /** The zod schema `parameters` was derived from; absent when the JSON Schema came from elsewhere (MCP). */
  argumentsSchema?: z.ZodObject;
  exposure: Exposure;
  sideEffect: SideEffect;
  /**
   * Every change its calls make in the workspace goes through their context's door or through
   * foreground processes on a layer (SPEC W1, X7), which say what they changed: the batch's
   * checkpoint may then capture those paths alone. Absent: a tool that writes or runs things
   * makes its batch's checkpoint walk the whole folder.
   */
  reportsWorkspaceChanges?: boolean;
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

/**
 * A tool whose arguments are defined once, in zod: `parameters` is a strict
 * `z.object`, the arguments `run` and the other hooks receive are its type, and the JSON
 * Schema the model sees is derived from it once, here, at definition time.
 */
export interface ZodToolDefinition<Schema extends z.ZodObject> extends Omit<Tool<z.input<Schema>>, "parameters" | "argumentsSchema"> {
  parameters: Schema;
}

/**
 * Defines a tool. With a zod schema as `parameters` (every built-in tool) its JSON Schema
 * is derived by `toolParameters`; with a JSON Schema object (MCP tools, whose servers send
 * theirs, and test doubles) the tool is taken as it is. Either way the executor enforces the
 * JSON Schema with Ajv before `run` (T5), so the model is held to exactly what it was shown.
 */
export function defineTool<Schema extends z.ZodObject>(definition: ZodToolDefinition<Schema>): AnyTool;
export function defineTool<Args>(tool: Tool<Args>): AnyTool;
export function defineTool(definition: ZodToolDefinition<z.ZodObject> | Tool<unknown>): AnyTool {
  if (!(definition.parameters instanceof z.ZodType)) return definition as unknown as AnyTool;
  const schema = definition.parameters;
  return { ...definition, parameters: toolParameters(schema, definition.name), argumentsSchema: schema } as unknown as AnyTool;
}

/**
 * The JSON Schema of a tool's zod arguments schema, as sent to providers (R2) and checked
 * by Ajv (draft-07, like MCP tools' schemas). Deterministic: the same schema gives the same
 * bytes, in every process, step after step. Differences from zod's plain output:
 * - no `$schema` key: providers take the bare object schema, and Ajv's draft-07 default would
 *   refuse a 2020-12 one;
 * - integers carry no ±`Number.MAX_SAFE_INTEGER` bounds (zod adds them to every `.int()`):
 *   noise for the model, and JSON integers are not limited to them;
 * - the result is frozen, deeply, so nothing can change the bytes between steps.
 * Arguments reach `run` as the model sent them (Ajv checks, nothing converts), so a schema
 * must read the same as input and as output: defaults and transforms are refused here.
 */
export function toolParameters(schema: z.ZodObject, toolName = "tool"): Record<string, unknown> {
  const derive = (io: "input" | "output") => {
    const { $schema: _, ...json } = z.toJSONSchema(schema, {
      target: "draft-07",
      io,
      unrepresentable: "throw",
      override: ({ jsonSchema }) => {
        if (jsonSchema.type !== "integer") return;
        if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
        if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
      },
    });
    return json as Record<string, unknown>;
  };
  const json = derive("input");
  if (JSON.stringify(json) !== JSON.stringify(derive("output")))
    throw new Error(
      `${toolName}: its arguments schema reads differently as input and output (a default or transform?); tools get the arguments as sent`,
    );
  if (json.type !== "object" || json.additionalProperties !== false)
    throw new Error(`${toolName}: its arguments schema must be a strict z.object (additionalProperties: false)`);
  return deepFreeze(json);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function errorResult(errorCode: string, message: string): ToolResult {
  return { content: [{ type: "text", text: message }], isError: true, errorCode };
}

export function textResult(text: string): ToolResult {
  return { content: [{ type: "text", text }] };
}
