import { Redis } from "ioredis";
import type { Config } from "./config.js";
import { openDatabase, type DbHandle } from "./db/client.js";
import { runMigrations } from "./db/migrate.js";
import { createEventBus, type EventBus } from "./events/event-bus.js";
import { createFailpoints, type Failpoints } from "./failpoints.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { registerStateGauges } from "./observability/state-gauges.js";
import { createTracing, type Tracing } from "./observability/tracing.js";
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createMcpConnections, type McpConnections } from "./mcp/mcp-connections.js";
import { mcpSandbox } from "./mcp/mcp-workspaces.js";
import { refusedHost } from "./net/address-guard.js";
import { createProviderRegistry, type ProviderRegistry } from "./providers/provider-registry.js";
import { createDispatcher, type Dispatcher } from "./queue/dispatcher.js";
import { createTenantLoad } from "./queue/tenant-load.js";
import { sandboxFromConfig } from "./sandbox/sandbox-from-config.js";
import { systemSearchPath } from "./sandbox/find-executable.js";
import { createCallLayers, type CallLayerSupport } from "./sandbox/overlay/call-layers.js";
import { isConnectionError, retryWhileUnavailable, urlSecrets } from "./startup/dependency-wait.js";
import type { StartupStatus } from "./startup/startup-status.js";
import type { SandboxRunner } from "./sandbox/sandbox-runner.js";
import { identityMode, type IdentityMode } from "./sandbox/tool-identity.js";
import { createTenantSettingsCache, type TenantSettingsCache } from "./tenants/tenant-settings.js";
import { createWorkspaceOwnership, type WorkspaceOwnership } from "./workspace/project-workspace.js";
import { builtinTools } from "./tools/builtin-tools.js";
import { createToolExecutor, type ToolExecutor } from "./tools/execute-tool-call.js";
import { loadToolModules } from "./tools/load-tool-modules.js";
import type { AnyTool } from "./tools/tool.js";
import { createToolCatalog, type ToolCatalog } from "./tools/tool-catalog.js";
import { createToolRegistry, type ToolRegistry } from "./tools/tool-registry.js";

/**
 * The composition root: every shared dependency is built here once and handed
 * down explicitly. Functions take the parts they use (`Pick<Services, ...>`).
 */
export interface Services {
  config: Config;
  logger: Logger;
  db: DbHandle;
  /** Command connection shared by queues and publishers. */
  redis: Redis;
  bus: EventBus;
  dispatcher: Dispatcher;
  tools: ToolRegistry;
  /** Confines every process tools and stdio MCP servers start (SPEC S3, S8). */
  sandbox: SandboxRunner;
  /** Layers over workspaces that record what foreground commands change (SPEC X7), or why this worker cannot. */
  callLayers: CallLayerSupport;
  /** Whether tool processes get per-tenant uids (a root service) or the service's own (SPEC S7). */
  identityMode: IdentityMode;
  /** Tenants' tool settings (uid slot, Full Access grant, limits), re-read every few seconds. */
  tenantSettings: TenantSettingsCache;
  /** Hands workspaces made before per-tenant uids to their tenant's uid, once per process. */
  workspaceOwnership: WorkspaceOwnership;
  executor: ToolExecutor;
  /** Per project: the tools above plus its MCP servers' tools (SPEC M1). Jobs and routes that serve a session use this. */
  catalog: ToolCatalog;
  providers: ProviderRegistry;
  failpoints: Failpoints;
  /** MCP server connections of this process, shared by every request (SPEC M1, M2). */
  mcp: McpConnections;
  /** This process's metrics (SPEC X8), served at `/metrics`. */
  metrics: Metrics;
  /** Traces, off unless an OTLP endpoint or span processors were given (SPEC X8). */
  tracing: Tracing;
  close(): Promise<void>;
}

export interface CreateServicesOptions {
  extraTools?: AnyTool[];
  role?: string;
  /** The process's logger; by default one is made with the role in its bindings. */
  logger?: Logger;
  /** Told while migrations wait for Postgres (SPEC D9). */
  startup?: StartupStatus;
  /** Span processors beside the OTLP exporter's, e.g. a test's in-memory exporter. */
  spanProcessors?: SpanProcessor[];
}

export async function createServices(config: Config, options: CreateServicesOptions = {}): Promise<Services> {
  const logger = options.logger ?? createLogger(config.logLevel, options.role ? { role: options.role } : {});
  const db = openDatabase(config.databaseUrl);
  if (config.migrateOnStart) {
    // Once per start; a lost connection is waited out (SPEC D9), a refused migration is thrown.
    await retryWhileUnavailable("postgres", () => runMigrations(db), {
      logger,
      retryIf: isConnectionError,
      secrets: urlSecrets(config.databaseUrl),
      status: options.startup,
    });
  }
  const role = options.role ?? "all";
  const metrics = createMetrics({ tenantLabels: config.observability.metricsTenantLabels, defaultLabels: { role } });
  const tracing = createTracing({
    serviceName: "foya",
    attributes: { "foya.role": role },
    ...(config.observability.otlpTracesUrl ? { otlpUrl: config.observability.otlpTracesUrl } : {}),
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  const redisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true };
  const redis = new Redis(config.redisUrl, redisOptions);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const bus = createEventBus({
    publisher: redis,
    createSubscriber: () => new Redis(config.redisUrl, redisOptions),
    prefix: config.queuePrefix,
  });
  // Jobs of a tenant with fewer working runs are served first (SPEC X5).
  const load = createTenantLoad(db.pool, (error) => logger.warn({ err: error }, "reading tenants' load failed"));
  const dispatcher = createDispatcher({ connection: redis, prefix: config.queuePrefix, stepAttempts: config.stepAttempts, load, traceCarrier: () => tracing.carrier() });
  // Shared state looks the same from every process: a worker-only process leaves it to the API's scrape.
  if (role !== "worker") {
    registerStateGauges(metrics, {
      queues: [dispatcher.stepQueue, dispatcher.toolQueue],
      pool: db.pool,
      livenessTimeoutMs: config.livenessTimeoutMs,
      onError: (error) => logger.warn({ err: error }, "reading a state gauge for /metrics failed"),
    });
  }
  const sandbox = sandboxFromConfig(config);
  const callLayers = createCallLayers({ workspacesDir: config.workspacesDir, searchPath: systemSearchPath });
  const tooling = { identityMode: identityMode(config.toolUidBase), tenantSettings: createTenantSettingsCache(db.db), workspaceOwnership: createWorkspaceOwnership() };
  const mcp = createMcpConnections({
    logger,
    ...(config.mcpAllowPrivate ? {} : { guardHttp: (url: URL) => refusedHost(url.hostname) }),
    sandbox: mcpSandbox({ runner: sandbox, db: db.db, config, ...tooling }),
  });
  const baseTools = [
    ...builtinTools({ webFetchAllowPrivate: config.webFetchAllowPrivate, agents: config.agentMaxDepth > 0 }),
    ...(await loadToolModules(config.toolModules)),
    ...(options.extraTools ?? []),
  ];
  const tools = createToolRegistry(baseTools);
  const executor = createToolExecutor(tools);
  const catalog = createToolCatalog({ base: { registry: tools, executor }, baseTools, db: db.db, mcp, logger, configTtlMs: config.mcpConfigTtlMs });
  return {
    config,
    logger,
    db,
    redis,
    bus,
    dispatcher,
    tools,
    sandbox,
    callLayers,
    ...tooling,
    executor,
    catalog,
    providers: createProviderRegistry(config.providerProfiles),
    failpoints: createFailpoints(config.failpoints),
    mcp,
    metrics,
    tracing,
    async close() {
      await mcp.close();
      await tracing.shutdown();
      await dispatcher.close();
      await bus.close();
      redis.disconnect();
      await db.close();
    },
  };
}
