import path from "node:path";
import { hostIdOf, type Config } from "./config.js";
import { defaultStatementBatches } from "./store/statement-batches.js";
import { openStore } from "./store/open-store.js";
import type { Store } from "./store/store.js";
import { createUnitOfWork, type UnitOfWork } from "./unit-of-work/unit-of-work.js";
import { createEventBus, type EventBus } from "./events/event-bus.js";
import { createFailpoints, type Failpoints } from "./failpoints.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { registerStateGauges } from "./observability/state-gauges.js";
import { createTracing, type Tracing } from "./observability/tracing.js";
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createMcpConnections, type McpConnections } from "./mcp/mcp-connections.js";
import { createMcpConnectionsViaWorkers } from "./mcp/mcp-connections-via-workers.js";
import { mcpListingsOnHosts } from "./mcp/mcp-listings-on-hosts.js";
import { mcpSandbox } from "./mcp/mcp-workspaces.js";
import { refusedHost } from "./net/address-guard.js";
import { createRedisConnection, type RedisConnection } from "./net/redis-connection.js";
import { createProviderRegistry, type ProviderRegistry } from "./providers/provider-registry.js";
import { createProviderBudgets } from "./providers/budget/create-provider-budgets.js";
import type { ProviderBudgets } from "./providers/budget/provider-budgets.js";
import { createDispatcher, type Dispatcher } from "./queue/dispatcher.js";
import { stepQueueName, toolQueueName } from "./queue/job-types.js";
import { createTenantLoad } from "./queue/tenant-load.js";
import { findServiceDir } from "./sandbox/service-dir.js";
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
import { createToolCatalog, type ToolCatalog } from "./mcp/tool-catalog.js";
import { createToolRegistry, type ToolRegistry } from "./tools/tool-registry.js";
import { createKnownTrees, type KnownTrees } from "./checkpoints/known-trees.js";
import { createCurrentCopies, type CurrentCopies } from "./workspace/host-copies.js";
import { createHostRequests, type HostRequests } from "./hosts/host-requests.js";

/**
 * The composition root: every shared dependency is built here once and handed
 * down explicitly. Functions take the parts they use (`Pick<Services, ...>`).
 */
export interface Services {
  config: Config;
  logger: Logger;
  /** Postgres, as the store's repositories (`store.runs`, `store.transaction(...)`): the one door to SQL. */
  store: Store;
  /** Store transactions with their effects after commit: events published, jobs enqueued, cancels broadcast, counts. */
  unitOfWork: UnitOfWork;
  /** Command connection shared by queues and publishers: one Redis server, or a cluster (`FOYA_REDIS_CLUSTER`). */
  redis: RedisConnection;
  bus: EventBus;
  dispatcher: Dispatcher;
  tools: ToolRegistry;
  /** Confines every process tools and stdio MCP servers start (SPEC S3, S8). */
  sandbox: SandboxRunner;
  /** Layers over workspaces that record what foreground commands change (SPEC X7), or why this worker cannot. */
  callLayers: CallLayerSupport;
  /**
   * False in an API-only process (role "api"): it starts no tool or MCP server process, probes
   * no overlay and needs no sandbox rights (SPEC E4); workers do all of that.
   */
  runsTools: boolean;
  /** Whether tool processes get per-tenant uids (a root service) or the service's own (SPEC S7). */
  identityMode: IdentityMode;
  /** Tenants' tool settings (uid slot, Full Access grant, limits), re-read every few seconds. */
  tenantSettings: TenantSettingsCache;
  /** Hands workspaces made before per-tenant uids to their tenant's uid, once per process. */
  workspaceOwnership: WorkspaceOwnership;
  knownTrees: KnownTrees;
  /** The host copies this process found current (SPEC W3), so a batch's check of its copy costs no file access. */
  currentCopies: CurrentCopies;
  executor: ToolExecutor;
  /** Per project: the tools above plus its MCP servers' tools (SPEC M1), from `mcp` (a project's stdio servers listed by its host, SPEC W3). Jobs use this. */
  catalog: ToolCatalog;
  providers: ProviderRegistry;
  /** Each provider profile's budget, pause and fair share, shared by every worker in Redis (SPEC PR3). */
  providerBudgets: ProviderBudgets;
  failpoints: Failpoints;
  /**
   * MCP server connections of this process's worker, shared by every call (SPEC M1, M3). An
   * API-only process has none: there it is `mcpViaWorkers`.
   */
  mcp: McpConnections;
  /** This process's metrics (SPEC X8), served at `/metrics`. */
  metrics: Metrics;
  /** Traces, off unless an OTLP endpoint or span processors were given (SPEC X8). */
  tracing: Tracing;
  /** What API routes use (SPEC M2, E4): listings, resources and prompts asked of a worker (src/mcp/mcp-request.ts). */
  mcpViaWorkers: McpConnections;
  /** The catalog API routes use (`/v1/tools`, edited approvals): each project's MCP tools as a worker lists them. */
  catalogViaWorkers: ToolCatalog;
  /** What API routes do on a project's workspace, asked of the host it is placed on (SPEC W3, src/hosts/host-request.ts). */
  hostRequests: HostRequests;
  close(): Promise<void>;
}

export interface CreateServicesOptions {
  extraTools?: AnyTool[];
  /** "api" builds an API-only process (`runsTools` false); any other role may run a worker too. */
  role?: string;
  /** The process's logger; by default one is made with the role in its bindings. */
  logger?: Logger;
  /** Told while migrations wait for Postgres (SPEC D9). */
  startup?: StartupStatus;
  /** Span processors beside the OTLP exporter's, e.g. a test's in-memory exporter. */
  spanProcessors?: SpanProcessor[];
}

export async function createServices(config: Config, options: CreateServicesOptions = {}): Promise<Services> {
  const logger = options.logger ?? createLogger(config.logging.level, options.role ? { role: options.role } : {});
  // The pool stays inside the store: everything below gets `store`, never a connection.
  const database = openStore(config.database.url, {
    max: config.database.poolSize,
    idleMs: config.database.idleMs,
    batches: {
      answers: config.database.answerStatements > 0 ? { ...defaultStatementBatches, inFlight: config.database.answerStatements } : null,
      commits: config.database.commitStatements > 0 ? { ...defaultStatementBatches, inFlight: config.database.commitStatements } : null,
      claims: config.database.claimStatements > 0 ? { ...defaultStatementBatches, inFlight: config.database.claimStatements } : null,
    },
  });
  if (config.database.migrateOnStart) {
    // Once per start; a lost connection is waited out (SPEC D9), a refused migration is thrown.
    // drizzle/ beside package.json: the same folder whether this runs from src/ (tsx) or a compiled outDir.
    await retryWhileUnavailable("postgres", () => database.migrate(path.join(findServiceDir(), "drizzle")), {
      logger,
      retryIf: isConnectionError,
      secrets: urlSecrets(config.database.url),
      status: options.startup,
    });
  }
  const { store } = database;
  const role = options.role ?? "all";
  const metrics = createMetrics({ tenantLabels: config.metrics.tenantLabels, defaultLabels: { role } });
  const tracing = createTracing({
    serviceName: "foya",
    attributes: { "foya.role": role },
    ...(config.tracing.otlpUrl ? { otlpUrl: config.tracing.otlpUrl } : {}),
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  const redis = createRedisConnection(config.redis);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const bus = createEventBus({
    publisher: redis,
    createSubscriber: () => createRedisConnection(config.redis, { subscriber: true }),
    prefix: config.redis.queuePrefix,
  });
  // Jobs of a tenant with fewer working runs are served first (SPEC X5).
  const load = createTenantLoad(
    () => store.tenantAdmission.workingRunsByTenant(),
    (error) => logger.warn({ err: error }, "reading tenants' load failed"),
  );
  const dispatcher = createDispatcher({
    connection: redis,
    prefix: config.redis.queuePrefix,
    stepAttempts: config.runs.stepAttempts,
    stepShards: config.redis.stepQueueShards,
    hostId: hostIdOf(config),
    place: (runId) => store.placements.placeProject({ runId }, config.workers.livenessTimeoutMs),
    load,
    traceCarrier: () => tracing.carrier(),
  });
  // Every worker counts its provider calls in the same Redis keys (SPEC PR3).
  const providerBudgets = createProviderBudgets({
    redis,
    keyPrefix: config.redis.queuePrefix,
    profiles: config.providers.profiles,
    logger,
  });
  // Shared state looks the same from every process: a worker-only process leaves it to the API's scrape.
  if (role !== "worker") {
    registerStateGauges(metrics, {
      queues: [
        ...dispatcher.stepQueues.map((queue) => ({ label: stepQueueName, queue })),
        { label: toolQueueName, queue: dispatcher.toolQueue },
      ],
      pendingApprovals: () => store.approvals.countPendingApprovals(),
      liveWorkers: async () => (await store.workers.liveWorkers(config.workers.livenessTimeoutMs)).length,
      projectsWithFilesLeft: () => store.projectRemoval.countProjectsWithFilesLeft(),
      providerBudgets: () => Promise.all(config.providers.profiles.map((profile) => providerBudgets.state(profile.name))),
      onError: (error) => logger.warn({ err: error }, "reading a state gauge for /metrics failed"),
    });
  }
  const runsTools = options.role !== "api";
  const sandbox = sandboxFromConfig(config);
  // The probe mounts an overlay in a new namespace: only a process that runs shell commands needs (and has) the right.
  const callLayers: CallLayerSupport = runsTools
    ? createCallLayers({ workspacesDir: config.workspaces.dir, searchPath: systemSearchPath })
    : { ok: false, reason: "an API-only process runs no shell commands" };
  const tooling = {
    identityMode: identityMode(config.sandbox.toolUidBase),
    tenantSettings: createTenantSettingsCache(store),
    workspaceOwnership: createWorkspaceOwnership(),
    knownTrees: createKnownTrees(),
    currentCopies: createCurrentCopies(),
  };
  const mcpViaWorkers = createMcpConnectionsViaWorkers({
    connection: redis,
    bus,
    prefix: config.redis.queuePrefix,
    timeoutMs: config.mcp.requestTimeoutMs,
    pickupMs: config.mcp.requestPickupMs,
    // A project's stdio servers run in its workspace: on the host it is placed on (SPEC W3).
    placeProject: (projectId) => store.placements.placeProject({ projectId }, config.workers.livenessTimeoutMs),
  });
  const hostRequests = createHostRequests({
    connection: redis,
    bus,
    prefix: config.redis.queuePrefix,
    store,
    livenessTimeoutMs: config.workers.livenessTimeoutMs,
    pickupMs: config.workers.hostRequestPickupMs,
    timeoutMs: config.workers.hostRequestTimeoutMs,
  });
  if (runsTools && !config.mcp.sandbox && config.mcp.stdioCommands.size > 0) {
    logger.warn(
      { stdioCommands: [...config.mcp.stdioCommands.keys()] },
      "FOYA_MCP_SANDBOX=false: stdio MCP servers run without the sandbox, beside the host's processes and loopback services (Postgres, Redis). Tenants choose their servers' arguments, so an interpreter on FOYA_MCP_STDIO_COMMANDS (node, python, npx, uvx, bash...) runs any code a tenant names: unsafe unless every tenant is trusted (docs/operations.md)",
    );
  }
  const mcp = runsTools
    ? createMcpConnections({
        logger,
        ...(config.mcp.allowPrivate ? {} : { guardHttp: (url: URL) => refusedHost(url.hostname) }),
        sandbox: mcpSandbox({ runner: sandbox, store, config, ...tooling }),
        stdioCommands: config.mcp.stdioCommands,
        defaults: { stdioPath: config.tools.path, maxMessageBytes: config.mcp.maxMessageBytes },
      })
    : mcpViaWorkers;
  const baseTools = [
    ...builtinTools({ webFetchAllowPrivate: config.tools.webFetchAllowPrivate, agents: config.runs.agentMaxDepth > 0 }),
    ...(await loadToolModules(config.tools.modules)),
    ...(options.extraTools ?? []),
  ];
  const tools = createToolRegistry(baseTools);
  const executor = createToolExecutor(tools);
  const catalogOf = (connections: McpConnections) =>
    createToolCatalog({
      base: { registry: tools, executor },
      baseTools,
      store,
      mcp: connections,
      logger,
      configTtlMs: config.mcp.configTtlMs,
    });
  const catalogViaWorkers = catalogOf(mcpViaWorkers);
  // A step may run on any worker; a project's stdio servers run on the project's host (SPEC W3).
  const catalog = runsTools ? catalogOf(mcpListingsOnHosts(mcp, mcpViaWorkers)) : catalogViaWorkers;
  const providers = createProviderRegistry(config.providers.profiles);
  return {
    config,
    logger,
    store,
    unitOfWork: createUnitOfWork({ store, bus, dispatcher, config, metrics }),
    redis,
    bus,
    dispatcher,
    tools,
    sandbox,
    callLayers,
    runsTools,
    ...tooling,
    executor,
    catalog,
    providers,
    providerBudgets,
    failpoints: createFailpoints(config.testing.failpoints),
    mcp,
    metrics,
    tracing,
    mcpViaWorkers,
    catalogViaWorkers,
    hostRequests,
    async close() {
      await mcp.close();
      await mcpViaWorkers.close();
      await hostRequests.close();
      await tracing.shutdown();
      await dispatcher.close();
      await providers.close();
      await bus.close();
      redis.disconnect();
      await database.close();
    },
  };
}
