import type { Config } from "../config.js";
import type { EventBus } from "../events/event-bus.js";
import type { Failpoints } from "../failpoints.js";
import type { Logger } from "../logger.js";
import type { McpConnections } from "../mcp/mcp-connections.js";
import type { ToolCatalog } from "../mcp/tool-catalog.js";
import type { Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import type { ProviderRegistry } from "../providers/provider-registry.js";
import type { ProviderBudgets } from "../providers/budget/provider-budgets.js";
import type { Dispatcher } from "../queue/dispatcher.js";
import type { RedisConnection } from "../net/redis-connection.js";
import type { CallLayerSupport } from "../sandbox/overlay/call-layers.js";
import type { SandboxRunner } from "../sandbox/sandbox-runner.js";
import type { Store } from "../store/store.js";
import type { IdentityMode } from "../sandbox/tool-identity.js";
import type { TenantSettingsCache } from "../tenants/tenant-settings.js";
import type { ToolExecutor } from "../tools/execute-tool-call.js";
import type { ToolRegistry } from "../tools/tool-registry.js";
import type { UnitOfWork } from "../unit-of-work/unit-of-work.js";
import type { WorkspaceOwnership } from "../workspace/project-workspace.js";
import type { KnownTrees } from "../checkpoints/known-trees.js";
import type { CurrentCopies } from "../workspace/host-copies.js";

/**
 * Everything the worker's modules may be handed, one field per shared dependency. The
 * worker's composition roots (main.ts, worker-runtime.ts) pass the process's `Services`,
 * which satisfies it structurally; every other module of src/worker declares the few
 * fields it uses (`Pick<JobDeps, ...>`) and never sees `Services` (.dependency-cruiser.cjs).
 * Postgres is reached through `store` (a statement on its own) and `unitOfWork` (a transaction
 * and its effects after commit), never through a pool or a connection.
 */
export interface JobDeps {
  config: Config;
  logger: Logger;
  /** The store's repositories (`store.runs`, `store.toolCalls`, ...), each statement on the shared pool. */
  store: Store;
  /** Transactions over the store (`fx.store.*`) whose events, jobs and cancels go out once they have committed. */
  unitOfWork: UnitOfWork;
  /** The command connection queues share (the MCP request worker's replies). */
  redis: RedisConnection;
  bus: EventBus;
  dispatcher: Dispatcher;
  metrics: Metrics;
  tracing: Tracing;
  failpoints: Failpoints;
  providers: ProviderRegistry;
  /** Provider budgets and pauses shared by every worker (SPEC PR3). */
  providerBudgets: ProviderBudgets;
  tenantSettings: TenantSettingsCache;
  /** Per project: built-in tools plus its MCP servers' (SPEC M1). */
  catalog: ToolCatalog;
  /** The built-in tools, for a run that no longer exists (its claim then finds it gone). */
  tools: ToolRegistry;
  executor: ToolExecutor;
  mcp: McpConnections;
  sandbox: SandboxRunner;
  callLayers: CallLayerSupport;
  identityMode: IdentityMode;
  workspaceOwnership: WorkspaceOwnership;
  /** The last checkpointed tree of each project this process captured (SPEC W1). */
  knownTrees: KnownTrees;
  /** The host copies this process found current (SPEC W3). */
  currentCopies: CurrentCopies;
}
