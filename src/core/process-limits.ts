/**
 * What bounds the processes of one tool call (SPEC S7). A deployment sets the
 * defaults (`FOYA_TOOL_*`); an operator may override any of them per tenant
 * through the admin API. Enforced with rlimits set in front of bubblewrap
 * (`prlimit`), plus the sizes of the sandbox's private tmpfs (within the
 * tenant's temporary-space budget) and the call's wall-clock timer; see
 * `docs/architecture/sandbox.md` (Limits) for what each one bounds.
 */
export interface ProcessLimits {
  /** Address space per process (RLIMIT_AS), bytes. A memory bomb fails its allocation, not the host. */
  memoryBytes: number;
  /**
   * Processes and threads of the tenant's host uid (RLIMIT_NPROC counts per real uid, across
   * every call of the tenant on this host): a fork bomb stops at this many.
   */
  processes: number;
  /** CPU time per process (RLIMIT_CPU), seconds: SIGXCPU, then SIGKILL one second later. */
  cpuSeconds: number;
  /** Largest file a process may write (RLIMIT_FSIZE), bytes: the writer gets SIGXFSZ. */
  fileSizeBytes: number;
  /** Wall-clock time of a foreground call, seconds: a longer `timeoutMs` is cut to it. */
  wallSeconds: number;
  /**
   * Temporary space of a foreground call, bytes: its private /tmp, /var/tmp and
   * /dev/shm together (tmpfs, host memory; the last two get an eighth each, at
   * most 64 MiB).
   */
  tmpBytes: number;
  /** Temporary space of a background command or a stdio MCP server, which live long, bytes (split as `tmpBytes`). */
  backgroundTmpBytes: number;
  /**
   * Temporary space all the tenant's running sandboxes on one host may hold
   * together, bytes: a sandbox takes its share when it starts (less when less is
   * left, down to 16 MiB; below that the call is refused) and gives it back
   * when it ended (`src/sandbox/temp-budget.ts`).
   */
  tmpBudgetBytes: number;
  /** Background commands a tenant may have running at once, across every worker. */
  backgroundCommands: number;
  /** Longest a background command may run, seconds: then it is killed and says why. */
  backgroundSeconds: number;
}

export const defaultProcessLimits: Readonly<ProcessLimits> = Object.freeze({
  memoryBytes: 4 * 1024 ** 3,
  processes: 512,
  cpuSeconds: 600,
  fileSizeBytes: 4 * 1024 ** 3,
  wallSeconds: 600,
  tmpBytes: 1024 ** 3,
  backgroundTmpBytes: 64 * 1024 ** 2,
  tmpBudgetBytes: 4 * 1024 ** 3,
  backgroundCommands: 16,
  backgroundSeconds: 2 * 3600,
});

const processLimitKeys = Object.freeze(Object.keys(defaultProcessLimits) as Array<keyof ProcessLimits>);

/** The deployment's limits with a tenant's overrides on top (each key optional). */
export function mergeLimits(base: Readonly<ProcessLimits>, overrides: Partial<ProcessLimits> | null | undefined): ProcessLimits {
  const merged = { ...base };
  for (const key of processLimitKeys) {
    const value = overrides?.[key];
    if (typeof value === "number" && Number.isFinite(value) && value > 0) merged[key] = Math.floor(value);
  }
  return merged;
}
