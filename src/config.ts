import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defaultProcessLimits } from "./core/process-limits.js";
import { environmentNamePattern, forbiddenEnvironmentName, type McpStdioCommands } from "./core/mcp-stdio-commands.js";

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

/**
 * A provider profile's shared budget (SPEC PR3), counted in Redis across every worker. Each limit
 * counts over a sliding window of `windowMs`; 0 leaves that dimension unlimited. A step that
 * would pass one waits, holding no worker slot. Set it a little under the provider's own limits:
 * requests reach the provider a few milliseconds after they are counted.
 */
const providerBudgetSchema = z.object({
  requestsPerMinute: z.number().int().nonnegative().default(0),
  /** Estimated before the call (the request's characters at the ratio learned from reported usage), corrected after it. */
  inputTokensPerMinute: z.number().int().nonnegative().default(0),
  /** Reserved before the call at the profile's recent average, corrected with the reported usage. */
  outputTokensPerMinute: z.number().int().nonnegative().default(0),
  concurrentRequests: z.number().int().nonnegative().default(0),
  /** The window the per-minute limits count over: a minute, unless a test shortens it. */
  windowMs: z.number().int().min(1000).max(3_600_000).default(60_000),
});

export type ProviderBudgetConfig = z.infer<typeof providerBudgetSchema>;

/** What every kind of profile may say about load (SPEC PR3): its budget, its fallbacks, how long its steps wait out throttling. */
const loadFields = {
  budget: providerBudgetSchema.optional(),
  /** Profiles, in order, a step may move to while this one is paused or failing, before any output of the step reached a client. */
  fallbacks: z.array(z.string().min(1)).default([]),
  /** How long, in all, one step waits out 429 and overload answers of this profile before they count as failed attempts. */
  throttleWaitMs: z.number().int().nonnegative().default(600_000),
};

const providerProfileSchema = z.discriminatedUnion("kind", [
  z.object({
    name: z.string().min(1),
    kind: z.literal("scripted"),
    model: z.string().default("scripted"),
    capabilities: capabilitiesSchema.default({ imageInput: false, parallelToolCalls: true, contextWindow: 128_000 }),
    ...loadFields,
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
    ...loadFields,
  }),
  z
    .object({
      name: z.string().min(1),
      kind: z.literal("anthropic-messages"),
      /** Without the version prefix, e.g. `https://api.anthropic.com`; the adapter adds `/v1/messages`. */
      baseUrl: z.url(),
      model: z.string().min(1),
      apiKeyEnv: z.string().optional(),
      apiKey: z.string().optional(),
      /** The Messages API requires an output limit on every request. */
      maxTokens: z.number().int().positive().default(8192),
      /**
       * Extended thinking (SPEC PR5): each request asks for it with this budget, which the API wants
       * at least 1,024 and below `maxTokens`. Unset: the model does not think.
       */
      thinking: z
        .object({ budgetTokens: z.number().int().min(1024) })
        .strict()
        .optional(),
      timeoutMs: z.number().int().positive().default(120_000),
      capabilities: capabilitiesSchema.default({ imageInput: false, parallelToolCalls: true, contextWindow: 128_000 }),
      ...loadFields,
    })
    .refine((profile) => !profile.thinking || profile.thinking.budgetTokens < profile.maxTokens, {
      message: "thinking.budgetTokens must be below maxTokens",
      path: ["thinking", "budgetTokens"],
    }),
]);

export type ProviderProfileConfig = z.infer<typeof providerProfileSchema>;

const providersFileSchema = z.object({ profiles: z.array(providerProfileSchema) });

/**
 * Every setting is one leaf of `settingsSchema` below: the environment variables it is read from,
 * its default, the values it accepts and a `.describe()` sentence, in one place. loadConfig parses
 * the environment with it; `npm run docs:config` writes docs/configuration.md from it (and
 * test/config.unit.test.ts fails when the file differs). A value outside a setting's range is
 * refused with the variable, the value and the range, never clamped in silence.
 */
export interface SettingInfo {
  /** The environment variables the setting is read from; the first one set wins. */
  readonly env: readonly [string, ...string[]];
  /** The default as docs/configuration.md shows it. */
  readonly default: string;
  /** What values are accepted, as docs/configuration.md shows it and as errors say after "must be". */
  readonly allowed: string;
  /** The value is never repeated in an error message. */
  readonly secret?: boolean;
  /** The setting has no default: an empty value leaves it unset, as an absent one does. */
  readonly optional?: boolean;
}

const settingInfo = z.registry<SettingInfo>();

type EnvNames = string | readonly [string, ...string[]];

/** Node's timers fire at once for a delay above this; every duration in milliseconds stays at or below it. */
const maxTimerMs = 2 ** 31 - 1;
/** The same for durations set in seconds that become a timer. */
const maxTimerSeconds = Math.floor(maxTimerMs / 1000);
/** Counts that need no bound of their own stop at the largest 32-bit signed integer. */
const maxCount = 2 ** 31 - 1;
const maxBytes = Number.MAX_SAFE_INTEGER;
/** Retention periods, in days: at most a century. */
const maxDays = 36_500;
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

function setting<S extends z.ZodType>(schema: S, env: EnvNames, info: Omit<SettingInfo, "env">): S {
  settingInfo.add(schema, { ...info, env: typeof env === "string" ? [env] : env });
  return schema;
}

/** A string read by `parse`, which answers undefined for a value outside `allowed`. */
function fromText<T>(allowed: string, parse: (text: string) => T | undefined) {
  return z.string().transform((text, ctx): T => {
    const value = parse(text);
    if (value === undefined) {
      ctx.issues.push({ code: "custom", message: `must be ${allowed}`, input: text });
      return z.NEVER;
    }
    return value;
  });
}

const code = (value: string | number) => `\`${value}\``;

function byteSize(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return ` (${bytes / size} ${unit})`;
  }
  return "";
}

interface IntRange {
  min: number;
  max: number;
  /** `bytes` adds the size in KiB, MiB or GiB to the documented default. */
  unit?: "bytes";
  /** Why the range is what it is, when the description does not say it already. */
  why?: string;
}

const integerIn = ({ min, max, why }: IntRange) => {
  const allowed = `an integer from ${min} to ${max}${why ? ` (${why})` : ""}`;
  return {
    allowed,
    schema: fromText(allowed, (text) => {
      const value = /^\s*[+-]?\d+\s*$/.test(text) ? Number(text) : Number.NaN;
      return Number.isSafeInteger(value) && value >= min && value <= max ? value : undefined;
    }),
  };
};

const int = (env: EnvNames, fallback: number, range: IntRange) => {
  const { allowed, schema } = integerIn(range);
  return setting(schema.default(fallback), env, { default: code(fallback) + (range.unit === "bytes" ? byteSize(fallback) : ""), allowed });
};

const optionalInt = (env: EnvNames, range: IntRange, shown = "unset") => {
  const { allowed, schema } = integerIn(range);
  return setting(schema.optional(), env, { default: shown, allowed, optional: true });
};

const flag = (env: EnvNames, fallback: boolean) =>
  setting(fromText("`true` or `false`", (text) => (text === "true" ? true : text === "false" ? false : undefined)).default(fallback), env, {
    default: code(String(fallback)),
    allowed: "`true` or `false`",
  });

const choice = <const T extends readonly [string, ...string[]]>(env: EnvNames, values: T, fallback: T[number]) => {
  const allowed = `one of ${values.map(code).join(", ")}`;
  return setting(
    // (The generic T[number] is not seen to satisfy the default's type, NoUndefined<Awaited<T[number]>>.)
    fromText(allowed, (text) => values.find((value): value is T[number] => value === text)).default(fallback as never),
    env,
    { default: code(fallback), allowed },
  );
};

interface TextOptions {
  minLength?: number;
  secret?: boolean;
  /** The default as docs/configuration.md shows it, when it is not the value itself. */
  shown?: string;
}

const textIn = (minLength = 0) => {
  const allowed = minLength > 1 ? `at least ${minLength} characters` : minLength === 1 ? "a non-empty text" : "any text";
  return { allowed, schema: fromText(allowed, (text) => (text.length >= minLength ? text : undefined)) };
};

const text = (env: EnvNames, fallback: string, options: TextOptions = {}) => {
  const { allowed, schema } = textIn(options.minLength);
  return setting(schema.default(fallback), env, { default: options.shown ?? code(fallback), allowed, secret: options.secret });
};

const optionalText = (env: EnvNames, options: TextOptions = {}) => {
  const { allowed, schema } = textIn(options.minLength);
  return setting(schema.optional(), env, { default: options.shown ?? "unset", allowed, secret: options.secret, optional: true });
};

/** A host's id names its queue (`tools-<host>`): letters, digits, `.`, `_`, `-` (BullMQ refuses `:`). */
const hostIdPattern = /^[A-Za-z0-9._-]{1,64}$/;
const hostIdAllowed = "1-64 letters, digits, `.`, `_` or `-`";
const hostId = (env: EnvNames) =>
  setting(fromText(hostIdAllowed, (text) => (hostIdPattern.test(text) ? text : undefined)).optional(), env, {
    default: "the machine's hostname",
    allowed: hostIdAllowed,
    optional: true,
  });

const absolutePath = fromText("a non-empty path", (text) => (text.length > 0 ? path.resolve(text) : undefined));

/** A path, made absolute against the working directory when the configuration is loaded. */
const filePath = (env: EnvNames, fallback: string, shown = code(fallback)) =>
  setting(absolutePath.prefault(fallback), env, { default: shown, allowed: "a non-empty path" });

const optionalFilePath = (env: EnvNames) =>
  setting(absolutePath.optional(), env, { default: "unset", allowed: "a non-empty path", optional: true });

const listOf = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** Where sandboxed processes' own temporary folders are: never on their PATH. */
const sandboxTemporaryFolders = ["/tmp", "/var/tmp", "/dev/shm"];

/**
 * The PATH of processes started by tools: absolute folders only (an empty or
 * relative entry would be the working directory, the workspace), none in the
 * sandbox's writable temporary folders. Never the service's own PATH.
 */
const toolSearchPath = (env: EnvNames, fallback: string) => {
  const allowed = `absolute folders separated by \`:\`, none in ${sandboxTemporaryFolders.map(code).join(", ")}`;
  return setting(
    fromText(allowed, (text) => {
      const folders = text.split(":");
      const fine = folders.every(
        (folder) =>
          path.isAbsolute(folder) &&
          !sandboxTemporaryFolders.some((temp) => path.resolve(folder) === temp || path.resolve(folder).startsWith(`${temp}/`)),
      );
      return fine ? text : undefined;
    }).default(fallback),
    env,
    { default: code(fallback), allowed },
  );
};

/** A comma-separated list of paths, each made absolute. */
const pathList = (env: EnvNames) =>
  setting(
    z
      .string()
      .optional()
      .transform((value): readonly string[] => Object.freeze(listOf(value ?? "").map((p) => path.resolve(p)))),
    env,
    { default: "unset (none)", allowed: "comma-separated paths" },
  );

/**
 * The operator's stdio MCP commands: comma-separated entries, each an absolute path followed by
 * the environment variable names a tenant may set for it, colon-separated
 * (`/usr/bin/node,/opt/mcp/github:GITHUB_TOKEN:GITHUB_HOST`).
 */
const stdioCommandList = (env: EnvNames) => {
  const allowed = "comma-separated absolute paths, each optionally followed by `:NAME` for every environment variable a tenant may set";
  return setting(
    z
      .string()
      .optional()
      .transform((value, ctx): McpStdioCommands => {
        const commands = new Map<string, Set<string>>();
        for (const entry of listOf(value ?? "")) {
          const [command = "", ...names] = entry.split(":").map((part) => part.trim());
          const problem = !path.isAbsolute(command)
            ? `"${command}" is not an absolute path`
            : names
                .map((name) => {
                  if (!environmentNamePattern.test(name)) return `"${name}" (for ${command}) is not an environment variable name`;
                  const why = forbiddenEnvironmentName(name);
                  return why ? `${name} (for ${command}) can never be admitted: ${why}` : undefined;
                })
                .find((text) => text !== undefined);
          if (problem) {
            ctx.issues.push({ code: "custom", message: `must be ${allowed}; ${problem}`, input: value });
            return z.NEVER;
          }
          const admitted = commands.get(command) ?? new Set<string>();
          for (const name of names) admitted.add(name);
          commands.set(command, admitted);
        }
        return commands;
      }),
    env,
    { default: "unset (none)", allowed },
  );
};

/** A comma-separated set of names. */
const nameSet = (env: EnvNames) =>
  setting(
    z
      .string()
      .optional()
      .transform((value): ReadonlySet<string> => new Set(listOf(value ?? ""))),
    env,
    { default: "unset (none)", allowed: "comma-separated names" },
  );

const optionalUrl = (env: EnvNames, options: { secret?: boolean } = {}) =>
  setting(
    fromText("an http or https URL", (text) => (/^https?:$/.test(URL.parse(text)?.protocol ?? "") ? text : undefined)).optional(),
    env,
    { default: "unset", allowed: "an http or https URL", secret: options.secret, optional: true },
  );

/**
 * The prefix of every Redis key: no `{` or `}`, as the first `{...}` of a key is its Redis Cluster
 * hash tag, and the tags are Foya's own (a queue's name, a session, a tenant).
 */
const queuePrefix = (env: EnvNames, fallback: string) => {
  const allowed = "a non-empty text without `{` or `}`";
  return setting(fromText(allowed, (text) => (text.length > 0 && !/[{}]/.test(text) ? text : undefined)).default(fallback), env, {
    default: code(fallback),
    allowed,
  });
};

/** `src/config.ts` and `dist/config.js` both sit one level below the checkout's root. */
const consoleBuild = path.join(path.dirname(fileURLToPath(import.meta.url)), "../packages/console/dist");

/**
 * The settings, grouped by concern: `config.<group>.<setting>`. A group's `.describe()` is the
 * title of its table in docs/configuration.md.
 */
const settingsSchema = z.object({
  database: z
    .object({
      url: text("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres", { secret: true }).describe("Postgres connection URL."),
      poolSize: int("FOYA_DATABASE_POOL_SIZE", 20, { min: 1, max: 1000 }).describe(
        "Postgres connections a process opens at most (its shared pool; a worker's liveness record has one more of its own).",
      ),
      idleMs: int("FOYA_DATABASE_IDLE_MS", 300_000, { min: 1_000, max: maxTimerMs }).describe(
        "How long a pool keeps an idle Postgres connection: a new one costs a backend, and its named statements are planned again for their first runs.",
      ),
      answerStatements: int("FOYA_ANSWER_STATEMENTS", 2, { min: 0, max: 1000 }).describe(
        'Tool-result statements (`answer_calls`) a process runs at once; results that arrive meanwhile go together in the next one, up to 32 rows, one per session (docs/architecture/store.md, "Statements in batches"). `0`: one statement per result, as many at once as the pool gives.',
      ),
      commitStatements: int("FOYA_COMMIT_STATEMENTS", 2, { min: 0, max: 1000 }).describe(
        'Step-commit statements (`commit_steps`: a model step\'s answer and calls) a process runs at once; commits that arrive meanwhile go together in the next one, up to 32 rows, one per session (docs/architecture/store.md, "Statements in batches"). `0`: one statement per commit, as many at once as the pool gives.',
      ),
      claimStatements: int("FOYA_CLAIM_STATEMENTS", 2, { min: 0, max: 1000 }).describe(
        "Claim statements of each job kind (`claim_steps`: a model step job's lease, fence and history; `claim_batches`: a tool batch job's lease, calls and first group) a process runs at once; claims that arrive meanwhile go together in the next one, up to 32 rows, one per run (docs/architecture/store.md, \"Statements in batches\"). `0`: one statement per claim, as many at once as the pool gives.",
      ),
      migrateOnStart: flag("FOYA_MIGRATE_ON_START", true).describe(
        "Apply the SQL migrations in `drizzle/` when a process starts (`npm run migrate` applies them otherwise).",
      ),
    })
    .describe("Postgres"),
  redis: z
    .object({
      url: text("REDIS_URL", "redis://127.0.0.1:6379", { secret: true }).describe(
        "Redis connection URL (queues, pub/sub, shared counters). With `FOYA_REDIS_CLUSTER`, the cluster's seed nodes: one URL or several, comma-separated (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`); the other nodes are found from them, and the first URL with a user or password gives the credentials for every node.",
      ),
      cluster: flag("FOYA_REDIS_CLUSTER", false).describe(
        'Redis is a Redis Cluster: connections follow its slots, and events, cancels and MCP notices use sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`). Every key is hash-tagged either way (docs/operations.md, "Redis Cluster").',
      ),
      queuePrefix: queuePrefix("FOYA_QUEUE_PREFIX", "foya").describe(
        "Prefix of this deployment's BullMQ queues, pub/sub channels and Redis keys; tests use one per file.",
      ),
      stepQueueShards: int("FOYA_STEP_QUEUE_SHARDS", 1, { min: 1, max: 1024 }).describe(
        "Step queues, each its own hash tag and so its own Redis Cluster slot; a run's steps all go to the shard its id picks, so they keep their order. Every worker consumes every shard, each with `FOYA_STEP_CONCURRENCY` / shards (rounded up) of its slots. `1` is one queue; a cluster deployment sets about 2 per master node. All processes of a deployment must agree on it.",
      ),
    })
    .describe("Redis"),
  api: z
    .object({
      host: text("FOYA_HOST", "127.0.0.1", { minLength: 1 }).describe("Address the API listens on."),
      port: int("PORT", 8787, { min: 0, max: 65_535 }).describe("TCP port the API listens on; `0` picks a free one."),
      adminToken: optionalText("FOYA_ADMIN_TOKEN", { secret: true }).describe(
        "Bearer token for the `/v1/tenants` and `/v1/admin` routes; unset disables them (403).",
      ),
      streamTokenSecret: optionalText("FOYA_STREAM_TOKEN_SECRET", {
        minLength: 32,
        secret: true,
        shown: "derived from `FOYA_ADMIN_TOKEN`, else random per process",
      }).describe(
        "Signs the 60 s event-stream tokens of `POST /v1/sessions/:id/stream-tokens`; with several API instances and no admin token, set it, or a token minted by one instance is refused by the others.",
      ),
      consoleDir: filePath("FOYA_CONSOLE_DIR", consoleBuild, code("packages/console/dist")).describe(
        "The web console's build (`npm run console:build`), served at `/console` when it holds an `index.html`.",
      ),
      sseKeepaliveMs: int("FOYA_SSE_KEEPALIVE_MS", 15_000, { min: 100, max: maxTimerMs }).describe(
        "Interval of event-stream keepalive comments, in milliseconds; each tick also re-reads the event log for streams that fell behind and renews their stream slots.",
      ),
      maxBodyBytes: int("FOYA_API_MAX_BODY_BYTES", 1024 * 1024, { min: 1, max: maxBytes, unit: "bytes" }).describe(
        "Largest request body of most routes, in bytes; a larger one answers 413.",
      ),
      maxInputBodyBytes: int("FOYA_API_MAX_INPUT_BODY_BYTES", 8 * 1024 * 1024, { min: 1, max: maxBytes, unit: "bytes" }).describe(
        "Largest body of the routes that carry user or model content (run inputs, approval decisions with edited arguments), in bytes; at least `FOYA_API_MAX_BODY_BYTES`.",
      ),
      rateLimit: int("FOYA_API_RATE_LIMIT", 1000, { min: 0, max: maxCount }).describe(
        "Requests per API key per window, counted across API instances in Redis (429 with `Retry-After` beyond); `0` turns the limit off.",
      ),
      rateWindowMs: int("FOYA_API_RATE_WINDOW_MS", 10_000, { min: 1, max: maxTimerMs }).describe(
        "The request rate limit's fixed window, in milliseconds.",
      ),
      authFailureLimit: int("FOYA_API_AUTH_FAILURE_LIMIT", 20, { min: 0, max: maxCount }).describe(
        "Failed authentications of one credential (an API key, stream token, admin or metrics token) from one client address per window before that pair is refused (429); `0` turns this count off.",
      ),
      authFailureAddressLimit: int("FOYA_API_AUTH_FAILURE_ADDRESS_LIMIT", 100, { min: 0, max: maxCount }).describe(
        "Failed authentications from one client address per window, every credential of a kind together (tenants' keys and stream tokens, the admin token, the metrics token), before the address is refused that kind (429); tenants' keys that authenticated before and valid stream tokens still pass; `0` turns this count off.",
      ),
      authFailureWindowMs: int("FOYA_API_AUTH_FAILURE_WINDOW_MS", 300_000, { min: 1, max: maxTimerMs }).describe(
        "The failed-authentication window, in milliseconds.",
      ),
      trustProxyHops: int("FOYA_API_TRUST_PROXY_HOPS", 0, { min: 0, max: maxCount }).describe(
        "Reverse proxies in front of the API: behind n, the client address is the n-th `X-Forwarded-For` entry from the right; with `0` it is the socket's peer.",
      ),
      maxStreamsPerTenant: int("FOYA_API_MAX_STREAMS_PER_TENANT", 64, { min: 0, max: maxCount }).describe(
        "Open event streams per tenant across API instances (429 beyond); `0` turns the cap off.",
      ),
    })
    .describe("API"),
  workers: z
    .object({
      stepConcurrency: int("FOYA_STEP_CONCURRENCY", 64, { min: 1, max: maxCount }).describe(
        "Step jobs (model steps) a worker runs at once.",
      ),
      toolConcurrency: int("FOYA_TOOL_CONCURRENCY", 64, { min: 1, max: maxCount }).describe("Tool-batch jobs a worker runs at once."),
      leaseMs: int("FOYA_LEASE_MS", 30_000, { min: 500, max: maxTimerMs }).describe(
        "How long a worker's claim on a run lasts without renewal, in milliseconds; also the BullMQ lock duration.",
      ),
      stalledIntervalMs: int("FOYA_STALLED_INTERVAL_MS", 15_000, { min: 200, max: maxTimerMs }).describe(
        "How often BullMQ looks for jobs of dead workers, in milliseconds.",
      ),
      sweepIntervalMs: int("FOYA_SWEEP_INTERVAL_MS", 5_000, { min: 100, max: maxTimerMs }).describe(
        "How often each worker's sweeper looks for lost work to re-dispatch, in milliseconds.",
      ),
      sweepGraceMs: int("FOYA_SWEEP_GRACE_MS", 10_000, { min: 0, max: maxTimerMs }).describe(
        "Work without a live lease that has not moved for this many milliseconds is re-dispatched by the sweeper.",
      ),
      livenessIntervalMs: int("FOYA_LIVENESS_INTERVAL_MS", 1_000, { min: 1, max: maxTimerMs }).describe(
        "How often each worker renews its liveness record, and sweepers look for dead workers, in milliseconds (SPEC D9).",
      ),
      livenessTimeoutMs: int("FOYA_LIVENESS_TIMEOUT_MS", 3_000, { min: 2, max: maxTimerMs }).describe(
        "A worker whose liveness record is this many milliseconds old is taken for dead and its runs and background commands are taken over at once; at least twice `FOYA_LIVENESS_INTERVAL_MS`.",
      ),
      shutdownGraceMs: int("FOYA_SHUTDOWN_GRACE_MS", 10_000, { min: 0, max: maxTimerMs }).describe(
        "How long a draining process (SIGTERM) lets running jobs finish before it hands them back, in milliseconds.",
      ),
      hostId: hostId("FOYA_HOST_ID").describe(
        "The host this worker belongs to (SPEC W3): workers of one host share its workspace root (`FOYA_WORKSPACES_DIR`, on its local disk) and its tool-batch queue; a project's batches run on the one host it is placed on.",
      ),
      hostRequestConcurrency: int("FOYA_HOST_REQUEST_CONCURRENCY", 4, { min: 1, max: maxCount }).describe(
        "Requests of the API on its projects' workspaces (reverts, the trash, a rewind's look at the folder) one worker serves at once, from its host's queue (SPEC W3).",
      ),
      hostRequestPickupMs: int("FOYA_HOST_REQUEST_PICKUP_MS", 5_000, { min: 1, max: maxTimerMs }).describe(
        "A request of the API on a project's workspace that no worker of the project's host has taken within this many milliseconds is withdrawn and answered 503 `no_worker`; at most `FOYA_HOST_REQUEST_TIMEOUT_MS`.",
      ),
      hostRequestTimeoutMs: int("FOYA_HOST_REQUEST_TIMEOUT_MS", 120_000, { min: 1, max: maxTimerMs }).describe(
        "How long the API waits for the project's host to answer a request on its workspace (a revert, the trash, a rewind's look at the folder), in milliseconds; then it answers 504 `worker_timeout`.",
      ),
      heartbeatFile: optionalFilePath("FOYA_WORKER_HEARTBEAT_FILE").describe(
        "A file a worker rewrites (its pid and the time) every second once it serves; `node dist/health/worker-healthcheck.js` (in development `npx tsx src/health/worker-healthcheck.ts`) exits 0 while it is under 10 s old and its pid runs (the compose worker's health check).",
      ),
    })
    .describe("Workers"),
  runs: z
    .object({
      stepAttempts: int("FOYA_STEP_ATTEMPTS", 3, { min: 1, max: maxCount }).describe("Attempts of a model step before the run fails."),
      maxStepsPerRun: int("FOYA_MAX_STEPS_PER_RUN", 100, { min: 1, max: maxCount }).describe(
        "Model steps a run may take; a run that reaches it fails with `max_steps_exceeded`.",
      ),
      maxContinuedInterruptions: int("FOYA_MAX_CONTINUED_INTERRUPTIONS", 3, { min: 0, max: maxCount }).describe(
        'How often a run with `onInterrupted: "continue"` goes on after interrupted tool calls before it ends `interrupted` (SPEC D10).',
      ),
      contextResultMaxChars: int("FOYA_CONTEXT_RESULT_MAX_CHARS", 0, { min: 0, max: maxCount }).describe(
        "Tool results longer than this many characters are sent to the model as head and tail (O2); `0` scales with the profile's context window.",
      ),
      agentMaxDepth: int("FOYA_AGENT_MAX_DEPTH", 2, { min: 0, max: maxCount }).describe(
        "How many sub-agent levels may nest below a client's session (SPEC A1); `0` removes the `agent` tool.",
      ),
    })
    .describe("Runs"),
  providers: z
    .object({
      file: optionalFilePath("FOYA_PROVIDERS_FILE").describe(
        'JSON file of provider profiles, with their shared budgets and fallbacks (see "Pointing Foya at a model").',
      ),
      openaiBaseUrl: optionalUrl("FOYA_OPENAI_BASE_URL").describe(
        "Shortcut: defines an `openai` profile (streaming Chat Completions) at this base URL.",
      ),
      openaiModel: text("FOYA_OPENAI_MODEL", "gpt-4o-mini", { minLength: 1 }).describe("The model of the `openai` profile."),
      openaiApiKey: optionalText("OPENAI_API_KEY", { secret: true }).describe("The API key of the `openai` profile."),
      defaultProfile: text("FOYA_DEFAULT_PROVIDER", "scripted", { minLength: 1 }).describe(
        "The provider profile of sessions that name none; it must be a defined profile.",
      ),
    })
    .describe("Model providers"),
  tools: z
    .object({
      modules: pathList("FOYA_TOOL_MODULES").describe(
        "Comma-separated module paths exporting `tools`, added to the registry; a compiled process (`dist/`, the image) loads JavaScript modules only.",
      ),
      path: toolSearchPath("FOYA_TOOL_PATH", "/usr/local/bin:/usr/bin:/bin").describe(
        "The only `PATH` processes started by tools and stdio MCP servers see (never the service's own `PATH`, which names the host's layout; tenants cannot set a server's); their environment holds no service secrets.",
      ),
      webFetchAllowPrivate: flag("FOYA_WEB_FETCH_ALLOW_PRIVATE", false).describe(
        "Let `web_fetch` reach loopback and private addresses (tests, trusted deployments).",
      ),
      approvalTtlSeconds: int("FOYA_APPROVAL_TTL_SECONDS", 86_400, { min: 1, max: maxCount }).describe(
        "How long a pending approval waits before it expires (counts as denied), in seconds, unless the tenant's or project's policy says otherwise.",
      ),
    })
    .describe("Tools and approvals"),
  sandbox: z
    .object({
      bwrapPath: text("FOYA_BWRAP_PATH", "bwrap", { minLength: 1 }).describe(
        "bubblewrap (Debian package `bubblewrap`): a path, or a name looked up only in the system's folders; missing means tool processes fail closed.",
      ),
      slirp4netnsPath: text("FOYA_SLIRP4NETNS_PATH", "slirp4netns", { minLength: 1 }).describe(
        "slirp4netns (Debian package `slirp4netns`), which connects network-granted sandboxes: a path, or a name looked up only in the system's folders; missing means those calls fail closed.",
      ),
      hiddenPaths: pathList("FOYA_SANDBOX_HIDE").describe(
        "Comma-separated extra host paths hidden from sandboxed processes, beyond the service's files, other workspaces and known secrets.",
      ),
      readOnlyPaths: pathList("FOYA_SANDBOX_READONLY").describe(
        "Comma-separated extra host trees shown read-only to sandboxed processes (a toolchain outside `/usr` and `/opt`).",
      ),
      toolUidBase: int("FOYA_TOOL_UID_BASE", 1_000_000_000, {
        min: smallestToolUidBase,
        max: largestUidPlusOne - toolUidSlotCount - 1,
        why: `above the system accounts, leaving room for ${toolUidSlotCount} tenant uids below 2^31`,
      }).describe(
        "Tenant n runs its tool processes as host uid and gid base + n (SPEC S7); at least 1000, and base + 100000000 below 2^31 (the largest uid bubblewrap maps).",
      ),
      fullAccessAllowed: flag("FOYA_ALLOW_FULL_ACCESS", false).describe(
        'The deployment allows Full Access sessions at all (SPEC S8); each tenant also needs the operator\'s grant (`PATCH /v1/tenants/:id {"fullAccess": true}`).',
      ),
      gitSearchFolders: int("FOYA_SANDBOX_GIT_SEARCH_FOLDERS", 20_000, { min: 1, max: maxCount }).describe(
        "Folders of a workspace (outside node_modules, at most 64 levels deep) searched for repositories before each sandboxed process, to protect their hooks and configuration (SPEC S11); a larger or deeper workspace fails closed.",
      ),
      recordFullAccessShell: flag("FOYA_RECORD_FULL_ACCESS_SHELL", false).describe(
        'Also record what foreground `bash` calls change in the workspace in Full Access (outside it they always are, on a root worker); see "What shell commands change".',
      ),
    })
    .describe("Sandbox"),
  toolLimits: z
    .object({
      memoryBytes: int("FOYA_TOOL_MEMORY_BYTES", defaultProcessLimits.memoryBytes, { min: 1, max: maxBytes, unit: "bytes" }).describe(
        "Address space per tool process (RLIMIT_AS), in bytes.",
      ),
      processes: int("FOYA_TOOL_PROCESSES", defaultProcessLimits.processes, { min: 1, max: maxCount }).describe(
        "Processes and threads of the tenant's host uid (RLIMIT_NPROC).",
      ),
      cpuSeconds: int("FOYA_TOOL_CPU_SECONDS", defaultProcessLimits.cpuSeconds, { min: 1, max: maxCount }).describe(
        "CPU time per tool process (RLIMIT_CPU), in seconds.",
      ),
      fileSizeBytes: int("FOYA_TOOL_FILE_BYTES", defaultProcessLimits.fileSizeBytes, { min: 1, max: maxBytes, unit: "bytes" }).describe(
        "Largest file a tool process may write (RLIMIT_FSIZE), in bytes.",
      ),
      wallSeconds: int("FOYA_TOOL_WALL_SECONDS", defaultProcessLimits.wallSeconds, { min: 1, max: maxTimerSeconds }).describe(
        "Wall-clock time of a foreground call, in seconds; a longer `timeoutMs` is cut to it.",
      ),
      tmpBytes: int("FOYA_TOOL_TMP_BYTES", defaultProcessLimits.tmpBytes, { min: 1, max: maxBytes, unit: "bytes" }).describe(
        "Temporary space of a foreground call, in bytes: its private `/tmp`, `/var/tmp` and `/dev/shm` together (tmpfs, so host memory; the last two get an eighth each, at most 64 MiB).",
      ),
      backgroundTmpBytes: int("FOYA_TOOL_BACKGROUND_TMP_BYTES", defaultProcessLimits.backgroundTmpBytes, {
        min: 1,
        max: maxBytes,
        unit: "bytes",
      }).describe(
        "Temporary space of a background command or a stdio MCP server (they live long), in bytes, split as for a foreground call.",
      ),
      tmpBudgetBytes: int("FOYA_TOOL_TMP_BUDGET_BYTES", defaultProcessLimits.tmpBudgetBytes, {
        min: 1,
        max: maxBytes,
        unit: "bytes",
      }).describe(
        "Temporary space all of a tenant's running sandboxes on one host may hold together, in bytes: a sandbox gets less when less is left (down to 16 MiB), else it fails closed.",
      ),
      backgroundCommands: int("FOYA_TOOL_BACKGROUND_COMMANDS", defaultProcessLimits.backgroundCommands, { min: 1, max: maxCount }).describe(
        "Background commands a tenant may run at once, across workers.",
      ),
      backgroundSeconds: int("FOYA_TOOL_BACKGROUND_SECONDS", defaultProcessLimits.backgroundSeconds, {
        min: 1,
        max: maxTimerSeconds,
      }).describe("Longest a background command may run, in seconds; then it is killed."),
    })
    .describe("Per-call process limits (an operator may override each per tenant)"),
  quotas: z
    .object({
      activeRuns: int("FOYA_QUOTA_ACTIVE_RUNS", 32, { min: 1, max: maxCount }).describe(
        'Runs of one tenant admitted to the shared queues at once, sub-agents included (a run waiting on its sub-agent lends it its slot); later runs wait in order (fair sharing, a tenant\'s weight); per tenant with `PATCH /v1/tenants/:id {"quotas": {"activeRuns": n}}`.',
      ),
      queuedRuns: int("FOYA_QUOTA_QUEUED_RUNS", 1000, { min: 1, max: maxCount }).describe(
        "Runs of one tenant waiting for a slot, sub-agents included; more answer 429 `quota_exceeded` with `Retry-After` (a sub-agent: an is_error `quota_exceeded` result).",
      ),
      tokensPerDay: int("FOYA_QUOTA_TOKENS_PER_DAY", 0, { min: 0, max: maxBytes }).describe(
        "Model tokens per tenant per UTC day, from recorded usage; over it new runs answer 429 until midnight UTC, no sub-agent starts and running runs end `quota_exceeded` at their next step; `0`: no limit.",
      ),
      storageBytes: int("FOYA_QUOTA_STORAGE_BYTES", 0, { min: 0, max: maxBytes, unit: "bytes" }).describe(
        "Bytes of file-change contents and artifacts per tenant; over it new runs answer 429, no sub-agent starts and running runs end `quota_exceeded` at their next step; `0`: no limit.",
      ),
      toolCalls: int("FOYA_QUOTA_TOOL_CALLS", 0, { min: 0, max: maxCount }).describe(
        "Tool calls of one tenant running at once across every worker; a call over it stays queued until a slot frees; `0`: no limit beyond 5 per run.",
      ),
    })
    .describe("Tenant quotas (an operator may override each per tenant)"),
  workspaces: z
    .object({
      dir: filePath("FOYA_WORKSPACES_DIR", ".data/workspaces").describe(
        "This host's workspace root, on its local disk: the folders of the projects placed on it (SPEC W3). Shared by nothing but the workers of the same host; the API needs none.",
      ),
      diskBudgetBytes: int("FOYA_WORKSPACES_DISK_BUDGET_BYTES", 0, { min: 0, max: maxBytes, unit: "bytes" }).describe(
        "Bytes of workspaces (by their latest checkpoints) this host keeps; over it, the projects idle longest (no active run, no background command) are evicted from its disk and rebuilt from their checkpoints where their next batch is placed; `0`: no limit.",
      ),
      trashRetentionDays: int("FOYA_TRASH_RETENTION_DAYS", 30, { min: 0, max: maxDays }).describe(
        "Entries of a project's trash (`GET /v1/projects/:id/trash`) older than this many days are deleted for good; `0` keeps them.",
      ),
      checkpointMaxFileBytes: int("FOYA_CHECKPOINT_MAX_FILE_BYTES", 0, { min: 0, max: maxBytes, unit: "bytes" }).describe(
        "Largest file whose content a workspace checkpoint keeps; `0`: no limit (content is streamed to the store in chunks, never held whole in memory; the tenant's `storageBytes` quota bounds it). A larger file is kept by size and digest only, and a rebuild leaves it out and says so (`workspace_restored`'s `filesNotRestored`).",
      ),
      blobChunkBytes: int("FOYA_BLOB_CHUNK_BYTES", 1024 * 1024, { min: 4096, max: 64 * 1024 * 1024, unit: "bytes" }).describe(
        "Length of the chunks a large blob (a checkpointed file) is kept in, one Postgres row each; a blob up to this length is one row. Blobs already stored keep their chunk length.",
      ),
      outOfBandChanges: choice("FOYA_WORKSPACE_OUT_OF_BAND_CHANGES", ["keep", "repair"], "keep").describe(
        "Changes no tool of Foya made since the latest checkpoint (a person's edit, a disk's damage): `keep` makes them part of the next batch's checkpoint; `repair` has a run's first batch that may change the workspace compare it with the checkpoint and rebuild it over such changes (for deployments where nothing but Foya touches workspaces). A missing workspace folder is rebuilt either way.",
      ),
    })
    .describe("Workspaces"),
  mcp: z
    .object({
      stdioCommands: stdioCommandList("FOYA_MCP_STDIO_COMMANDS").describe(
        "Programs tenants may configure as stdio MCP servers, each with the environment variable names a tenant may set for it (`/usr/bin/node,/opt/mcp/github:GITHUB_TOKEN`); other names are refused, and names that make a program load code (`LD_*`, `NODE_OPTIONS`, `PYTHONPATH`, `BASH_ENV`, `PATH`, `GIT_*`...) can never be admitted; unset allows no program.",
      ),
      maxMessageBytes: int("FOYA_MCP_MAX_MESSAGE_BYTES", 16 * 1024 * 1024, {
        min: 64 * 1024,
        max: 256 * 1024 * 1024,
        unit: "bytes",
        why: "a message is decoded as one string",
      }).describe(
        "Largest message an MCP server may send (a stdio line, an HTTP response body, one event of an event stream), in bytes; a larger one is not read, its request answers `mcp_message_too_large` and the connection is restarted.",
      ),
      allowPrivate: flag("FOYA_MCP_ALLOW_PRIVATE", false).describe("Let HTTP MCP servers point at loopback and private addresses."),
      sandbox: flag("FOYA_MCP_SANDBOX", true).describe(
        "Run stdio MCP servers in the bubblewrap sandbox (their own PID namespace, no host loopback, their workspace writable); servers installed outside `/usr` and `/opt` need their folder in `FOYA_SANDBOX_READONLY`.",
      ),
      configTtlMs: int("FOYA_MCP_CONFIG_TTL_MS", 5_000, { min: 0, max: maxTimerMs }).describe(
        "How long a process reuses a project's MCP server configurations before reading them again, in milliseconds.",
      ),
      requestTimeoutMs: int("FOYA_MCP_REQUEST_TIMEOUT_MS", 60_000, { min: 1, max: maxTimerMs }).describe(
        "How long the API waits for a worker to answer an MCP listing, resource or prompt request, in milliseconds; then it answers 504 `mcp_timeout`.",
      ),
      requestPickupMs: int("FOYA_MCP_REQUEST_PICKUP_MS", 5_000, { min: 1, max: maxTimerMs }).describe(
        "An MCP request no worker has taken (nor held back for its tenant's share) within this many milliseconds is withdrawn and answered 503 `no_worker`; at most `FOYA_MCP_REQUEST_TIMEOUT_MS`.",
      ),
      requestConcurrency: int("FOYA_MCP_REQUEST_CONCURRENCY", 4, { min: 1, max: maxCount }).describe(
        "MCP requests one worker serves at once.",
      ),
      requestTenantConcurrency: optionalInt(
        "FOYA_MCP_REQUEST_TENANT_CONCURRENCY",
        { min: 1, max: maxCount },
        "half of `FOYA_MCP_REQUEST_CONCURRENCY`, rounded up",
      ).describe(
        "MCP requests of one tenant a worker serves at once (at most `FOYA_MCP_REQUEST_CONCURRENCY`); its other requests wait in the queue for its own to end, so one tenant's slow server never holds every slot.",
      ),
    })
    .describe("MCP servers"),
  webhooks: z
    .object({
      pollMs: int("FOYA_WEBHOOK_POLL_MS", 500, { min: 50, max: maxTimerMs }).describe(
        "How often each worker moves new webhook deliveries from Postgres to the queue, in milliseconds.",
      ),
      attempts: int("FOYA_WEBHOOK_ATTEMPTS", 8, { min: 1, max: maxCount }).describe(
        "HTTP attempts per delivery, the first included; then it is marked failed.",
      ),
      backoffMs: int("FOYA_WEBHOOK_BACKOFF_MS", 2_000, { min: 10, max: maxTimerMs }).describe(
        "Delay before the first retry, in milliseconds; each later one doubles.",
      ),
      timeoutMs: int("FOYA_WEBHOOK_TIMEOUT_MS", 10_000, { min: 100, max: maxTimerMs }).describe(
        "Time limit of one attempt, DNS included, in milliseconds.",
      ),
      staleMs: int("FOYA_WEBHOOK_STALE_MS", 60_000, { min: 500, max: maxTimerMs }).describe(
        "A delivery still pending this many milliseconds after it was enqueued is checked for a lost job and enqueued again.",
      ),
      retentionDays: int("FOYA_WEBHOOK_RETENTION_DAYS", 30, { min: 0, max: maxDays }).describe(
        "Finished deliveries and their attempts older than this many days are deleted; `0` keeps them.",
      ),
      concurrency: int("FOYA_WEBHOOK_CONCURRENCY", 16, { min: 1, max: maxCount }).describe("Attempts a worker sends at once."),
      allowPrivate: flag("FOYA_WEBHOOK_ALLOW_PRIVATE", false).describe("Let webhooks target loopback and private addresses."),
    })
    .describe("Webhooks"),
  metrics: z
    .object({
      token: optionalText("FOYA_METRICS_TOKEN", { minLength: 16, secret: true }).describe(
        "Bearer token for the API's `GET /metrics` (never an API key or the admin token); unset, the route answers 404.",
      ),
      port: optionalInt("FOYA_METRICS_PORT", { min: 1, max: 65_535 }).describe(
        "Serve `/metrics` without a token on a port of its own, in any process role (workers too); the process prints `FOYA_METRICS_URL=`.",
      ),
      host: text("FOYA_METRICS_HOST", "127.0.0.1", { minLength: 1 }).describe("Address the metrics port listens on."),
      tenantLabels: int("FOYA_METRICS_TENANT_LABELS", 50, { min: 0, max: maxCount }).describe(
        "Tenants that get metric series of their own; later ones are counted as `other`.",
      ),
    })
    .describe("Metrics"),
  tracing: z
    .object({
      otlpUrl: optionalUrl(["FOYA_OTLP_TRACES_URL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]).describe(
        "OTLP/HTTP endpoint for traces (e.g. `http://collector:4318/v1/traces`), the first variable set winning; traces are off without it.",
      ),
    })
    .describe("Traces"),
  logging: z
    .object({
      level: choice("LOG_LEVEL", ["fatal", "error", "warn", "info", "debug", "trace", "silent"], "info").describe("pino's log level."),
    })
    .describe("Logs"),
  testing: z
    .object({
      failpoints: nameSet("FOYA_FAILPOINTS").describe(
        "For crash tests only: comma-separated failpoint names (`src/failpoints.ts`) at which the process kills itself; never set in production.",
      ),
    })
    .describe("Testing"),
});

type Settings = z.output<typeof settingsSchema>;

type Frozen<T> = { readonly [K in keyof T]: Readonly<T[K]> };

/** The settings, frozen, with what loadConfig derives: the stream token secret and the provider profiles. */
export type Config = Frozen<
  Omit<Settings, "api" | "providers" | "mcp"> & {
    api: Omit<Settings["api"], "streamTokenSecret"> & {
      /** FOYA_STREAM_TOKEN_SECRET, else derived from FOYA_ADMIN_TOKEN, else random per process. */
      streamTokenSecret: string;
    };
    mcp: Omit<Settings["mcp"], "requestTenantConcurrency"> & {
      /** FOYA_MCP_REQUEST_TENANT_CONCURRENCY, else half of FOYA_MCP_REQUEST_CONCURRENCY, rounded up. */
      requestTenantConcurrency: number;
    };
    providers: Settings["providers"] & {
      /** The scripted profile, those of FOYA_PROVIDERS_FILE and the `openai` shortcut's, keys resolved. */
      profiles: readonly ProviderProfileConfig[];
    };
  }
>;

/**
 * What one client may ask of the API (SPEC S10). Counters live in Redis under the queue
 * prefix, so every API instance of a deployment shares them; 0 turns a count limit off.
 */
export type ApiLimits = Pick<
  Config["api"],
  | "maxBodyBytes"
  | "maxInputBodyBytes"
  | "rateLimit"
  | "rateWindowMs"
  | "authFailureLimit"
  | "authFailureAddressLimit"
  | "authFailureWindowMs"
  | "trustProxyHops"
  | "maxStreamsPerTenant"
>;

export interface DocumentedSetting extends SettingInfo {
  /** `<group>.<field>` of the config object. */
  readonly key: string;
  readonly description: string;
}

export interface DocumentedGroup {
  readonly key: string;
  readonly title: string;
  readonly settings: readonly DocumentedSetting[];
}

/** Every group and setting of settingsSchema with what docs/configuration.md shows of it, in the schema's order. */
export function documentedSettings(): DocumentedGroup[] {
  return Object.entries(settingsSchema.shape).map(([groupKey, group]) => ({
    key: groupKey,
    title: group.description ?? groupKey,
    settings: Object.entries(group.shape).map(([field, schema]: [string, z.ZodType]) => {
      const info = settingInfo.get(schema);
      if (!info || !schema.description) throw new Error(`setting ${groupKey}.${field} has no environment variable or description`);
      return { ...info, key: `${groupKey}.${field}`, description: schema.description };
    }),
  }));
}

type Env = Record<string, string | undefined>;

/** Whether `env` sets this variable of a setting (an empty value does not set one without a default). */
const sets = (info: SettingInfo, env: Env, name: string) => env[name] !== undefined && !(info.optional && env[name] === "");

/** The variable a setting is read from in `env`: the first one set, else the first one named. */
const sourceOf = (info: SettingInfo, env: Env): string => info.env.find((name) => sets(info, env, name)) ?? info.env[0];

const shownValue = (value: string | undefined, secret: boolean | undefined) =>
  value === undefined ? "unset" : secret ? `a ${value.length}-character secret` : JSON.stringify(value);

class ConfigurationError extends Error {
  constructor(problems: readonly string[]) {
    super(`invalid configuration: ${problems.join("\n  ")}`);
    this.name = "ConfigurationError";
  }
}

function parseSettings(env: Env): Settings {
  const groups = documentedSettings();
  const input: Record<string, Record<string, string | undefined>> = {};
  const sources = new Map<string, DocumentedSetting>();
  for (const group of groups) {
    const values: Record<string, string | undefined> = {};
    for (const setting of group.settings) {
      const source = sourceOf(setting, env);
      values[setting.key.slice(group.key.length + 1)] = sets(setting, env, source) ? env[source] : undefined;
      sources.set(setting.key, setting);
    }
    input[group.key] = values;
  }
  const parsed = settingsSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ConfigurationError(
    parsed.error.issues.map((issue) => {
      const setting = sources.get(issue.path.join("."));
      if (!setting) return issue.message;
      const name = sourceOf(setting, env);
      return `${name} is ${shownValue(env[name], setting.secret)}; it ${issue.message}`;
    }),
  );
}

/** Rules between settings, each naming both variables. */
function crossFieldProblems(s: Settings): string[] {
  const problems: string[] = [];
  if (s.workers.livenessTimeoutMs < 2 * s.workers.livenessIntervalMs) {
    problems.push(
      `FOYA_LIVENESS_TIMEOUT_MS is ${s.workers.livenessTimeoutMs}; it must be at least twice FOYA_LIVENESS_INTERVAL_MS (${s.workers.livenessIntervalMs}), or a worker that misses one renewal is taken for dead`,
    );
  }
  if (s.api.maxInputBodyBytes < s.api.maxBodyBytes) {
    problems.push(
      `FOYA_API_MAX_INPUT_BODY_BYTES is ${s.api.maxInputBodyBytes}; it must be at least FOYA_API_MAX_BODY_BYTES (${s.api.maxBodyBytes}), as the routes it limits take every body the others take`,
    );
  }
  if (s.mcp.requestTenantConcurrency !== undefined && s.mcp.requestTenantConcurrency > s.mcp.requestConcurrency) {
    problems.push(
      `FOYA_MCP_REQUEST_TENANT_CONCURRENCY is ${s.mcp.requestTenantConcurrency}; it must be at most FOYA_MCP_REQUEST_CONCURRENCY (${s.mcp.requestConcurrency}), the slots it is a share of`,
    );
  }
  const inWorkspaces = s.tools.path
    .split(":")
    .find((folder) => path.resolve(folder) === s.workspaces.dir || path.resolve(folder).startsWith(`${s.workspaces.dir}/`));
  if (inWorkspaces !== undefined) {
    problems.push(
      `FOYA_TOOL_PATH names ${inWorkspaces}, inside FOYA_WORKSPACES_DIR (${s.workspaces.dir}); tenants write there, so a program of theirs would run where a command names a system one`,
    );
  }
  if (s.mcp.requestPickupMs > s.mcp.requestTimeoutMs) {
    problems.push(
      `FOYA_MCP_REQUEST_PICKUP_MS is ${s.mcp.requestPickupMs}; it must be at most FOYA_MCP_REQUEST_TIMEOUT_MS (${s.mcp.requestTimeoutMs}), by which the API answers anyway`,
    );
  }
  if (!s.redis.cluster && s.redis.url.includes(",")) {
    problems.push(
      "REDIS_URL lists several nodes; it must be one URL unless FOYA_REDIS_CLUSTER is true (several are a Redis Cluster's seed nodes)",
    );
  }
  if (s.workers.hostRequestPickupMs > s.workers.hostRequestTimeoutMs) {
    problems.push(
      `FOYA_HOST_REQUEST_PICKUP_MS is ${s.workers.hostRequestPickupMs}; it must be at most FOYA_HOST_REQUEST_TIMEOUT_MS (${s.workers.hostRequestTimeoutMs}), by which the API answers anyway`,
    );
  }
  return problems;
}

function providerProfiles(settings: Settings["providers"], env: Env): ProviderProfileConfig[] {
  const profiles: ProviderProfileConfig[] = [providerProfileSchema.parse({ name: "scripted", kind: "scripted" })];
  if (settings.file) {
    const file = providersFileSchema.parse(JSON.parse(readFileSync(settings.file, "utf8")));
    for (const profile of file.profiles) {
      if ((profile.kind === "openai-chat" || profile.kind === "anthropic-messages") && profile.apiKeyEnv && !profile.apiKey) {
        profile.apiKey = env[profile.apiKeyEnv];
      }
      profiles.push(profile);
    }
  }
  if (settings.openaiBaseUrl) {
    profiles.push(
      providerProfileSchema.parse({
        name: "openai",
        kind: "openai-chat",
        baseUrl: settings.openaiBaseUrl,
        model: settings.openaiModel,
        apiKey: settings.openaiApiKey,
      }),
    );
  }
  const names = new Set<string>();
  for (const profile of profiles) {
    if (names.has(profile.name)) throw new ConfigurationError([`provider profile "${profile.name}" defined twice`]);
    names.add(profile.name);
  }
  for (const profile of profiles) {
    for (const fallback of profile.fallbacks) {
      if (fallback === profile.name || !names.has(fallback))
        throw new ConfigurationError([
          `provider profile "${profile.name}" names fallback "${fallback}"; a fallback must be another defined profile (${[...names].join(", ")})`,
        ]);
    }
  }
  if (!names.has(settings.defaultProfile)) {
    throw new ConfigurationError([
      `FOYA_DEFAULT_PROVIDER is ${JSON.stringify(settings.defaultProfile)}; it must name a provider profile (${[...names].join(", ")})`,
    ]);
  }
  return profiles;
}

export function loadConfig(env: Env = process.env): Config {
  const settings = parseSettings(env);
  const problems = crossFieldProblems(settings);
  if (problems.length > 0) throw new ConfigurationError(problems);
  const { api, providers, mcp } = settings;
  const config: Config = {
    ...settings,
    api: {
      ...api,
      streamTokenSecret:
        api.streamTokenSecret ??
        (api.adminToken
          ? createHmac("sha256", api.adminToken).update("foya stream tokens").digest("hex")
          : randomBytes(32).toString("hex")),
    },
    providers: { ...providers, profiles: Object.freeze(providerProfiles(providers, env)) },
    mcp: { ...mcp, requestTenantConcurrency: mcp.requestTenantConcurrency ?? Math.ceil(mcp.requestConcurrency / 2) },
  };
  for (const group of Object.values(config)) Object.freeze(group);
  return Object.freeze(config);
}

/** This process's host (SPEC W3): `FOYA_HOST_ID`, else the machine's hostname made fit for a queue name. */
export function hostIdOf(config: Pick<Config, "workers">): string {
  if (config.workers.hostId) return config.workers.hostId;
  const name = hostname()
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .slice(0, 64);
  return name === "" ? "host" : name;
}
