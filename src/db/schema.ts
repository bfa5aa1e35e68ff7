import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import type { RunStatus } from "../core/run-status.js";
import type { ToolCallStatus } from "../core/tool-call-status.js";
import type { EventBody, EventType } from "../core/events.js";
import type { HistoryMessage, ResultPart } from "../core/history.js";
import type { NextJob } from "../core/next-job.js";
import type { ApprovalPolicy } from "../core/policy.js";
import type { McpTransportConfig } from "../core/mcp-transport.js";
import type { TenantQuotas } from "../core/tenant-quotas.js";
import type { ProcessLimits } from "../core/process-limits.js";
import type { ApprovalMode, OnInterrupted, RunMode, SessionTask } from "../core/session.js";
import type { ApprovalStatus, CommandStatus, StepStatus, WebhookDeliveryStatus } from "../core/statuses.js";
import type { NotAppliedReason } from "../core/file-change-record.js";
import type { CheckpointEntryKind, CheckpointReason } from "../core/checkpoint.js";
import type { ForkOrigin, HistoryPoint } from "../core/branch.js";
import type {
  ApiKeyId,
  ApprovalId,
  ArtifactId,
  BranchId,
  CheckpointId,
  AttemptId,
  CallId,
  CommandId,
  DeliveryId,
  FileChangeId,
  McpServerId,
  MessageId,
  ProjectId,
  RunId,
  SessionId,
  StepId,
  TenantId,
  WebhookId,
} from "../core/ids.js";

/**
 * Canonical state. Every row carries `tenant_id` (SPEC D8). Status columns hold
 * exactly the unions of src/core; transitions are guarded updates.
 */

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });
const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const tenants = pgTable(
  "tenants",
  {
    id: text("id").$type<TenantId>().primaryKey(),
    name: text("name").notNull(),
    /** Approval rules and expiry for every project of the tenant (SPEC S2, S4). */
    policy: jsonb("policy").$type<ApprovalPolicy>().notNull().default({}),
    /**
     * The tenant's tool processes run as host uid `FOYA_TOOL_UID_BASE + tool_uid_slot` (SPEC S7).
     * An identity: assigned on insert, never reused, never written by the service. At most
     * 100,000,000, the range src/config.ts checks the uid base against.
     */
    toolUidSlot: integer("tool_uid_slot").notNull().generatedAlwaysAsIdentity({ startWith: 1, maxValue: 100_000_000 }),
    /** The operator's Full Access grant (SPEC S8); the deployment must allow it too (`FOYA_ALLOW_FULL_ACCESS`). */
    fullAccess: boolean("full_access").notNull().default(false),
    /** The operator's overrides of the deployment's per-call process limits (`FOYA_TOOL_*`); absent keys use those. */
    toolLimits: jsonb("tool_limits").$type<Partial<ProcessLimits>>().notNull().default({}),
    /** The operator's overrides of the deployment's quotas (`FOYA_QUOTA_*`, SPEC X5); absent keys use those. */
    quotas: jsonb("quotas").$type<Partial<TenantQuotas>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("tenants_tool_uid_slot_idx").on(t.toolUidSlot)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").$type<ApiKeyId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    /** sha256 of the key; the key itself is shown once and never stored. */
    keyHash: text("key_hash").notNull(),
    prefix: text("prefix").notNull(),
    name: text("name").notNull(),
    createdAt: createdAt(),
    revokedAt: tstz("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_hash_idx").on(t.keyHash), index("api_keys_tenant_idx").on(t.tenantId)],
);

export const projects = pgTable(
  "projects",
  {
    id: text("id").$type<ProjectId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    /** Server-chosen folder; tenants never pass host paths. */
    workspacePath: text("workspace_path").notNull(),
    /** Approval rules of this project; combined with the tenant's. */
    policy: jsonb("policy").$type<ApprovalPolicy>().notNull().default({}),
    createdAt: createdAt(),
    /** Set by DELETE /v1/projects/:id: the project answers 404 from then on; its workspace and trash are removed, its history kept. */
    deletedAt: tstz("deleted_at"),
    /** Set when a worker has removed the deleted project's workspace and trash for good (src/worker/project-removal.ts). */
    filesRemovedAt: tstz("files_removed_at"),
    /** The worker removing them now; its claim holds until `removal_lease_until`, then another worker resumes. */
    removalOwner: text("removal_owner"),
    removalLeaseUntil: tstz("removal_lease_until"),
    /**
     * Set by a rewind (SPEC W2): the checkpoint the folder must be rebuilt from before the next
     * batch of the project runs; cleared by the worker that did it.
     */
    workspaceResetTo: text("workspace_reset_to").$type<CheckpointId>(),
  },
  (t) => [
    index("projects_tenant_idx").on(t.tenantId),
    // The deleted projects whose files are still there: what the workers' removal loop looks for.
    index("projects_files_left_idx").on(t.deletedAt).where(sql`deleted_at is not null and files_removed_at is null`),
  ],
);

export const sessions = pgTable(
  "sessions",
  {
    id: text("id").$type<SessionId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    projectId: text("project_id")
      .$type<ProjectId>()
      .notNull()
      .references(() => projects.id),
    approvalMode: text("approval_mode").$type<ApprovalMode>().notNull(),
    providerProfile: text("provider_profile").notNull(),
    model: text("model"),
    /** null means every registered tool may be exposed. */
    toolAllowList: jsonb("tool_allow_list").$type<string[] | null>(),
    runMode: text("run_mode").$type<RunMode>().notNull(),
    systemPrompt: text("system_prompt"),
    /** The session's task list, kept by the model with update_tasks. */
    tasks: jsonb("tasks").$type<SessionTask[]>().notNull().default([]),
    /** Last event sequence number handed out; bumped in the event insert itself. */
    eventSeq: bigint("event_seq", { mode: "number" }).notNull().default(0),
    runCount: integer("run_count").notNull().default(0),
    activeRunId: text("active_run_id").$type<RunId>(),
    /**
     * A sub-agent's session (SPEC A1): the session, run and call (the provider's call id, as in
     * events) of the `agent` call that started it; null for a session a client created.
     */
    parentSessionId: text("parent_session_id").$type<SessionId>(),
    parentRunId: text("parent_run_id").$type<RunId>(),
    parentCallId: text("parent_call_id"),
    /** Sub-agent levels above this session: 0 for a client's session, parent's + 1 for a sub-agent's. */
    depth: integer("depth").notNull().default(0),
    /** The default of the session's runs (SPEC D10). */
    onInterrupted: text("on_interrupted").$type<OnInterrupted>().notNull().default("end"),
    /** A fork's source: the session and point it was copied from (SPEC W2). */
    forkedFrom: jsonb("forked_from").$type<ForkOrigin | null>(),
    /** Bumped by every rewind: a worker's copy of the history of an older epoch is read again. */
    historyEpoch: integer("history_epoch").notNull().default(0),
    deletedAt: tstz("deleted_at"),
    createdAt: createdAt(),
  },
  (t) => [index("sessions_tenant_idx").on(t.tenantId)],
);

export const runs = pgTable(
  "runs",
  {
    id: text("id").$type<RunId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    /** 1-based position in the session, assigned when the run becomes active; orders history. */
    ordinal: integer("ordinal"),
    status: text("status").$type<RunStatus>().notNull(),
    input: text("input").notNull(),
    /** Index of the step the run is at (its last started or next step). */
    stepIndex: integer("step_index").notNull().default(0),
    /**
     * The outbox (SPEC X4): the job this run needs next, written in the same
     * transaction as the state that needs it. null while nothing should run
     * (terminal, waiting behind another run, or waiting for a decision).
     */
    nextJob: jsonb("next_job").$type<NextJob | null>(),
    /** Deferred tools tool_search activated in this run; they are exposed from the next step (R5). */
    activatedTools: jsonb("activated_tools").$type<string[]>().notNull().default([]),
    /** Fencing token: bumped by every claim; every commit checks it (D4). */
    fence: bigint("fence", { mode: "number" }).notNull().default(0),
    leaseOwner: text("lease_owner"),
    leaseUntil: tstz("lease_until"),
    /** How often the sweeper re-dispatched the current `next_job`; part of its job id, reset with each new next job. */
    redispatches: integer("redispatches").notNull().default(0),
    /** SPEC D10: the session's default or the run's own choice, fixed when the run is created. */
    onInterrupted: text("on_interrupted").$type<OnInterrupted>().notNull().default("end"),
    /** How often the run went on after an interrupted call (D10); past the limit it ends `interrupted`. */
    interruptions: integer("interruptions").notNull().default(0),
    error: jsonb("error").$type<{ code: string; message: string } | null>(),
    /** Set aside by a rewind (SPEC W2): the run stays readable, out of the session's history. */
    branchId: text("branch_id").$type<BranchId>(),
    createdAt: createdAt(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
    endedAt: tstz("ended_at"),
  },
  (t) => [
    uniqueIndex("runs_session_ordinal_idx").on(t.sessionId, t.ordinal),
    index("runs_tenant_idx").on(t.tenantId),
    // On `status` only (partial: the runs that may need work), so a step's updates of next_job,
    // lease, fence and updated_at touch no indexed column and stay HOT (heap-only tuples).
    index("runs_active_idx").on(t.status).where(sql`status in ('queued', 'running')`),
  ],
);

/**
 * Written on every agent step, only by fenced statements that insert a row for a parent row they
 * have just updated (the run, the session's event counter): no foreign keys, which would cost
 * a lookup per inserted row on the hot path and could not fail there (SPEC D1;
 * docs/architecture/store.md, "Tables without foreign keys").
 */
export const steps = pgTable(
  "steps",
  {
    id: text("id").$type<StepId>().primaryKey(),
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    runId: text("run_id").$type<RunId>().notNull(),
    index: integer("index").notNull(),
    /** 1 for the first delivery; bumped each time a step job claims the step again. */
    attempt: integer("attempt").notNull().default(1),
    status: text("status").$type<StepStatus>().notNull(),
    /** The tool names exposed to the model in this step (SPEC R6). */
    tools: jsonb("tools").$type<string[]>().notNull(),
    /** Normalized finish reason (the provider contract's FinishReason). */
    finishReason: text("finish_reason"),
    /** The provider's own stop reason as sent (e.g. Anthropic `end_turn`, OpenAI `stop`), for diagnosis. */
    stopReason: text("stop_reason"),
    usage: jsonb("usage").$type<{
      inputTokens: number;
      outputTokens: number;
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
    } | null>(),
    createdAt: createdAt(),
    endedAt: tstz("ended_at"),
  },
  // A tenant's tokens of the day (SPEC X5 quotas) are summed from its steps since midnight.
  (t) => [uniqueIndex("steps_run_index_idx").on(t.runId, t.index), index("steps_tenant_day_idx").on(t.tenantId, t.createdAt)],
);

/**
 * Written on every agent step, only by fenced statements that insert a row for a parent row they
 * have just updated (the run, the session's event counter): no foreign keys, which would cost
 * a lookup per inserted row on the hot path and could not fail there (SPEC D1;
 * docs/architecture/store.md, "Tables without foreign keys").
 */
export const messages = pgTable(
  "messages",
  {
    id: text("id").$type<MessageId>().primaryKey(),
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    sessionId: text("session_id").$type<SessionId>().notNull(),
    runId: text("run_id").$type<RunId>().notNull(),
    runOrdinal: integer("run_ordinal").notNull(),
    stepIndex: integer("step_index").notNull(),
    part: smallint("part").notNull(),
    callIndex: integer("call_index").notNull(),
    role: text("role").$type<HistoryMessage["role"]>().notNull(),
    content: jsonb("content").$type<HistoryMessage>().notNull(),
    /** Set aside by a rewind (SPEC W2): kept, and out of the history every reader sees. */
    branchId: text("branch_id").$type<BranchId>(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("messages_position_idx").on(t.sessionId, t.runOrdinal, t.stepIndex, t.part, t.callIndex)],
);

/**
 * Written on every agent step, only by fenced statements that insert a row for a parent row they
 * have just updated (the run, the session's event counter): no foreign keys, which would cost
 * a lookup per inserted row on the hot path and could not fail there (SPEC D1;
 * docs/architecture/store.md, "Tables without foreign keys").
 */
export const toolCalls = pgTable(
  "tool_calls",
  {
    id: text("id").$type<CallId>().primaryKey(),
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    sessionId: text("session_id").$type<SessionId>().notNull(),
    runId: text("run_id").$type<RunId>().notNull(),
    stepId: text("step_id").$type<StepId>().notNull(),
    stepIndex: integer("step_index").notNull(),
    /** Position in the model's response; results go back in this order (P4). */
    callIndex: integer("call_index").notNull(),
    /** The provider's tool call id. */
    callId: text("call_id").notNull(),
    name: text("name").notNull(),
    argumentsRaw: text("arguments_raw").notNull(),
    status: text("status").$type<ToolCallStatus>().notNull(),
    /** Fence of the batch attempt that marked the call running. */
    execFence: bigint("exec_fence", { mode: "number" }),
    executedBy: text("executed_by"),
    /** A bounded copy (`src/runs/result-preview.ts`); the whole result is the call's tool message. */
    result: jsonb("result").$type<ResultPart[] | null>(),
    isError: boolean("is_error"),
    errorCode: text("error_code"),
    /**
     * An `agent` call's child run (SPEC A1), set in the transaction that created it. Such a call
     * stays `running` while the child works: it is not lost with a worker, so a claim does not interrupt it.
     */
    childRunId: text("child_run_id").$type<RunId>(),
    /**
     * Set by the step's commit when the gateway allowed the call with the policies the step
     * claim read and the call belongs to the batch's first group: the batch's claim marks it
     * `running` in the same statement, with this grant (its sandbox network).
     */
    preGrant: jsonb("pre_grant").$type<{ network: boolean } | null>(),
    createdAt: createdAt(),
    startedAt: tstz("started_at"),
    endedAt: tstz("ended_at"),
  },
  (t) => [
    uniqueIndex("tool_calls_step_call_idx").on(t.stepId, t.callIndex),
    // A run's calls, and one step's: a result's check for open siblings reads its step's calls, not the whole run's.
    index("tool_calls_run_step_idx").on(t.runId, t.stepIndex),
    uniqueIndex("tool_calls_child_run_idx").on(t.childRunId).where(sql`child_run_id is not null`),
    // A tenant's running calls, counted where a call takes a slot of its tenant's `toolCalls` quota (SPEC X5).
    index("tool_calls_running_tenant_idx").on(t.tenantId).where(sql`status = 'running' and child_run_id is null`),
  ],
);

/**
 * Written on every agent step, only by fenced statements that insert a row for a parent row they
 * have just updated (the run, the session's event counter): no foreign keys, which would cost
 * a lookup per inserted row on the hot path and could not fail there (SPEC D1;
 * docs/architecture/store.md, "Tables without foreign keys").
 */
export const events = pgTable(
  "events",
  {
    sessionId: text("session_id").$type<SessionId>().notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    runId: text("run_id").$type<RunId>().notNull(),
    stepIndex: integer("step_index"),
    attempt: integer("attempt"),
    type: text("type").$type<EventType>().notNull(),
    data: jsonb("data").$type<EventBody>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.seq] })],
);

export const contentBlobs = pgTable(
  "content_blobs",
  {
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sha256: text("sha256").notNull(),
    /** The whole content's length, counted in the tenant's storageBytes from the moment the row exists (a chunked blob's too). */
    size: bigint("size", { mode: "number" }).notNull(),
    /** The content, for a blob kept in this one row; null for a chunked one (`content_blob_chunks`). */
    bytes: bytea("bytes"),
    /** A chunked blob's chunk length (every chunk but the last is this long); null for a one-row blob. */
    chunkBytes: integer("chunk_bytes"),
    /** False while a chunked blob's chunks are written: such a blob is never read, and the next put of its content finishes it. */
    complete: boolean("complete").notNull().default(true),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.sha256] }),
    check("content_blobs_bytes_or_chunks", sql`${t.bytes} is not null or ${t.chunkBytes} is not null`),
  ],
);

/** The chunks of a large blob (SPEC W1), in order from 0; every row carries its tenant. */
export const contentBlobChunks = pgTable(
  "content_blob_chunks",
  {
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    sha256: text("sha256").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    bytes: bytea("bytes").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.sha256, t.chunkIndex] }),
    foreignKey({ columns: [t.tenantId, t.sha256], foreignColumns: [contentBlobs.tenantId, contentBlobs.sha256] }).onDelete("cascade"),
  ],
);

export const artifacts = pgTable(
  "artifacts",
  {
    id: text("id").$type<ArtifactId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    sha256: text("sha256").notNull(),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    createdAt: createdAt(),
  },
  // By tenant too: its storageBytes use is summed at every step's claim when the quota is set (SPEC X5).
  (t) => [index("artifacts_session_idx").on(t.sessionId), index("artifacts_tenant_idx").on(t.tenantId)],
);

export const fileChanges = pgTable(
  "file_changes",
  {
    id: text("id").$type<FileChangeId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    runId: text("run_id")
      .$type<RunId>()
      .notNull()
      .references(() => runs.id),
    toolCallId: text("tool_call_id")
      .$type<CallId>()
      .references(() => toolCalls.id),
    path: text("path").notNull(),
    existedBefore: boolean("existed_before").notNull(),
    modeBefore: integer("mode_before"),
    modeAfter: integer("mode_after"),
    sha256Before: text("sha256_before"),
    sha256After: text("sha256_after"),
    diff: text("diff").notNull(),
    /** Set when the change was recorded but not made (the workspace changed there since, SPEC X7): its reason. */
    notApplied: text("not_applied").$type<NotAppliedReason>(),
    revertedAt: tstz("reverted_at"),
    createdAt: createdAt(),
  },
  (t) => [index("file_changes_session_idx").on(t.sessionId)],
);

/**
 * A project's workspace as it stood after a tool batch (SPEC W1): a delta against the previous
 * checkpoint of the project, or a full tree every few checkpoints so a rebuild reads a bounded
 * chain. Content is in `content_blobs` (shared with file changes, one row per tenant and digest).
 * Written in the transaction that closes the batch: a checkpoint is whole or absent.
 */
export const workspaceCheckpoints = pgTable(
  "workspace_checkpoints",
  {
    id: text("id").$type<CheckpointId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    projectId: text("project_id")
      .$type<ProjectId>()
      .notNull()
      .references(() => projects.id),
    sessionId: text("session_id").$type<SessionId>(),
    runId: text("run_id").$type<RunId>(),
    stepIndex: integer("step_index"),
    /** 1, 2, … per project: the order checkpoints were taken in. */
    seq: integer("seq").notNull(),
    /** The checkpoint this one is a delta against; null for a full tree. */
    baseId: text("base_id").$type<CheckpointId>(),
    reason: text("reason").$type<CheckpointReason>().notNull(),
    /** Entries and file bytes of the whole tree (not only the delta). */
    entryCount: integer("entry_count").notNull(),
    fileBytes: bigint("file_bytes", { mode: "number" }).notNull(),
    /** sha256 of the whole tree's logical entries, sorted: what a rebuilt folder is verified against. */
    treeDigest: text("tree_digest").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("workspace_checkpoints_project_seq_idx").on(t.projectId, t.seq),
    index("workspace_checkpoints_session_idx").on(t.sessionId),
  ],
);

/**
 * The entries of a checkpoint: for a full one the whole tree, for a delta what was added or changed
 * (`removed` false) and what went away (`removed` true). `path` is the entry's path key
 * (src/workspace/checkpoint). The stat fields are the capturing host's, for its next capture only.
 */
export const checkpointEntries = pgTable(
  "checkpoint_entries",
  {
    checkpointId: text("checkpoint_id")
      .$type<CheckpointId>()
      .notNull()
      .references(() => workspaceCheckpoints.id, { onDelete: "cascade" }),
    /** Every row carries its tenant (D8), as the checkpoint does. */
    tenantId: text("tenant_id").$type<TenantId>().notNull(),
    path: text("path").notNull(),
    removed: boolean("removed").notNull().default(false),
    kind: text("kind").$type<CheckpointEntryKind>(),
    mode: integer("mode"),
    size: bigint("size", { mode: "number" }),
    sha256: text("sha256"),
    /** A symlink's target, as a path key. */
    target: text("target"),
    stat: jsonb("stat").$type<{ dev: string; ino: string; mtimeNs: string; ctimeNs: string } | null>(),
  },
  (t) => [primaryKey({ columns: [t.checkpointId, t.path] })],
);

/**
 * What a rewind set aside (SPEC W2): the history after `at` (whole runs by `runs.branch_id`, the
 * rest of a cut run by `messages.branch_id`) and the tree the workspace had then, so a later
 * rewind can bring both back.
 */
export const sessionBranches = pgTable(
  "session_branches",
  {
    id: text("id").$type<BranchId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    at: jsonb("at").$type<HistoryPoint>().notNull(),
    /** The workspace when the rewind was asked for: where bringing the branch back returns to. */
    tipCheckpointId: text("tip_checkpoint_id").$type<CheckpointId>(),
    /** The checkpoint the rewind made the latest (the tree at `at`). */
    rewoundToCheckpointId: text("rewound_to_checkpoint_id").$type<CheckpointId>(),
    messageCount: integer("message_count").notNull(),
    /** Set when a later rewind brought this branch back into the session. */
    restoredAt: tstz("restored_at"),
    createdAt: createdAt(),
  },
  (t) => [index("session_branches_session_idx").on(t.sessionId)],
);

/**
 * Where a project's workspace lives (SPEC W3): one host at a time. `epoch` grows at every
 * placement, so a batch job or a request for an earlier placement is refused (fenced like runs),
 * and a host holding a copy of an earlier epoch knows it is stale. The placement holds while its
 * host has a live worker (the hosts' liveness records are its lease); a host found dead has its
 * placements deleted in the transaction that takes over its work.
 */
export const projectPlacements = pgTable(
  "project_placements",
  {
    projectId: text("project_id")
      .$type<ProjectId>()
      .primaryKey()
      .references(() => projects.id, { onDelete: "cascade" }),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    /** Null once released (its host found dead, or the project evicted): the next batch places it again, at `epoch + 1`. */
    hostId: text("host_id"),
    epoch: bigint("epoch", { mode: "number" }).notNull(),
    placedAt: tstz("placed_at").notNull().defaultNow(),
  },
  (t) => [index("project_placements_host_idx").on(t.hostId)],
);

/**
 * One row per worker process (SPEC D9): its liveness record. The worker renews `last_seen_at`
 * every second; a sweeper that finds it stale marks it `lost` (one sweeper wins) and takes
 * over its runs and background commands at once instead of waiting for their leases.
 */
export const workers = pgTable(
  "workers",
  {
    id: text("id").primaryKey(),
    host: text("host").notNull(),
    pid: integer("pid").notNull(),
    startedAt: tstz("started_at").notNull().defaultNow(),
    lastSeenAt: tstz("last_seen_at").notNull().defaultNow(),
    /** Set when the worker drained (`stopped`) or was found dead (`lost`). */
    stoppedAt: tstz("stopped_at"),
    stopReason: text("stop_reason").$type<"stopped" | "lost">(),
    /** Jobs running per queue, as of the last renewal. */
    jobs: jsonb("jobs").$type<Record<string, number>>().notNull().default({}),
    /** Background commands held, as of the last renewal. */
    commands: integer("commands").notNull().default(0),
  },
  (t) => [index("workers_live_idx").on(t.lastSeenAt).where(sql`stopped_at is null`)],
);

/**
 * Background commands (SPEC B1-B4). The owning worker holds a lease and
 * flushes a bounded snapshot of the output; anyone can read it. A command whose
 * owner stops renewing is reported `lost`, never `running`.
 */
export const commands = pgTable(
  "commands",
  {
    id: text("id").$type<CommandId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    runId: text("run_id")
      .$type<RunId>()
      .notNull()
      .references(() => runs.id),
    command: text("command").notNull(),
    status: text("status").$type<CommandStatus>().notNull(),
    exitCode: integer("exit_code"),
    signal: text("signal"),
    ownerWorker: text("owner_worker").notNull(),
    leaseUntil: tstz("lease_until").notNull(),
    /** The bounded view of stdout and stderr (head and tail), as last flushed. */
    output: text("output").notNull().default(""),
    outputBytes: bigint("output_bytes", { mode: "number" }).notNull().default(0),
    outputLines: bigint("output_lines", { mode: "number" }).notNull().default(0),
    createdAt: createdAt(),
    endedAt: tstz("ended_at"),
  },
  (t) => [index("commands_session_idx").on(t.sessionId), index("commands_running_idx").on(t.leaseUntil).where(sql`status = 'running'`)],
);

/**
 * One row per call the gateway answered "ask" for (SPEC X3), created in the same
 * transaction that moves the call to `awaiting_approval`.
 */
export const approvals = pgTable(
  "approvals",
  {
    id: text("id").$type<ApprovalId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id")
      .$type<SessionId>()
      .notNull()
      .references(() => sessions.id),
    runId: text("run_id")
      .$type<RunId>()
      .notNull()
      .references(() => runs.id),
    toolCallId: text("tool_call_id")
      .$type<CallId>()
      .notNull()
      .references(() => toolCalls.id),
    status: text("status").$type<ApprovalStatus>().notNull(),
    /** Why the gateway asked. */
    requestReason: text("request_reason").notNull().default(""),
    /** Whether approving also opens the network to the call's sandbox. */
    grantsNetwork: boolean("grants_network").notNull().default(false),
    /** Why the decider decided (their words), or why it expired. */
    reason: text("reason"),
    decidedByKeyId: text("decided_by_key_id").$type<ApiKeyId>(),
    decidedAt: tstz("decided_at"),
    /** Approve-with-edited-arguments: the arguments the call runs with instead of the model's. */
    editedArguments: text("edited_arguments"),
    /** What the call would change, for the approver (write and edit); never sent to the model. */
    displayDiff: text("display_diff"),
    expiresAt: tstz("expires_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("approvals_call_idx").on(t.toolCallId),
    index("approvals_tenant_status_idx").on(t.tenantId, t.status),
    index("approvals_pending_expiry_idx").on(t.expiresAt).where(sql`status = 'pending'`),
  ],
);

/** A tenant's webhook subscription (SPEC S4). The secret signs deliveries (Standard Webhooks). */
export const webhooks = pgTable(
  "webhooks",
  {
    id: text("id").$type<WebhookId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    url: text("url").notNull(),
    /** Event types delivered, e.g. ["approval_request"]; "*" for every type that is delivered. */
    eventTypes: jsonb("event_types").$type<string[]>().notNull(),
    /** `whsec_` + base64 key; shown once when created. */
    secret: text("secret").notNull(),
    description: text("description"),
    createdAt: createdAt(),
    disabledAt: tstz("disabled_at"),
  },
  (t) => [index("webhooks_tenant_idx").on(t.tenantId)],
);

/**
 * One event to one subscription. Rows are inserted by a trigger on `events`, so
 * a delivery exists exactly when its event committed (outbox); the id is the
 * `webhook-id` header, stable across retries.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").$type<DeliveryId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    webhookId: text("webhook_id")
      .$type<WebhookId>()
      .notNull()
      .references(() => webhooks.id),
    sessionId: text("session_id").$type<SessionId>().notNull(),
    eventSeq: bigint("event_seq", { mode: "number" }).notNull(),
    eventType: text("event_type").notNull(),
    /** The JSON body sent, exactly as signed. */
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    status: text("status").$type<WebhookDeliveryStatus>().notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** Set when a BullMQ job was enqueued for it; a poller enqueues rows where this is null. */
    enqueuedAt: tstz("enqueued_at"),
    deliveredAt: tstz("delivered_at"),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_event_idx").on(t.webhookId, t.sessionId, t.eventSeq),
    index("webhook_deliveries_pending_idx").on(t.createdAt).where(sql`status = 'pending' and enqueued_at is null`),
    // The poller's re-check of deliveries whose job may be lost.
    index("webhook_deliveries_enqueued_idx").on(t.enqueuedAt).where(sql`status = 'pending'`),
    index("webhook_deliveries_list_idx").on(t.webhookId, t.createdAt),
    // The pruner's scan for finished deliveries past the retention.
    index("webhook_deliveries_finished_idx").on(t.createdAt).where(sql`status <> 'pending'`),
  ],
);

/** Every delivery attempt, successful or not. */
export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: text("id").$type<AttemptId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    deliveryId: text("delivery_id")
      .$type<DeliveryId>()
      .notNull()
      .references(() => webhookDeliveries.id),
    attempt: integer("attempt").notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    durationMs: integer("duration_ms").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_attempts_delivery_idx").on(t.deliveryId)],
);

/**
 * An MCP server configured for a tenant (every project) or one project of it (SPEC M1).
 * Env and header values are secrets: the API never answers them, only their names.
 */
export const mcpServers = pgTable(
  "mcp_servers",
  {
    id: text("id").$type<McpServerId>().primaryKey(),
    tenantId: text("tenant_id")
      .$type<TenantId>()
      .notNull()
      .references(() => tenants.id),
    /** null: every project of the tenant. */
    projectId: text("project_id")
      .$type<ProjectId>()
      .references(() => projects.id),
    /** Becomes the `<server>` of `mcp__<server>__<tool>`; unique within its scope. */
    name: text("name").notNull(),
    transport: jsonb("transport").$type<McpTransportConfig>().notNull(),
    startupTimeoutMs: integer("startup_timeout_ms"),
    callTimeoutMs: integer("call_timeout_ms"),
    deferTools: boolean("defer_tools"),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("mcp_servers_tenant_name_idx").on(t.tenantId, t.name).where(sql`project_id is null`),
    uniqueIndex("mcp_servers_project_name_idx").on(t.tenantId, t.projectId, t.name).where(sql`project_id is not null`),
  ],
);
