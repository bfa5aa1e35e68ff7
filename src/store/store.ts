import { drizzle } from "drizzle-orm/node-postgres";
import type pg from "pg";
import type { Database } from "../db/client.js";
import * as schema from "../db/schema.js";
import { defaultStatementBatches, statementBatcher, type StatementBatchOptions } from "./statement-batches.js";
import { apiKeysRepository } from "./api-keys.js";
import { approvalsRepository } from "./approvals.js";
import { artifactsRepository } from "./artifacts.js";
import { blobsRepository } from "./blobs.js";
import { branchesRepository } from "./branches.js";
import { checkpointsRepository } from "./checkpoints.js";
import { commandsRepository } from "./commands.js";
import { eventsRepository } from "./events.js";
import { fileChangesRepository } from "./file-changes.js";
import { healthRepository } from "./health.js";
import { mcpServersRepository } from "./mcp-servers.js";
import { messagesRepository } from "./messages.js";
import { modelUsageRepository } from "./model-usage.js";
import { projectsRepository } from "./owned-project.js";
import { projectRemovalRepository } from "./project-removal.js";
import type { Handles } from "./repository.js";
import { runsRepository } from "./runs.js";
import { sessionsRepository } from "./sessions.js";
import { stepsRepository, type CommitRequest, type StepAttempt, type StepResult } from "./steps.js";
import type { ClaimedRun } from "./run-rows.js";
import type { BatchClaimRequest, StepClaimRequest } from "./run-claims.js";
import { tenantAdmissionRepository } from "./tenant-admission.js";
import { tenantsRepository } from "./tenants.js";
import { toolCallSlotsRepository } from "./tool-call-slots.js";
import { toolCallsRepository, type AnswerRequest } from "./tool-calls.js";
import { webhookDeliveriesRepository } from "./webhook-deliveries.js";
import { webhooksRepository } from "./webhooks.js";
import { workersRepository } from "./workers.js";
import { placementsRepository } from "./placements.js";

/**
 * The store as one object, in the shape of bullmq's `IQueueBackend`: one repository per store
 * module (`store.runs`, `store.toolCalls`, ...), each a set of named, guarded statements, and
 * `store.transaction(work)`, whose `StoreTx` has the same repositories bound to one transaction.
 * Callers hold this object, never a pool, a connection or drizzle's handle: those stay here.
 */

const repositories = {
  apiKeys: apiKeysRepository,
  approvals: approvalsRepository,
  artifacts: artifactsRepository,
  branches: branchesRepository,
  blobs: blobsRepository,
  checkpoints: checkpointsRepository,
  commands: commandsRepository,
  events: eventsRepository,
  fileChanges: fileChangesRepository,
  health: healthRepository,
  mcpServers: mcpServersRepository,
  messages: messagesRepository,
  modelUsage: modelUsageRepository,
  projects: projectsRepository,
  projectRemoval: projectRemovalRepository,
  runs: runsRepository,
  sessions: sessionsRepository,
  steps: stepsRepository,
  tenantAdmission: tenantAdmissionRepository,
  tenants: tenantsRepository,
  toolCallSlots: toolCallSlotsRepository,
  toolCalls: toolCallsRepository,
  webhookDeliveries: webhookDeliveriesRepository,
  webhooks: webhooksRepository,
  workers: workersRepository,
  placements: placementsRepository,
};

/** Every repository of the store, bound to one set of handles. */
export type Repositories = { readonly [K in keyof typeof repositories]: ReturnType<(typeof repositories)[K]> };

/** The repositories bound to one open transaction: every statement runs on its connection. */
export type StoreTx = Repositories;

export interface Store extends Repositories {
  /**
   * BEGIN, `work`, COMMIT on one pooled connection; ROLLBACK when `work` throws. One attempt:
   * a caller that retries (`withRetry`) also resets what it gathered for after the commit.
   */
  transaction<T>(work: (tx: StoreTx) => Promise<T>): Promise<T>;
}

/**
 * Each repository is bound on first use, once per handles: a transaction that touches three
 * repositories binds three (the hot path opens one or two transactions per step).
 */
class BoundRepositories {
  constructor(readonly handles: Handles) {}
}
for (const [name, make] of Object.entries(repositories)) {
  Object.defineProperty(BoundRepositories.prototype, name, {
    get(this: BoundRepositories) {
      const value = make(this.handles);
      Object.defineProperty(this, name, { value });
      return value;
    },
  });
}

function bind(handles: Handles): Repositories {
  return new BoundRepositories(handles) as unknown as Repositories;
}

/** A result whose file changes are in the workspace already: a door write's record must not wait in memory. */
function carriesFileChanges(request: AnswerRequest): boolean {
  return (request.outcome.fileChanges?.length ?? 0) > 0;
}

/** Which writes go in batches outside a transaction (statement-batches.ts); null: one statement per write. */
export interface StoreBatches {
  /** Tool results (`answer_calls`, FOYA_ANSWER_STATEMENTS). */
  answers: StatementBatchOptions | null;
  /** Step commits (`commit_steps`, FOYA_COMMIT_STATEMENTS). */
  commits: StatementBatchOptions | null;
  /** Step and batch claims (`claim_steps`, `claim_batches`; FOYA_CLAIM_STATEMENTS of each kind). */
  claims: StatementBatchOptions | null;
}

const defaultStoreBatches: StoreBatches = {
  answers: defaultStatementBatches,
  commits: defaultStatementBatches,
  claims: defaultStatementBatches,
};

export function createStore(pool: pg.Pool, batches: StoreBatches = defaultStoreBatches): Store {
  const handles = { db: drizzle(pool, { schema }), pg: pool };
  const store = bind(handles);
  // Outside a transaction, writes that arrive together go as one statement (statement-batches.ts);
  // inside one, `tx.toolCalls.answerCall`, `tx.steps.commitStep` and the claims stay their own
  // statements on the transaction's connection.
  if (batches.answers) {
    const toolCalls = toolCallsRepository(handles);
    const answerCall = statementBatcher(
      (requests: readonly AnswerRequest[]) => toolCalls.answerCalls(requests),
      (request): string => request.run.sessionId,
      batches.answers,
      carriesFileChanges,
    );
    Object.defineProperty(store, "toolCalls", { value: { ...toolCalls, answerCall } });
  }
  if (batches.commits) {
    const steps = stepsRepository(handles);
    const commit = statementBatcher(
      (requests: readonly CommitRequest[]) => steps.commitSteps(requests),
      (request): string => request.held.sessionId,
      batches.commits,
    );
    Object.defineProperty(store, "steps", {
      value: { ...steps, commitStep: (held: ClaimedRun, step: StepAttempt, result: StepResult) => commit({ held, step, result }) },
    });
  }
  if (batches.claims) {
    const runs = runsRepository(handles);
    const claimStep = statementBatcher(
      (requests: readonly StepClaimRequest[]) => runs.claimSteps(requests),
      (request): string => request.runId,
      batches.claims,
    );
    // Two rows of one session in a statement would bump its event counter twice: the statement
    // fails on the events' key and its rows go one per statement (a run is its session's active one).
    const claimBatch = statementBatcher(
      (requests: readonly BatchClaimRequest[]) => runs.claimBatches(requests),
      (request): string => request.runId,
      batches.claims,
    );
    Object.defineProperty(store, "runs", { value: { ...runs, claimStep, claimBatch } });
  }
  return Object.assign(store, {
    transaction<T>(work: (tx: StoreTx) => Promise<T>): Promise<T> {
      return inTransaction(pool, (client, db) => work(bind({ db, pg: client })));
    },
  });
}

/** A drizzle handle per pooled connection, made once: building one reads the whole schema. */
const drizzleOfClient = new WeakMap<pg.PoolClient, Database>();

/**
 * BEGIN, work, COMMIT on one pooled connection, which both drizzle and the
 * store's prepared statements use. A connection whose ROLLBACK failed is
 * dropped from the pool instead of being reused in an unknown state.
 */
async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient, db: Database) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    let db = drizzleOfClient.get(client);
    if (!db) {
      db = drizzle(client, { schema });
      drizzleOfClient.set(client, db);
    }
    await client.query("begin");
    try {
      const value = await work(client, db);
      await client.query("commit");
      return value;
    } catch (error) {
      await client.query("rollback").catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
