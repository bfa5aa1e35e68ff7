import { randomBytes } from "node:crypto";

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
  | "mcp";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
