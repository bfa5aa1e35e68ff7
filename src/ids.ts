import { randomBytes } from "node:crypto";
import type { Id, IdPrefix } from "./core/ids.js";

export * from "./core/ids.js";

/** A new random id of this kind: the prefix, then 96 random bits. */
export function newId<P extends IdPrefix>(prefix: P): Id<P> {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
