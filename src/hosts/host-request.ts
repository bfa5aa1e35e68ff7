import { z } from "zod";
import type { RewindTip } from "../branches/capture-rewind-tip.js";
import type { FileChangeWire } from "../files/file-change-wire.js";
import type { TrashPageWire } from "../files/project-trash-entries.js";
import { type FileChangeId, parseId, type ProjectId, type SessionId, type TenantId } from "../ids.js";

/**
 * What the API asks the host a project is placed on to do with its workspace (SPEC W3): the API
 * touches no workspace and needs no workspace root. The sequence, as for MCP requests
 * (src/mcp/mcp-request.ts, src/queue/worker-request-asker.ts): the API reads (or makes) the
 * project's placement and adds a job to that host's queue (`hostRequestQueueName`), with ids, the
 * placement and small request values only, and waits. A worker of the host checks that the
 * project is still placed on it at that epoch (else it answers `movedReply` and the API asks the
 * new host once), re-checks in Postgres that the project is the tenant's and live, makes its copy
 * of the workspace this placement's (rebuilt from the latest checkpoint when missing), does the
 * operation with the code the API used to run, and stores the reply under a Redis key of the
 * job's, telling the API on its reply channel. A request no worker took within
 * `FOYA_HOST_REQUEST_PICKUP_MS` is withdrawn (503 `no_worker`); one taken but unanswered within
 * `FOYA_HOST_REQUEST_TIMEOUT_MS` answers 504 `worker_timeout`.
 */

/** One operation; arguments are small values from the HTTP request. */
export type HostRequest =
  /** `POST /v1/file-changes/:id/revert` (SPEC F3). */
  | { operation: "revert-file-changes"; changeId: FileChangeId; andLater: boolean }
  /** `GET /v1/projects/:id/trash` (SPEC F4). */
  | { operation: "list-trash"; limit: number; after: string | null }
  /** `POST /v1/projects/:id/trash/:entryId/restore` (SPEC F4). */
  | { operation: "restore-trash-entry"; entryId: string }
  /** A rewind's look at the folder as it stands (SPEC W2): kept as `before_rewind` when it differs. */
  | { operation: "capture-rewind-tip"; sessionId: SessionId };

export type HostOperation = HostRequest["operation"];

/** What each operation answers when it succeeds (JSON: no dates, no buffers). */
export interface HostRequestValues {
  "revert-file-changes": { reverted: FileChangeWire[] };
  "list-trash": TrashPageWire;
  "restore-trash-entry": { path: string };
  "capture-rewind-tip": RewindTip;
}

/**
 * A host's answer. A refusal carries the code and message the API answers with, as it did when it
 * ran the operation itself (404, 409 with the record as it is now, 400); `failed` is the host's own
 * failure, logged there.
 */
export type HostReply<T> =
  | { ok: true; value: T }
  | { ok: false; code: "not_found" | "conflict" | "bad_request"; message: string; current?: Record<string, unknown> }
  | { ok: false; code: "failed"; message: string };

/** Job data: ids, the placement and the request only. */
export interface HostRequestJobData {
  tenantId: TenantId;
  projectId: ProjectId;
  /** The placement the request was routed by: served only while the project is still placed there. */
  placement: { hostId: string; epoch: number };
  request: HostRequest;
  /** When the API stops waiting (epoch ms): a worker that takes the job later drops it. */
  deadline: number;
  /** The asking process's reply channel. */
  replyTo: string;
}

const idOf = <P extends "ten" | "prj" | "ses" | "fch">(prefix: P, what: string) =>
  z.string().refine((value) => parseId(prefix, value) !== null, `a ${what} id`);

/** Parsed where a worker takes the job (schema at every boundary); nothing else of the job is trusted. */
const hostRequestJobDataSchema = z.object({
  tenantId: idOf("ten", "tenant"),
  projectId: idOf("prj", "project"),
  placement: z.object({ hostId: z.string().min(1), epoch: z.number().int().min(1) }),
  request: z.discriminatedUnion("operation", [
    z.object({ operation: z.literal("revert-file-changes"), changeId: idOf("fch", "file change"), andLater: z.boolean() }),
    z.object({
      operation: z.literal("list-trash"),
      limit: z.number().int().min(1).max(500),
      after: z
        .string()
        .regex(/^[0-9a-f-]{36}$/)
        .nullable(),
    }),
    z.object({ operation: z.literal("restore-trash-entry"), entryId: z.string().regex(/^[0-9a-f-]{36}$/) }),
    z.object({ operation: z.literal("capture-rewind-tip"), sessionId: idOf("ses", "session") }),
  ]),
  deadline: z.number(),
  replyTo: z.string().min(1),
});

/** The job data as parsed: ids branded again (they were checked by the schema). */
export function parseHostRequestJob(data: unknown): { ok: true; data: HostRequestJobData } | { ok: false; issues: string } {
  const parsed = hostRequestJobDataSchema.safeParse(data);
  if (!parsed.success)
    return { ok: false, issues: parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ") };
  return { ok: true, data: parsed.data as HostRequestJobData };
}

/** Where host requests' replies are kept (`<prefix>:host-reply:<job>`). */
export const hostReplyKeyName = "host-reply";

/** A reply larger than this (its JSON, in bytes) is replaced by a `failed` one: it passes through Redis and the API's memory. */
export const maxHostReplyBytes = 16 * 1024 * 1024;
