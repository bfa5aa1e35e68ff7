import { Queue } from "bullmq";
import { FoyaError } from "../errors.js";
import type { EventBus } from "../events/event-bus.js";
import type { RedisConnection } from "../net/redis-connection.js";
import type { ProjectId, TenantId } from "../ids.js";
import { hostRequestQueueName } from "../queue/job-types.js";
import { createWorkerReplies, isMovedReply } from "../queue/worker-replies.js";
import { createWorkerRequestAsker } from "../queue/worker-request-asker.js";
import type { Store } from "../store/store.js";
import {
  type HostOperation,
  type HostReply,
  type HostRequest,
  type HostRequestJobData,
  type HostRequestValues,
  hostReplyKeyName,
  maxHostReplyBytes,
} from "./host-request.js";

export interface HostRequestsOptions {
  /** The shared command connection: the queues and the reply keys. */
  connection: RedisConnection;
  bus: Pick<EventBus, "onMcpReply" | "publishMcpReply">;
  prefix: string;
  store: Pick<Store, "placements">;
  /** How long a host may be silent before its placements are not its own (`FOYA_LIVENESS_TIMEOUT_MS`). */
  livenessTimeoutMs: number;
  /** How long a request may wait for a worker of the host to take it (`FOYA_HOST_REQUEST_PICKUP_MS`). */
  pickupMs: number;
  /** How long a request may take, from enqueue to reply (`FOYA_HOST_REQUEST_TIMEOUT_MS`). */
  timeoutMs: number;
}

export interface HostRequests {
  /**
   * The operation's value from the host the project is placed on (src/hosts/host-request.ts), or
   * the FoyaError the API answers: the host's refusal as it is (404, 409, 400); 503 `no_worker`
   * when no worker of a live host took the request; 504 `worker_timeout` when it did not answer in
   * time. `placing: "place"` places the project on a live host when it has none (its folder is
   * rebuilt there from its latest checkpoint); `"placed"` asks only a host it is placed on now.
   */
  ask<K extends HostOperation>(
    project: { tenantId: TenantId; projectId: ProjectId },
    request: Extract<HostRequest, { operation: K }>,
    placing?: "place" | "placed",
  ): Promise<HostRequestValues[K]>;
  close(): Promise<void>;
}

/** A project moved between hosts once more while it was asked again: the client tries later. */
const askAttempts = 2;

export function createHostRequests(options: HostRequestsOptions): HostRequests {
  const { connection, bus, prefix } = options;
  const replies = createWorkerReplies({
    redis: connection,
    bus,
    prefix,
    keyName: hostReplyKeyName,
    maxBytes: maxHostReplyBytes,
    tooLarge: (bytes): HostReply<never> => ({
      ok: false,
      code: "failed",
      message: `The host's answer is ${bytes} bytes, too large to pass on.`,
    }),
  });
  const asker = createWorkerRequestAsker({ bus, replies });
  const queues = new Map<string, Queue<HostRequestJobData>>();
  const queueOf = (hostId: string) => {
    let queue = queues.get(hostId);
    if (!queue) {
      queue = new Queue<HostRequestJobData>(hostRequestQueueName(hostId), { connection, prefix });
      // Connection errors are the shared connection's, logged by its own listener (src/services.ts).
      queue.on("error", () => {});
      queues.set(hostId, queue);
    }
    return queue;
  };

  const placementOf = async (projectId: ProjectId, placing: "place" | "placed") => {
    if (placing === "place") return options.store.placements.placeProject({ projectId }, options.livenessTimeoutMs);
    const placement = await options.store.placements.placementOf(projectId, options.livenessTimeoutMs);
    return placement?.live && placement.hostId !== null ? { hostId: placement.hostId, epoch: placement.epoch } : undefined;
  };

  return {
    async ask(project, request, placing = "place") {
      for (let attempt = 0; attempt < askAttempts; attempt++) {
        const placement = await placementOf(project.projectId, placing);
        if (!placement) throw noHost();
        const job = {
          name: request.operation,
          idPrefix: "host",
          data: (meta: { replyTo: string; deadline: number }): HostRequestJobData => ({
            tenantId: project.tenantId,
            projectId: project.projectId,
            placement: { hostId: placement.hostId, epoch: placement.epoch },
            request,
            ...meta,
          }),
        };
        const asked = await asker.ask(queueOf(placement.hostId), job, { pickupMs: options.pickupMs, timeoutMs: options.timeoutMs });
        switch (asked.kind) {
          case "reply":
            if (isMovedReply(asked.reply)) continue;
            return repliedValue(asked.reply as HostReply<HostRequestValues[typeof request.operation]>);
          case "not_taken":
            throw new FoyaError(
              "no_worker",
              `No worker of the project's host (${placement.hostId}) took the request within ${asked.waitedMs} ms; try again shortly.`,
              { retryAfterSeconds: 1 },
            );
          case "timeout":
            throw new FoyaError(
              "worker_timeout",
              `The project's host (${placement.hostId}) did not answer within ${options.timeoutMs} ms.`,
            );
          case "closed":
            throw new FoyaError("unavailable", "The API is shutting down; try again.", { retryAfterSeconds: 1 });
          default: {
            const unknown: never = asked;
            throw new Error(`unknown answer ${JSON.stringify(unknown)}`);
          }
        }
      }
      throw new FoyaError("no_worker", "The project is moving to another host; try again shortly.", { retryAfterSeconds: 1 });
    },
    async close() {
      await asker.close();
      await Promise.all([...queues.values()].map((queue) => queue.close()));
    },
  };
}

function noHost(): FoyaError {
  return new FoyaError("no_worker", "No worker runs to hold the project's workspace (no live host); try again once a worker runs.", {
    retryAfterSeconds: 1,
  });
}

function repliedValue<T>(reply: HostReply<T>): T {
  if (reply.ok) return reply.value;
  if (reply.code === "failed") throw new FoyaError("internal", `the project's host failed: ${reply.message}`);
  return throwRefusal(reply);
}

function throwRefusal(reply: Extract<HostReply<unknown>, { code: "not_found" | "conflict" | "bad_request" }>): never {
  throw new FoyaError(reply.code, reply.message, reply.current ? { current: reply.current } : undefined);
}
