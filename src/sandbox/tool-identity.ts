import type { ProcessIdentity } from "../core/process-identity.js";

/**
 * Who a tenant's tool processes are on the host (SPEC S7): never root.
 *
 * A service started as root steps down for every process a tool or an MCP
 * server starts: tenant number n runs as uid and gid `base + n`, a number no
 * login and no other tenant has. So a fork bomb's RLIMIT_NPROC (counted per
 * real uid) stops at that tenant's processes, files the tenant's processes
 * write belong to the tenant (and git, run on the host by anyone else, refuses
 * the repository as "dubious ownership"), and one tenant's processes cannot
 * signal or read another's. Inside the sandbox that uid appears as 0.
 *
 * A service started unprivileged cannot switch users: its tool processes keep
 * its uid (user namespaces still confine them), and every tenant shares it.
 * `/readyz` says which of the two a process runs.
 */

export type IdentityMode = { kind: "per-tenant"; base: number } | { kind: "service"; uid: number; gid: number };

export function identityMode(base: number): IdentityMode {
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return { kind: "per-tenant", base };
  return { kind: "service", uid, gid: process.getgid?.() ?? uid };
}

/** The identity of tenant slot `slot` under `mode`. */
export function toolIdentity(mode: IdentityMode, slot: number): ProcessIdentity {
  if (mode.kind === "service") return { uid: mode.uid, gid: mode.gid };
  if (!Number.isInteger(slot) || slot < 1) throw new Error(`invalid tenant uid slot ${slot}`);
  return { uid: mode.base + slot, gid: mode.base + slot };
}

/** Words for operators: what `/readyz` shows. */
export function describeIdentityMode(mode: IdentityMode): string {
  return mode.kind === "per-tenant"
    ? `per-tenant uids from ${mode.base + 1} (the service runs as root and steps down)`
    : `the service's own uid ${mode.uid}, shared by every tenant (start the service as root for per-tenant uids)`;
}
