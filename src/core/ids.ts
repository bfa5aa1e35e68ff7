/** Prefixed random ids: the prefix tells a reader of logs what kind of row an id names. */
export type IdPrefix =
  | "ten"
  | "key"
  | "prj"
  | "ses"
  | "run"
  | "stp"
  | "msg"
  | "call"
  | "art"
  | "fch"
  | "apr"
  | "cmd"
  | "whk"
  | "whd"
  | "wha"
  | "mcp"
  | "ckp"
  | "brn";

/**
 * An id's type carries its prefix, so one kind of id passed where another is expected (a
 * session id as a tenant id, two ids swapped in a statement's parameters) is a type error.
 * A plain string becomes an id only at an edge: `newId` makes one, `parseId` checks one
 * that came from outside (a request, a job's data), and the schema types the rows read back.
 */
export type Id<P extends IdPrefix> = `${P}_${string}`;

export type TenantId = Id<"ten">;
export type ApiKeyId = Id<"key">;
export type ProjectId = Id<"prj">;
export type SessionId = Id<"ses">;
export type RunId = Id<"run">;
export type StepId = Id<"stp">;
export type MessageId = Id<"msg">;
export type CallId = Id<"call">;
export type ArtifactId = Id<"art">;
export type FileChangeId = Id<"fch">;
export type ApprovalId = Id<"apr">;
export type CommandId = Id<"cmd">;
export type WebhookId = Id<"whk">;
export type DeliveryId = Id<"whd">;
export type AttemptId = Id<"wha">;
export type McpServerId = Id<"mcp">;
export type CheckpointId = Id<"ckp">;
export type BranchId = Id<"brn">;

/** The id `raw` names when it has the prefix `prefix` and the shape ids have; otherwise null (an unknown id, to the caller). */
export function parseId<P extends IdPrefix>(prefix: P, raw: unknown): Id<P> | null {
  if (typeof raw !== "string" || raw.length > 128 || !raw.startsWith(`${prefix}_`)) return null;
  return /^[A-Za-z0-9_-]+$/.test(raw) ? (raw as Id<P>) : null;
}

/** `raw` as an id of `prefix`, for values the service itself wrote (a job's data, a config row); throws when it is not one. */
export function asId<P extends IdPrefix>(prefix: P, raw: string): Id<P> {
  const id = parseId(prefix, raw);
  if (id === null) throw new Error(`not a ${prefix} id: ${JSON.stringify(raw.slice(0, 64))}`);
  return id;
}
