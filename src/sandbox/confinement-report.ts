import { readFileSync } from "node:fs";
import type { Config } from "../config.js";
import { findExecutable, systemSearchPath } from "./find-executable.js";
import { seccompFilter } from "./seccomp-filter.js";
import { describeIdentityMode, type IdentityMode } from "./tool-identity.js";

/**
 * What confines tool processes on this host, in words for operators (SPEC
 * S7): shown by `/readyz` under `details`. Readiness itself does not depend
 * on it: an API process runs no tools, and a worker without the sandbox fails
 * each call closed with the reason.
 */
export interface ConfinementReport {
  identity: string;
  limits: string;
  sandbox: string;
  network: string;
}

export function describeConfinement(config: Pick<Config, "sandbox" | "toolLimits">, mode: IdentityMode): ConfinementReport {
  const found = (name: string) => findExecutable(name, systemSearchPath);
  const missing = ["setpriv", "prlimit", "nsenter", "mount"].filter((name) => !found(name));
  const bwrap = found(config.sandbox.bwrapPath);
  const slirp = found(config.sandbox.slirp4netnsPath);
  const limits = config.toolLimits;
  return {
    identity: describeIdentityMode(mode),
    limits:
      `rlimits per process (memory ${limits.memoryBytes} bytes of address space, ${limits.processes} processes per tenant uid, ` +
      `CPU ${limits.cpuSeconds} s, files ${limits.fileSizeBytes} bytes), wall ${limits.wallSeconds} s; ` +
      `temporary space ${limits.tmpBytes} bytes per call, ${limits.backgroundTmpBytes} per background command or MCP server, ` +
      `${limits.tmpBudgetBytes} per tenant on a host; cgroup v2: ${cgroupV2()}` +
      (missing.length
        ? `; missing: ${missing.join(", ")} (util-linux, mount): calls fail closed (nsenter and mount only in workspaces with a repository)`
        : ""),
    sandbox:
      (bwrap ? `bubblewrap at ${bwrap}` : `bubblewrap (${config.sandbox.bwrapPath}) not found: every call fails closed`) +
      (seccompFilter() ? `; seccomp filter for ${process.arch}` : `; no seccomp filter for ${process.arch}: every call fails closed`),
    network: slirp
      ? `slirp4netns at ${slirp}`
      : `slirp4netns (${config.sandbox.slirp4netnsPath}) not found: network-granted and Full Access calls fail closed`,
  };
}

/**
 * Whether this process could confine calls with cgroup v2 (a delegated
 * subtree with the memory and pids controllers). Limits are rlimits either
 * way today; this says what the host would allow.
 */
function cgroupV2(): string {
  const text = (file: string) => {
    try {
      return readFileSync(file, "utf8").trim();
    } catch {
      return undefined;
    }
  };
  const own = text("/proc/self/cgroup")
    ?.split("\n")
    .find((line) => line.startsWith("0::"));
  const controllers = text("/sys/fs/cgroup/cgroup.controllers");
  if (!own || controllers === undefined) return "not used (this host mounts cgroup v1 hierarchies, not v2, at /sys/fs/cgroup)";
  const available = (text(`/sys/fs/cgroup${own.slice(3)}/cgroup.controllers`) ?? "").split(/\s+/);
  const lacking = ["memory", "pids"].filter((name) => !available.includes(name));
  return lacking.length
    ? `not used (no ${lacking.join(" or ")} controller delegated to this process)`
    : "not used (delegation is available; this release limits with rlimits)";
}
