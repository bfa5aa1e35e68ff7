import { z } from "@hono/zod-openapi";
import { runStatuses } from "../core/run-status.js";
import { storableText } from "../core/storable-text.js";
import { webhookEventTypes, webhookSubscriptionTypes } from "../webhooks/webhook-event-types.js";

/** A string Postgres can store: no NUL characters, no unpaired surrogates. */
export const text = () =>
  z.string().refine((value) => storableText(value) === value, "must not contain NUL characters or unpaired surrogates");

/** What `newId` (src/ids.ts) makes: a lowercase kind prefix, `_`, then base64url. */
const idPattern = /^[a-z]{3,4}_[A-Za-z0-9_-]+$/;

/** An id of a Foya row (SPEC S10): anything else is refused with 400 before it reaches a query. */
export const foyaId = () =>
  z.string().max(64).regex(idPattern, "must be an id such as ses_AbC123 (a prefix, an underscore, letters, digits, - or _)");

/** Request and response schemas; the OpenAPI document is generated from these. */

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      current: z
        .record(z.string(), z.unknown())
        .optional()
        .openapi({ description: "On a 409: the record as it is now (the operation that won, SPEC D11)." }),
    }),
  })
  .openapi("Error");

export const errorResponses = {
  400: { content: { "application/json": { schema: ErrorSchema } }, description: "Invalid request" },
  401: { content: { "application/json": { schema: ErrorSchema } }, description: "Missing or unknown API key" },
  404: { content: { "application/json": { schema: ErrorSchema } }, description: "Not found, or owned by another tenant" },
  413: {
    content: { "application/json": { schema: ErrorSchema } },
    description: "The request body is over the route's limit (payload_too_large)",
  },
  429: {
    content: { "application/json": { schema: ErrorSchema } },
    description:
      "Too many requests with this API key (rate_limited), or too many failed authentications with this credential or from this address (auth_locked_out); see Retry-After",
    headers: { "Retry-After": { description: "Seconds until the limit's window ends", schema: { type: "integer" } } },
  },
} as const;

/** Routes whose work is done on the host a project is placed on (SPEC W3, src/hosts/host-request.ts). */
export const hostRequestResponses = {
  503: {
    content: { "application/json": { schema: ErrorSchema } },
    description: "No worker of the project's host took the request in time (no_worker); see Retry-After",
    headers: { "Retry-After": { description: "Seconds to wait before trying again", schema: { type: "integer" } } },
  },
  504: {
    content: { "application/json": { schema: ErrorSchema } },
    description: "The project's host did not answer in time (worker_timeout)",
  },
} as const;

/** Sessions and runs in Full Access when the deployment or the tenant lacks the operator's grant (SPEC S8). */
export const fullAccessRefusedResponse = {
  403: {
    content: { "application/json": { schema: ErrorSchema } },
    description: "Full Access is not granted (code full_access_not_granted); the message says what is missing",
  },
} as const;

/** Admin routes when the deployment has no admin token. */
export const adminDisabledResponse = {
  403: {
    content: { "application/json": { schema: ErrorSchema } },
    description: "Tenant administration is disabled (FOYA_ADMIN_TOKEN is not set)",
  },
} as const;

export const IdParam = z.object({ id: foyaId().openapi({ param: { name: "id", in: "path" } }) });

export const TenantCreateSchema = z.object({ name: text().min(1).max(200) }).openapi("TenantCreate");
export const TenantCreatedSchema = z
  .object({
    tenant: z.object({ id: z.string(), name: z.string(), createdAt: z.string() }),
    apiKey: z.string().openapi({ description: "Shown once; store it now." }),
  })
  .openapi("TenantCreated");

const processLimit = (description: string) => z.number().int().positive().openapi({ description });

/** Per-call process limits (SPEC S7); see src/sandbox/process-limits.ts for what each bounds. */
const ProcessLimitsSchema = z
  .object({
    memoryBytes: processLimit("Address space per process (RLIMIT_AS), bytes"),
    processes: processLimit("Processes and threads of the tenant's host uid (RLIMIT_NPROC)"),
    cpuSeconds: processLimit("CPU time per process (RLIMIT_CPU), seconds"),
    fileSizeBytes: processLimit("Largest file a process may write (RLIMIT_FSIZE), bytes"),
    wallSeconds: processLimit("Wall-clock time of a foreground call, seconds"),
    tmpBytes: processLimit("Temporary space of a foreground call (its /tmp, /var/tmp and /dev/shm together), bytes"),
    backgroundTmpBytes: processLimit("Temporary space of a background command or a stdio MCP server, bytes"),
    tmpBudgetBytes: processLimit("Temporary space all the tenant's running sandboxes on one host may hold together, bytes"),
    backgroundCommands: processLimit("Background commands the tenant may have running at once, across every worker"),
    backgroundSeconds: processLimit("Longest a background command may run, seconds"),
  })
  .strict()
  .openapi("ProcessLimits");

const limits = ProcessLimitsSchema.shape;

/** What a tenant may use of the deployment (SPEC X5); see src/tenants/tenant-quotas.ts. */
export const QuotasSchema = z
  .object({
    activeRuns: z.number().int().positive().openapi({
      description:
        "Runs queued for a worker or running at once, sub-agents included (a run waiting on its sub-agent lends it its slot); later runs wait in order. The tenant's share of the workers.",
    }),
    queuedRuns: z
      .number()
      .int()
      .positive()
      .openapi({ description: "Runs waiting for a slot; beyond it, starting a run answers 429 with Retry-After." }),
    tokensPerDay: z.number().int().nonnegative().openapi({
      description:
        "Model tokens (input and output, as recorded) per UTC day; 0 means no limit. Over it, new runs answer 429 until midnight UTC, sub-agents are refused and running runs end quota_exceeded at their next step.",
    }),
    storageBytes: z.number().int().nonnegative().openapi({
      description:
        "Bytes of file-change contents and artifacts kept; 0 means no limit. Over it, new runs answer 429, sub-agents are refused and running runs end quota_exceeded at their next step.",
    }),
    toolCalls: z.number().int().nonnegative().openapi({
      description:
        "Tool calls running at once across every worker; 0 means no limit beyond five per run. A call over it waits, queued, for a slot.",
    }),
  })
  .strict()
  .openapi("Quotas");
const quotas = QuotasSchema.shape;

export const TenantUpdateSchema = z
  .object({
    fullAccess: z
      .boolean()
      .optional()
      .openapi({ description: "Grant or revoke Full Access (SPEC S8); the deployment must allow it too (FOYA_ALLOW_FULL_ACCESS)." }),
    limits: z
      .object({
        memoryBytes: limits.memoryBytes.nullable().optional(),
        processes: limits.processes.nullable().optional(),
        cpuSeconds: limits.cpuSeconds.nullable().optional(),
        fileSizeBytes: limits.fileSizeBytes.nullable().optional(),
        wallSeconds: limits.wallSeconds.nullable().optional(),
        tmpBytes: limits.tmpBytes.nullable().optional(),
        backgroundTmpBytes: limits.backgroundTmpBytes.nullable().optional(),
        tmpBudgetBytes: limits.tmpBudgetBytes.nullable().optional(),
        backgroundCommands: limits.backgroundCommands.nullable().optional(),
        backgroundSeconds: limits.backgroundSeconds.nullable().optional(),
      })
      .strict()
      .nullable()
      .optional()
      .openapi({
        description:
          "Overrides of the deployment's limits, merged into the tenant's current ones: a value sets a key, null removes it; null for the whole object removes every override.",
      }),
    quotas: z
      .object({
        activeRuns: quotas.activeRuns.nullable().optional(),
        queuedRuns: quotas.queuedRuns.nullable().optional(),
        tokensPerDay: quotas.tokensPerDay.nullable().optional(),
        storageBytes: quotas.storageBytes.nullable().optional(),
        toolCalls: quotas.toolCalls.nullable().optional(),
      })
      .strict()
      .nullable()
      .optional()
      .openapi({
        description: "Overrides of the deployment's quotas (FOYA_QUOTA_*), merged like limits: a value sets a key, null removes it.",
      }),
  })
  .strict()
  .openapi("TenantUpdate");

export const TenantSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: z.string(),
    fullAccess: z.boolean().openapi({ description: "The operator's Full Access grant for this tenant." }),
    limits: ProcessLimitsSchema.partial().openapi({ description: "The operator's overrides for this tenant." }),
    effectiveLimits: ProcessLimitsSchema.openapi({
      description: "What each tool call of the tenant runs under: the deployment's limits with the overrides on top.",
    }),
    quotas: QuotasSchema.partial().openapi({ description: "The operator's quota overrides for this tenant." }),
    effectiveQuotas: QuotasSchema.openapi({ description: "The tenant's quotas: the deployment's with the overrides on top." }),
    toolUid: z.number().int().openapi({ description: "Host uid and gid of the tenant's tool processes." }),
  })
  .openapi("Tenant");

export const ProjectCreateSchema = z.object({ name: text().min(1).max(200) }).openapi("ProjectCreate");
export const ProjectSchema = z.object({ id: z.string(), name: z.string(), createdAt: z.string() }).openapi("Project");

const approvalModes = ["manual", "auto", "full_access"] as const;
const runModes = ["normal", "read_only"] as const;

const onInterruptedChoices = ["end", "continue"] as const;
const onInterruptedField = () =>
  z.enum(onInterruptedChoices).openapi({
    description:
      'What a run does when a tool call of it is interrupted by a worker\'s death (SPEC D10): "end" ends the run `interrupted`; "continue" gives the call an honest tool message (outcome unknown, may have partly run, never run again) and goes on with the next model step, at most FOYA_MAX_CONTINUED_INTERRUPTIONS times per run.',
  });

export const SessionCreateSchema = z
  .object({
    projectId: foyaId(),
    approvalMode: z.enum(approvalModes).default("auto"),
    providerProfile: text().min(1).max(200).optional(),
    model: text().min(1).max(200).optional(),
    toolAllowList: z.array(text().min(1)).max(1000).nullable().optional(),
    runMode: z.enum(runModes).default("normal"),
    systemPrompt: text().max(100_000).optional(),
    onInterrupted: onInterruptedField().default("end"),
  })
  .strict()
  .openapi("SessionCreate");

export const SessionSchema = z
  .object({
    id: z.string(),
    projectId: z.string(),
    approvalMode: z.enum(approvalModes),
    providerProfile: z.string(),
    model: z.string().nullable(),
    toolAllowList: z.array(z.string()).nullable(),
    runMode: z.enum(runModes),
    onInterrupted: z.enum(onInterruptedChoices).openapi({ description: "The default of the session's runs (SPEC D10)." }),
    activeRunId: z.string().nullable(),
    lastEventSeq: z.number().int().openapi({
      description:
        "Sequence number of the session's latest event (0 before any): stream with `after` set to it to see only what comes next, such as a run started after reading it.",
    }),
    parent: z.object({ sessionId: z.string().nullable(), runId: z.string(), callId: z.string().nullable() }).nullable().openapi({
      description: "A sub-agent's session: the session, run and `agent` call that started it (SPEC A1); null for a client's session.",
    }),
    depth: z.number().int().openapi({ description: "Sub-agent levels above this session; 0 for a session a client created." }),
    tasks: z.array(z.object({ title: z.string(), status: z.enum(["pending", "in_progress", "done"]) })),
    forkedFrom: z
      .object({
        sessionId: z.string(),
        at: z.object({ runOrdinal: z.number().int(), stepIndex: z.number().int().nullable() }),
        checkpointId: z.string().nullable(),
      })
      .nullable()
      .openapi({ description: "A fork's source session and the point of its history it was copied at (SPEC W2)." }),
    deleted: z.boolean(),
    createdAt: z.string(),
  })
  .openapi("Session");

export const RunCreateSchema = z
  .object({
    input: text().min(1).max(1_000_000),
    ifActive: z.enum(["reject", "enqueue", "interrupt"]).default("reject").openapi({
      description: "What to do when the session already has an active run (SPEC X6).",
    }),
    onInterrupted: onInterruptedField()
      .optional()
      .openapi({ description: "This run's own choice (SPEC D10); the session's `onInterrupted` when absent." }),
  })
  .strict()
  .openapi("RunCreate");

const tokenCount = (description: string) => z.number().int().nonnegative().openapi({ description });

const ModelUsageSchema = z
  .object({
    inputTokens: tokenCount("Prompt tokens, cached ones included."),
    outputTokens: tokenCount("Tokens the model produced."),
    cacheReadTokens: tokenCount("Of the prompt tokens, those the provider read from its prompt cache (SPEC PR4)."),
    cacheWriteTokens: tokenCount("Of the prompt tokens, those the provider wrote to its prompt cache (Anthropic reports them)."),
  })
  .openapi("ModelUsage");

export const RunSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    status: z.enum(runStatuses),
    ordinal: z.number().nullable(),
    stepIndex: z.number(),
    onInterrupted: z.enum(onInterruptedChoices),
    interruptions: z.number().int().openapi({ description: "How often the run carried on after an interrupted call (SPEC D10)." }),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    branchId: z
      .string()
      .nullable()
      .openapi({ description: "Set when a rewind set this run aside (SPEC W2): it is out of the session's history, in that branch." }),
    usage: ModelUsageSchema.openapi({ description: "Model tokens of the run's steps, summed (the last attempt of each step)." }),
    createdAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .openapi("Run");

export const MessageSchema = z
  .object({
    id: z.string(),
    runId: z.string(),
    role: z.enum(["user", "assistant", "tool"]),
    content: z.record(z.string(), z.unknown()),
    createdAt: z.string(),
  })
  .openapi("Message");

const EventSchema = z
  .object({
    seq: z.number(),
    sessionId: z.string(),
    runId: z.string(),
    step: z.object({ index: z.number(), attempt: z.number() }).nullable(),
    type: z.string(),
    data: z.record(z.string(), z.unknown()),
    at: z.string(),
  })
  .openapi("Event");

export const EventsPageSchema = z.object({ events: z.array(EventSchema), next: z.number() }).openapi("EventsPage");

export const ToolInfoSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()),
    exposure: z.enum(["direct", "deferred", "hidden", "contextual"]),
    sideEffect: z.enum(["read", "write", "exec", "network", "other"]),
    exposedNow: z.boolean(),
  })
  .openapi("ToolInfo");

/** An http(s) URL the service will call (webhooks, MCP servers); credentials in the URL are refused (fetch cannot send them). */
export const httpUrl = () =>
  z
    .string()
    .max(2048)
    .refine((value) => {
      if (!URL.canParse(value)) return false;
      const url = new URL(value);
      return (url.protocol === "http:" || url.protocol === "https:") && url.username === "" && url.password === "";
    }, "must be an http:// or https:// URL without credentials");

export const WebhookCreateSchema = z
  .object({
    url: httpUrl(),
    eventTypes: z
      .array(z.enum(webhookSubscriptionTypes))
      .min(1)
      .max(20)
      .openapi({ description: `Event types to deliver: ${webhookEventTypes.join(", ")}, or "*" for all of them.` }),
    description: text().max(500).optional(),
  })
  .strict()
  .openapi("WebhookCreate");

export const WebhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    eventTypes: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
  })
  .openapi("Webhook");

export const WebhookCreatedSchema = z
  .object({
    webhook: WebhookSchema,
    secret: z.string().openapi({ description: "Standard Webhooks signing secret (whsec_...). Shown once; store it now." }),
  })
  .openapi("WebhookCreated");

const WebhookAttemptSchema = z
  .object({
    id: z.string(),
    attempt: z.number(),
    statusCode: z.number().nullable(),
    error: z.string().nullable(),
    durationMs: z.number(),
    at: z.string().openapi({ description: "When the attempt started" }),
  })
  .openapi("WebhookAttempt");

export const WebhookDeliverySchema = z
  .object({
    id: z.string().openapi({ description: "The webhook-id header of every attempt" }),
    eventType: z.string(),
    sessionId: z.string(),
    eventSeq: z.number(),
    status: z.enum(["pending", "delivered", "failed"]),
    payload: z.record(z.string(), z.unknown()),
    attempts: z.array(WebhookAttemptSchema),
    createdAt: z.string(),
    deliveredAt: z.string().nullable(),
  })
  .openapi("WebhookDelivery");
