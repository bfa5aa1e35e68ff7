import { timingSafeEqual } from "node:crypto";

/** Whether two secrets (tokens, signatures) are equal, in time that does not depend on where they differ. */
export function sameSecret(given: Uint8Array, expected: Uint8Array): boolean {
  return given.length === expected.length && timingSafeEqual(given, expected);
}
