import type { TenantQuotas } from "./core/tenant-quotas.js";
import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defaultProcessLimits, type ProcessLimits } from "./core/process-limits.js";

/**
 * The only reader of `process.env`. Everything else receives a frozen `Config`
 * from the composition root, so tests can build as many isolated services as
 * they like inside one process.
 */

const capabilitiesSchema = z.object({
  imageInput: z.boolean().default(false),
  parallelToolCalls: z.boolean().default(true),
  contextWindow: z.number().int().positive().default(128_000),
});

const providerProfileSchema = z.discriminatedUnion("kind", [
  z.object({
    name: z.string().min(1),
    kind: z.literal("scripted"),
    model: z.string().default("scripted"),
    capabilities: capabilitiesSchema.default({ imageInput: false, parallelToolCalls: true, contextWindow: 128_000 }),
  }),
  z.object({
    name: z.string().min(1),
    kind: z.literal("openai-chat"),
    baseUrl: z.url(),
    model: z.string().min(1),
    /** Name of the environment variable holding the key; resolved here, never sent by tenants. */
    apiKeyEnv: z.string().optional(),
    apiKey: z.string().optional(),
    timeoutMs: z.number().int().positive().default(120_000),
    capabilities: capabilitiesSchema.default({ imageInput: false, parallelToolCalls: true, contextWindow: 128_000 }),
  }),
  z.object({
    name: z.string().min(1),
    kind: z.literal("anthropic-messages"),
    /** Without the version prefix, e.g. `https://api.anthropic.com`; the adapter adds `/v1/messages`. */
    baseUrl: z.url(),
    model: z.string().min(1),
    apiKeyEnv: z.string().optional(),
    apiKey: z.string().optional(),
    /** The Messages API requires an output limit on every request. */
    maxTokens: z.number().int().positive().default(8192),
    timeoutMs: z.number().int().positive().default(120_000),
    capabilities: capabilitiesSchema.default({ imageInput: false, parallelToolCalls: true, contextWindow: 128_000 }),
  }),
]);

export type ProviderProfileConfig = z.infer<typeof providerProfileSchema>;

const providersFileSchema = z.object({ profiles: z.array(providerProfileSchema) });

const intFromEnv = (fallback: number) => z.coerce.number().int().nonnegative().default(fallback);
const positiveIntFromEnv = (fallback: number) => z.coerce.number().int().positive().default(fallback);
/** A setting with a floor below which the service cannot work: a value under it is refused, never raised in silence. */
const intAtLeast = (min: number, fallback: number) => z.coerce.number().int().min(min, `must be at least ${min}`).default(fallback);

/**
 * Tenant tool uids are `FOYA_TOOL_UID_BASE + slot`, and slots (`tenants.tool_uid_slot`) stop at
 * this many (the identity column's maximum), so the whole range must fit below the largest uid.
 */
const toolUidSlotCount = 100_000_000;
/**
 * Every tool uid must stay below 2^31: bubblewrap cannot map a larger uid into the sandbox's user
 * namespace ("setting up uid map: Invalid argument", measured with bwrap 0.8 on this host), and
 * 2^32 - 1 is (uid_t)-1, "no uid" to the kernel, anyway.
 */
const largestUidPlusOne = 2 ** 31;
/** Below this are the host's own system and login accounts. */
const smallestToolUidBase = 1000;

export const envSchema = z.object({
  DATABASE_URL: z.string().default("postgres://postgres@127.0.0.1:5432/postgres"),
  REDIS_URL: z.string().default("redis://127.0.0.1:6379"),
  FOYA_HOST: z.string().default("127.0.0.1"),
  PORT: intFromEnv(8787),
  FOYA_ADMIN_TOKEN: z.string().optional(),
  FOYA_CONSOLE_DIR: z.string().min(1).optional(),
  FOYA_STREAM_TOKEN_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  FOYA_QUEUE_PREFIX: z.string().default("foya"),
  FOYA_WORKSPACES_DIR: z.string().default(".data/workspaces"),
  FOYA_PROVIDERS_FILE: z.string().optional(),
  FOYA_DEFAULT_PROVIDER: z.string().default("scripted"),
  FOYA_OPENAI_BASE_URL: z.string().optional(),
  FOYA_OPENAI_MODEL: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  FOYA_STEP_CONCURRENCY: intAtLeast(1, 64),
  FOYA_TOOL_CONCURRENCY: intAtLeast(1, 64),
  FOYA_LEASE_MS: intAtLeast(500, 30_000),
  FOYA_STALLED_INTERVAL_MS: intAtLeast(200, 15_000),
  FOYA_SWEEP_INTERVAL_MS: intAtLeast(100, 5_000),
  FOYA_SWEEP_GRACE_MS: intFromEnv(10_000),
  FOYA_LIVENESS_INTERVAL_MS: positiveIntFromEnv(1_000),
  FOYA_LIVENESS_TIMEOUT_MS: positiveIntFromEnv(3_000),
  FOYA_MAX_CONTINUED_INTERRUPTIONS: intFromEnv(3),
  FOYA_STEP_ATTEMPTS: intAtLeast(1, 3),
  FOYA_MAX_STEPS_PER_RUN: intAtLeast(1, 100),
  FOYA_SHUTDOWN_GRACE_MS: intFromEnv(10_000),
  FOYA_SSE_KEEPALIVE_MS: intAtLeast(100, 15_000),
  FOYA_API_MAX_BODY_BYTES: positiveIntFromEnv(1024 * 1024),
  FOYA_API_MAX_INPUT_BODY_BYTES: positiveIntFromEnv(8 * 1024 * 1024),
  FOYA_API_RATE_LIMIT: intFromEnv(1000),
  FOYA_API_RATE_WINDOW_MS: positiveIntFromEnv(10_000),
  FOYA_API_AUTH_FAILURE_LIMIT: intFromEnv(20),
  FOYA_API_AUTH_FAILURE_WINDOW_MS: positiveIntFromEnv(300_000),
  FOYA_API_TRUST_PROXY_HOPS: intFromEnv(0),
  FOYA_API_MAX_STREAMS_PER_TENANT: intFromEnv(64),
  FOYA_TOOL_MODULES: z.string().optional(),
  FOYA_FAILPOINTS: z.string().optional(),
  FOYA_MIGRATE_ON_START: z.enum(["true", "false"]).default("true"),
  FOYA_WORKER_HEARTBEAT_FILE: z.string().min(1).optional(),
  PATH: z.string().default("/usr/local/bin:/usr/bin:/bin"),
  FOYA_TOOL_PATH: z.string().optional(),
  FOYA_BWRAP_PATH: z.string().min(1).default("bwrap"),
  FOYA_SLIRP4NETNS_PATH: z.string().min(1).default("slirp4netns"),
  FOYA_SANDBOX_HIDE: z.string().optional(),
  FOYA_SANDBOX_READONLY: z.string().optional(),
  FOYA_WEB_FETCH_ALLOW_PRIVATE: z.enum(["true", "false"]).default("false"),
  FOYA_APPROVAL_TTL_SECONDS: intAtLeast(1, 86_400),
  FOYA_CONTEXT_RESULT_MAX_CHARS: intFromEnv(0),
  FOYA_MCP_STDIO_COMMANDS: z.string().optional(),
  FOYA_MCP_ALLOW_PRIVATE: z.enum(["true", "false"]).default("false"),
  FOYA_MCP_CONFIG_TTL_MS: intFromEnv(5_000),
  FOYA_MCP_SANDBOX: z.enum(["true", "false"]).default("true"),
  FOYA_MCP_REQUEST_TIMEOUT_MS: positiveIntFromEnv(60_000),
  FOYA_MCP_REQUEST_PICKUP_MS: positiveIntFromEnv(5_000),
  FOYA_MCP_REQUEST_CONCURRENCY: positiveIntFromEnv(4),
  FOYA_AGENT_MAX_DEPTH: intFromEnv(2),
  FOYA_ALLOW_FULL_ACCESS: z.enum(["true", "false"]).default("false"),
  FOYA_TOOL_UID_BASE: intFromEnv(1_000_000_000),
  FOYA_TOOL_MEMORY_BYTES: positiveIntFromEnv(defaultProcessLimits.memoryBytes),
  FOYA_TOOL_PROCESSES: positiveIntFromEnv(defaultProcessLimits.processes),
  FOYA_TOOL_CPU_SECONDS: positiveIntFromEnv(defaultProcessLimits.cpuSeconds),
  FOYA_TOOL_FILE_BYTES: positiveIntFromEnv(defaultProcessLimits.fileSizeBytes),
  FOYA_TOOL_WALL_SECONDS: positiveIntFromEnv(defaultProcessLimits.wallSeconds),
  FOYA_TOOL_TMP_BYTES: positiveIntFromEnv(defaultProcessLimits.tmpBytes),
  FOYA_TOOL_BACKGROUND_COMMANDS: positiveIntFromEnv(defaultProcessLimits.backgroundCommands),
  FOYA_QUOTA_ACTIVE_RUNS: positiveIntFromEnv(32),
  FOYA_QUOTA_QUEUED_RUNS: positiveIntFromEnv(1000),
  FOYA_QUOTA_TOKENS_PER_DAY: intFromEnv(0),
  FOYA_QUOTA_STORAGE_BYTES: intFromEnv(0),
  FOYA_QUOTA_TOOL_CALLS: intFromEnv(0),
  FOYA_TOOL_BACKGROUND_SECONDS: positiveIntFromEnv(defaultProcessLimits.backgroundSeconds),
  FOYA_WEBHOOK_POLL_MS: intAtLeast(50, 500),
  FOYA_WEBHOOK_ATTEMPTS: intAtLeast(1, 8),
  FOYA_WEBHOOK_BACKOFF_MS: intAtLeast(10, 2_000),
  FOYA_WEBHOOK_TIMEOUT_MS: intAtLeast(100, 10_000),
  FOYA_WEBHOOK_STALE_MS: intAtLeast(500, 60_000),
  FOYA_WEBHOOK_RETENTION_DAYS: intFromEnv(30),
  FOYA_TRASH_RETENTION_DAYS: intFromEnv(30),
  FOYA_RECORD_FULL_ACCESS_SHELL: z.enum(["true", "false"]).default("false"),
  FOYA_WEBHOOK_CONCURRENCY: intAtLeast(1, 16),
  FOYA_WEBHOOK_ALLOW_PRIVATE: z.enum(["true", "false"]).default("false"),
  FOYA_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  FOYA_METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  FOYA_METRICS_HOST: z.string().default("127.0.0.1"),
  FOYA_METRICS_TENANT_LABELS: intFromEnv(50),
  FOYA_OTLP_TRACES_URL: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/**
 * What one client may ask of the API (SPEC S10). Counters live in Redis under the queue
 * prefix, so every API instance of a deployment shares them; 0 turns a count limit off.
 */
export interface ApiLimits {
  /** Largest request body of most routes, bytes (FOYA_API_MAX_BODY_BYTES, 1 MiB); larger answers 413. */
  readonly maxBodyBytes: number;
  /**
   * Largest body of the routes that carry user or model content, bytes: POST /v1/sessions/{id}/runs
   * and POST /v1/approvals/{id} with edited arguments (FOYA_API_MAX_INPUT_BODY_BYTES, 8 MiB).
   */
  readonly maxInputBodyBytes: number;
  /** Requests per API key per window (FOYA_API_RATE_LIMIT, 1000); more answer 429 with Retry-After. */
  readonly rateLimit: number;
  /** The rate limit's fixed window (FOYA_API_RATE_WINDOW_MS, 10 s). */
  readonly rateWindowMs: number;
  /**
   * Failed authentications (an unknown or revoked key, a wrong admin token) per client address
   * per window (FOYA_API_AUTH_FAILURE_LIMIT, 20); past it, that address gets 429 for the rest of
   * the window, whatever key it sends, so keys cannot be guessed.
   */
  readonly authFailureLimit: number;
  /** The failed-authentication window (FOYA_API_AUTH_FAILURE_WINDOW_MS, 5 min). */
  readonly authFailureWindowMs: number;
  /**
   * Reverse proxies in front of the API (FOYA_API_TRUST_PROXY_HOPS, 0): with n, the client address
   * is the n-th X-Forwarded-For entry from the right; with 0 it is the socket's peer and
   * X-Forwarded-For is ignored (a client could forge it).
   */
  readonly trustProxyHops: number;
  /** Open SSE streams per tenant across all API instances (FOYA_API_MAX_STREAMS_PER_TENANT, 64); one more answers 429. */
  readonly maxStreamsPerTenant: number;
}

export interface Config {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly host: string;
  readonly port: number;
  /** Bearer token for tenant administration; when absent, admin routes answer 403. */
  readonly adminToken: string | undefined;
  /**
   * Signs the short-lived event-stream tokens a browser puts in a URL instead of its API key
   * (POST /v1/sessions/{id}/stream-tokens). FOYA_STREAM_TOKEN_SECRET; without it, derived from
   * FOYA_ADMIN_TOKEN; without either, random per process, and then a token minted by one API
   * instance is refused by another: deployments with several API instances set one of the two.
   */
  readonly streamTokenSecret: string;
  /**
   * The web console's build (FOYA_CONSOLE_DIR, default packages/console/dist of this checkout,
   * made by `npm run console:build`), served at /console when it holds an index.html.
   */
  readonly consoleDir: string;
  /** BullMQ key prefix and Redis channel prefix; tests use one per file. */
  readonly queuePrefix: string;
  readonly workspacesDir: string;
  readonly providerProfiles: readonly ProviderProfileConfig[];
  readonly defaultProvider: string;
  readonly stepConcurrency: number;
  readonly toolConcurrency: number;
  /** How long a worker's claim on a run lasts without renewal; also the BullMQ lock duration. */
  readonly leaseMs: number;
  readonly stalledIntervalMs: number;
  readonly sweepIntervalMs: number;
  /** Work without a live lease older than this is re-dispatched by the sweeper. */
  readonly sweepGraceMs: number;
  /** How often a worker renews its liveness record (SPEC D9); sweepers look for dead workers as often. */
  readonly livenessIntervalMs: number;
  /** A worker whose record is older than this is taken for dead and its work taken over (D9). */
  readonly livenessTimeoutMs: number;
  /** How often a run with `onInterrupted: "continue"` may go on after interrupted calls before it ends `interrupted` (D10). */
  readonly maxContinuedInterruptions: number;
  readonly stepAttempts: number;
  readonly maxStepsPerRun: number;
  readonly shutdownGraceMs: number;
  /**
   * SSE comment interval. Each interval one query per API process also reads the latest sequence
   * number of every session with an open stream, and a stream that is behind (a pub/sub message
   * was lost) reads the log; an open stream renews its slot (apiLimits.maxStreamsPerTenant) too.
   */
  readonly sseKeepaliveMs: number;
  /** Body sizes, rate limits, failed-authentication lockout and SSE caps of the API (SPEC S10). */
  readonly apiLimits: ApiLimits;
  /** Extra tool modules (absolute or cwd-relative paths) loaded into the registry. */
  readonly toolModules: readonly string[];
  /** Named fault-injection points, used by crash tests. */
  readonly failpoints: ReadonlySet<string>;
  readonly migrateOnStart: boolean;
  /**
   * A file a worker rewrites every second once it serves, for container health checks
   * (`src/health/worker-healthcheck.ts`); unset writes none.
   */
  readonly workerHeartbeatFile: string | undefined;
  /** PATH given to processes tools start; their environment holds nothing else of the service's. */
  readonly toolPath: string;
  /** bubblewrap for the sandbox (SPEC S3): a path, or a name looked up on the tool PATH. */
  readonly bwrapPath: string;
  /** slirp4netns, which connects a network-granted sandbox to the outside (SPEC S3): a path, or a name looked up on the tool PATH. */
  readonly slirp4netnsPath: string;
  /** Extra host paths the sandbox hides, beyond the service's files, other workspaces and known secrets. */
  readonly sandboxHiddenPaths: readonly string[];
  /** Extra host trees the sandbox shows read-only (a toolchain outside /usr and /opt). */
  readonly sandboxReadOnlyPaths: readonly string[];
  /** Lets web_fetch reach loopback and private addresses (tests, trusted deployments). */
  readonly webFetchAllowPrivate: boolean;
  /** How long a pending approval waits before it expires (counts as denied), unless the tenant's or project's policy says otherwise. */
  readonly approvalTtlSeconds: number;
  /** Tool results longer than this are projected in requests (O2); 0 scales with the model's context window. */
  readonly contextResultMaxChars: number;
  /**
   * Commands tenants may configure as stdio MCP servers (absolute paths). A stdio server runs a
   * program on the service's hosts, so none is allowed unless an operator names it.
   */
  readonly mcpStdioCommands: readonly string[];
  /** Lets tenants point HTTP MCP servers at loopback and private addresses (tests, trusted deployments). */
  readonly mcpAllowPrivate: boolean;
  /** Stdio MCP servers run under the bubblewrap sandbox (default); false runs them unconfined, with only their configured environment. */
  readonly mcpSandbox: boolean;
  /** How long a worker reuses a project's MCP server configurations before reading them again. */
  readonly mcpConfigTtlMs: number;
  /**
   * How long the API waits for a worker to answer an MCP request (a listing, a resource, a
   * prompt: the API starts no MCP server itself); then it answers 504 `mcp_timeout`.
   */
  readonly mcpRequestTimeoutMs: number;
  /** A request no worker has taken within this long (at most the timeout) is withdrawn and answered 503 `no_worker`. */
  readonly mcpRequestPickupMs: number;
  /** MCP requests one worker serves at once (queue `mcp-requests`). */
  readonly mcpRequestConcurrency: number;
  /** Sessions this many sub-agent levels down cannot start sub-agents (SPEC A1); 0 turns the agent tool off. */
  readonly agentMaxDepth: number;
  /**
   * The deployment allows Full Access sessions at all (SPEC S8; default false). A tenant also
   * needs the operator's per-tenant grant (`tenants.full_access`); see src/tenants/tenant-settings.ts.
   */
  readonly fullAccessAllowed: boolean;
  /**
   * Tenant n (its `tenants.tool_uid_slot`) runs its tool processes as host uid and gid
   * `toolUidBase + n` (SPEC S7): never root, never another tenant's. At least 1000, and
   * `toolUidBase + 100,000,000` stays below 2^31 (what bubblewrap can map).
   */
  readonly toolUidBase: number;
  /** Per-call process limits of every tenant (SPEC S7); an operator may override them per tenant. */
  readonly toolLimits: Readonly<ProcessLimits>;
  /** What each tenant may use of the deployment (SPEC X5); an operator may override them per tenant. */
  readonly quotas: Readonly<TenantQuotas>;
  /** How often each worker moves new webhook deliveries from the outbox table to the queue. */
  readonly webhookPollMs: number;
  /** HTTP attempts per delivery, the first included; then it is marked failed. */
  readonly webhookAttempts: number;
  /** First retry delay; each later one doubles (BullMQ exponential backoff). */
  readonly webhookBackoffMs: number;
  readonly webhookTimeoutMs: number;
  /** A pending delivery enqueued this long ago is checked for a lost job and enqueued again. */
  readonly webhookStaleMs: number;
  /** Finished deliveries (and their attempts) older than this are deleted by the sweeper; 0 keeps them forever. */
  readonly webhookRetentionDays: number;
  /** Entries of a project's trash older than this are deleted for good by the sweeper; 0 keeps them (SPEC F4). */
  readonly trashRetentionDays: number;
  /**
   * Records what foreground `bash` calls change in the workspace in Full Access too (SPEC X7;
   * outside Full Access they always are, on a root worker). Changes outside the workspace,
   * which Full Access can make, are never recorded.
   */
  readonly recordFullAccessShell: boolean;
  readonly webhookConcurrency: number;
  /** Lets webhooks target loopback and private addresses (tests, trusted deployments). */
  readonly webhookAllowPrivate: boolean;
  readonly logLevel: string;
  /** SPEC X8: where `/metrics` is served and what it may show; traces' endpoint, if any. */
  readonly observability: {
    /** Bearer token for the API's `GET /metrics`; without it (and without a port) the route answers 404. */
    readonly metricsToken: string | undefined;
    /** A port of its own serving `/metrics` without a token, in every process role. */
    readonly metricsPort: number | undefined;
    readonly metricsHost: string;
    /** Tenants that get series of their own; later ones are counted as `other`. */
    readonly metricsTenantLabels: number;
    /** OTLP/HTTP traces endpoint; traces are off without it. */
    readonly otlpTracesUrl: string | undefined;
  };
}

/** A comma-separated list of paths, each made absolute. */
const pathList = (value: string | undefined): readonly string[] =>
  Object.freeze(
    (value ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((p) => path.resolve(p)),
  );

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`invalid configuration: ${z.prettifyError(parsed.error)}`);
  }
  const e = parsed.data;
  const profiles: ProviderProfileConfig[] = [providerProfileSchema.parse({ name: "scripted", kind: "scripted" })];
  if (e.FOYA_PROVIDERS_FILE) {
    const file = providersFileSchema.parse(JSON.parse(readFileSync(e.FOYA_PROVIDERS_FILE, "utf8")));
    for (const profile of file.profiles) {
      if ((profile.kind === "openai-chat" || profile.kind === "anthropic-messages") && profile.apiKeyEnv && !profile.apiKey) {
        profile.apiKey = env[profile.apiKeyEnv];
      }
      profiles.push(profile);
    }
  }
  if (e.FOYA_OPENAI_BASE_URL) {
    profiles.push(
      providerProfileSchema.parse({
        name: "openai",
        kind: "openai-chat",
        baseUrl: e.FOYA_OPENAI_BASE_URL,
        model: e.FOYA_OPENAI_MODEL ?? "gpt-4o-mini",
        apiKey: e.OPENAI_API_KEY,
      }),
    );
  }
  const names = new Set<string>();
  for (const profile of profiles) {
    if (names.has(profile.name)) throw new Error(`invalid configuration: provider profile "${profile.name}" defined twice`);
    names.add(profile.name);
  }
  if (!names.has(e.FOYA_DEFAULT_PROVIDER)) {
    throw new Error(`invalid configuration: FOYA_DEFAULT_PROVIDER "${e.FOYA_DEFAULT_PROVIDER}" is not a profile`);
  }
  if (e.FOYA_LIVENESS_TIMEOUT_MS < 2 * e.FOYA_LIVENESS_INTERVAL_MS) {
    throw new Error(
      `invalid configuration: FOYA_LIVENESS_TIMEOUT_MS ${e.FOYA_LIVENESS_TIMEOUT_MS} must be at least twice FOYA_LIVENESS_INTERVAL_MS ${e.FOYA_LIVENESS_INTERVAL_MS}, or a worker that misses one renewal is taken for dead`,
    );
  }
  if (e.FOYA_TOOL_UID_BASE < smallestToolUidBase || e.FOYA_TOOL_UID_BASE + toolUidSlotCount >= largestUidPlusOne) {
    throw new Error(
      `invalid configuration: FOYA_TOOL_UID_BASE ${e.FOYA_TOOL_UID_BASE} must be at least ${smallestToolUidBase} and leave room for ${toolUidSlotCount} tenant uids below ${largestUidPlusOne}`,
    );
  }
  return Object.freeze({
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    host: e.FOYA_HOST,
    port: e.PORT,
    adminToken: e.FOYA_ADMIN_TOKEN,
    streamTokenSecret:
      e.FOYA_STREAM_TOKEN_SECRET ??
      (e.FOYA_ADMIN_TOKEN
        ? createHmac("sha256", e.FOYA_ADMIN_TOKEN).update("foya stream tokens").digest("hex")
        : randomBytes(32).toString("hex")),
    // src/config.ts and dist/config.js both sit one level below the checkout's root.
    consoleDir: path.resolve(e.FOYA_CONSOLE_DIR ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "../packages/console/dist")),
    queuePrefix: e.FOYA_QUEUE_PREFIX,
    workspacesDir: path.resolve(e.FOYA_WORKSPACES_DIR),
    providerProfiles: Object.freeze(profiles),
    defaultProvider: e.FOYA_DEFAULT_PROVIDER,
    stepConcurrency: e.FOYA_STEP_CONCURRENCY,
    toolConcurrency: e.FOYA_TOOL_CONCURRENCY,
    leaseMs: e.FOYA_LEASE_MS,
    stalledIntervalMs: e.FOYA_STALLED_INTERVAL_MS,
    sweepIntervalMs: e.FOYA_SWEEP_INTERVAL_MS,
    sweepGraceMs: e.FOYA_SWEEP_GRACE_MS,
    livenessIntervalMs: e.FOYA_LIVENESS_INTERVAL_MS,
    livenessTimeoutMs: e.FOYA_LIVENESS_TIMEOUT_MS,
    maxContinuedInterruptions: e.FOYA_MAX_CONTINUED_INTERRUPTIONS,
    stepAttempts: e.FOYA_STEP_ATTEMPTS,
    maxStepsPerRun: e.FOYA_MAX_STEPS_PER_RUN,
    shutdownGraceMs: e.FOYA_SHUTDOWN_GRACE_MS,
    sseKeepaliveMs: e.FOYA_SSE_KEEPALIVE_MS,
    apiLimits: Object.freeze({
      maxBodyBytes: e.FOYA_API_MAX_BODY_BYTES,
      maxInputBodyBytes: Math.max(e.FOYA_API_MAX_BODY_BYTES, e.FOYA_API_MAX_INPUT_BODY_BYTES),
      rateLimit: e.FOYA_API_RATE_LIMIT,
      rateWindowMs: e.FOYA_API_RATE_WINDOW_MS,
      authFailureLimit: e.FOYA_API_AUTH_FAILURE_LIMIT,
      authFailureWindowMs: e.FOYA_API_AUTH_FAILURE_WINDOW_MS,
      trustProxyHops: e.FOYA_API_TRUST_PROXY_HOPS,
      maxStreamsPerTenant: e.FOYA_API_MAX_STREAMS_PER_TENANT,
    }),
    toolModules: Object.freeze(
      (e.FOYA_TOOL_MODULES ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
        .map((p) => path.resolve(p)),
    ),
    failpoints: new Set(
      (e.FOYA_FAILPOINTS ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    migrateOnStart: e.FOYA_MIGRATE_ON_START === "true",
    workerHeartbeatFile: e.FOYA_WORKER_HEARTBEAT_FILE === undefined ? undefined : path.resolve(e.FOYA_WORKER_HEARTBEAT_FILE),
    toolPath: e.FOYA_TOOL_PATH ?? e.PATH,
    bwrapPath: e.FOYA_BWRAP_PATH,
    slirp4netnsPath: e.FOYA_SLIRP4NETNS_PATH,
    sandboxHiddenPaths: pathList(e.FOYA_SANDBOX_HIDE),
    sandboxReadOnlyPaths: pathList(e.FOYA_SANDBOX_READONLY),
    webFetchAllowPrivate: e.FOYA_WEB_FETCH_ALLOW_PRIVATE === "true",
    approvalTtlSeconds: e.FOYA_APPROVAL_TTL_SECONDS,
    contextResultMaxChars: e.FOYA_CONTEXT_RESULT_MAX_CHARS,
    mcpStdioCommands: Object.freeze(
      (e.FOYA_MCP_STDIO_COMMANDS ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    mcpAllowPrivate: e.FOYA_MCP_ALLOW_PRIVATE === "true",
    mcpSandbox: e.FOYA_MCP_SANDBOX === "true",
    mcpConfigTtlMs: e.FOYA_MCP_CONFIG_TTL_MS,
    mcpRequestTimeoutMs: e.FOYA_MCP_REQUEST_TIMEOUT_MS,
    mcpRequestPickupMs: Math.min(e.FOYA_MCP_REQUEST_PICKUP_MS, e.FOYA_MCP_REQUEST_TIMEOUT_MS),
    mcpRequestConcurrency: e.FOYA_MCP_REQUEST_CONCURRENCY,
    agentMaxDepth: e.FOYA_AGENT_MAX_DEPTH,
    fullAccessAllowed: e.FOYA_ALLOW_FULL_ACCESS === "true",
    toolUidBase: e.FOYA_TOOL_UID_BASE,
    toolLimits: Object.freeze({
      memoryBytes: e.FOYA_TOOL_MEMORY_BYTES,
      processes: e.FOYA_TOOL_PROCESSES,
      cpuSeconds: e.FOYA_TOOL_CPU_SECONDS,
      fileSizeBytes: e.FOYA_TOOL_FILE_BYTES,
      wallSeconds: e.FOYA_TOOL_WALL_SECONDS,
      tmpBytes: e.FOYA_TOOL_TMP_BYTES,
      backgroundCommands: e.FOYA_TOOL_BACKGROUND_COMMANDS,
      backgroundSeconds: e.FOYA_TOOL_BACKGROUND_SECONDS,
    }),
    quotas: Object.freeze({
      activeRuns: e.FOYA_QUOTA_ACTIVE_RUNS,
      queuedRuns: e.FOYA_QUOTA_QUEUED_RUNS,
      tokensPerDay: e.FOYA_QUOTA_TOKENS_PER_DAY,
      storageBytes: e.FOYA_QUOTA_STORAGE_BYTES,
      toolCalls: e.FOYA_QUOTA_TOOL_CALLS,
    }),
    webhookPollMs: e.FOYA_WEBHOOK_POLL_MS,
    webhookAttempts: e.FOYA_WEBHOOK_ATTEMPTS,
    webhookBackoffMs: e.FOYA_WEBHOOK_BACKOFF_MS,
    webhookTimeoutMs: e.FOYA_WEBHOOK_TIMEOUT_MS,
    webhookStaleMs: e.FOYA_WEBHOOK_STALE_MS,
    webhookRetentionDays: e.FOYA_WEBHOOK_RETENTION_DAYS,
    trashRetentionDays: e.FOYA_TRASH_RETENTION_DAYS,
    recordFullAccessShell: e.FOYA_RECORD_FULL_ACCESS_SHELL === "true",
    webhookConcurrency: e.FOYA_WEBHOOK_CONCURRENCY,
    webhookAllowPrivate: e.FOYA_WEBHOOK_ALLOW_PRIVATE === "true",
    logLevel: e.LOG_LEVEL,
    observability: Object.freeze({
      metricsToken: e.FOYA_METRICS_TOKEN,
      metricsPort: e.FOYA_METRICS_PORT,
      metricsHost: e.FOYA_METRICS_HOST,
      metricsTenantLabels: e.FOYA_METRICS_TENANT_LABELS,
      otlpTracesUrl: e.FOYA_OTLP_TRACES_URL ?? e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    }),
  });
}
