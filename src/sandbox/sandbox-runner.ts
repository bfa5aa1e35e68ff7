import { lstatSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import path from "node:path";
import { findExecutable } from "./find-executable.js";
import { createGitRepositories, maxGitSearchDepth } from "../workspace/git-repositories.js";
import { gitGuardFailureMessage, guardGitMetadata, type GitGuardTools, type GitMetadata } from "./git-guard.js";
import { bwrapArguments, type HostTree, type SandboxLayout } from "./mount-plan.js";
import { overlayOptions, overlayWrap, type OverlayFolders } from "./overlay/overlay-mount.js";
import type { ProcessLimits } from "../core/process-limits.js";
import { sandboxResolvConf } from "./sandbox-network.js";
import { gatedCommand } from "./sandbox-gate.js";
import { seccompFilter } from "./seccomp-filter.js";
import { createTempBudget } from "./temp-budget.js";
import type { ProcessIdentity } from "../core/process-identity.js";

/**
 * The sandbox runner (SPEC S1, S3): confines every process a tool starts
 * outside Full Access, with bubblewrap. Built once from configuration; each
 * call answers the argv to run, or why the sandbox cannot be set up (the
 * caller then fails the call: never a fallback to running unconfined).
 *
 * Design: a whitelist. The sandbox root is empty; only the system trees below
 * are shown, read-only. `--ro-bind / /` with holes would show every path
 * nobody thought of (a new secret, another service's socket, a mounted
 * volume); here a forgotten path is absent, and a missing toolchain is a
 * visible failure fixed with FOYA_SANDBOX_READONLY.
 */

/** Shown read-only when present: programs, their libraries and configuration. */
export const systemReadOnlyPaths: readonly string[] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

/**
 * Always hidden, also inside a shown tree: credentials, the configuration of
 * other services (which may hold passwords), and paths that only a configured
 * extra read-only tree (say `/var`) could expose.
 */
const defaultHiddenPaths: readonly string[] = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  "/etc/ssl/private",
  "/etc/foya",
  "/etc/postgresql",
  "/etc/redis",
  "/etc/mysql",
  "/etc/rabbitmq",
  "/etc/mosquitto",
  "/root",
  "/home",
  "/run",
  "/var/run",
  "/var/lib/postgresql",
  "/var/lib/redis",
  "/var/lib/mysql",
];

export interface SandboxOptions {
  /** The bwrap binary: a path, or a name looked up on `searchPath`. */
  bwrapPath: string;
  /** slirp4netns, needed only by network-granted calls: a path, or a name looked up on `searchPath`. Default "slirp4netns". */
  slirp4netnsPath?: string;
  searchPath: string;
  /** Every tenant's workspaces live below it; hidden except the one workspace. */
  workspacesDir: string;
  /** Service paths to hide: its install directory, its working directory (see `sandbox-from-config.ts`). */
  servicePaths: readonly string[];
  /** Extra hidden paths, added to `defaultHiddenPaths`. */
  hiddenPaths?: readonly string[];
  /** Extra trees shown read-only at their real path (a toolchain outside /usr and /opt). */
  readOnlyPaths?: readonly string[];
  /** Folders of a workspace searched for repositories before each call (default 20,000); a larger workspace is refused (S11). */
  gitSearchFolders?: number;
}

export interface SandboxRequest {
  command: string;
  /** The workspace: writable, and the working directory. */
  workspaceDir: string;
  /**
   * Connect the sandbox to the outside through slirp4netns, in its own network
   * namespace (never the host's: the host's loopback stays unreachable); false
   * gives an empty network namespace (loopback only).
   */
  network: boolean;
  /** `confined` (the whitelist) or `host` (Full Access: the host's files as the tenant's uid sees them). See `SandboxLayout`. */
  view: "confined" | "host";
  /** The host uid and gid the processes run as (SPEC S7): never root. */
  identity: ProcessIdentity;
  /** rlimits and temporary space; `cpuSeconds: null` for long-lived servers (MCP), whose CPU time adds up over days. */
  limits: Omit<ProcessLimits, "cpuSeconds"> & { cpuSeconds: number | null };
  /**
   * `call` (default): a foreground call, whose temporary space is `limits.tmpBytes`.
   * `background`: a process that outlives its call (a background command, an
   * MCP server), which gets the smaller `limits.backgroundTmpBytes`.
   */
  lifetime?: "call" | "background";
  /**
   * Layer the workspace (SPEC X7): the command sees the workspace through an
   * overlay whose writes land in `upperDir` (see `overlay/overlay-mount.ts`).
   * Needs a root worker; the caller applies the upper folder afterwards.
   */
  overlay?: OverlayFolders;
}

/**
 * How to start the confined `bash -c command`: bwrap reports its child's
 * start and end as JSON on `statusFd`. With the network, `file` is unshare,
 * which runs bwrap in a new user and network namespace.
 */
export interface SandboxInvocation {
  file: string;
  args: string[];
  statusFd: number;
  /**
   * Set for a network-granted call (see `sandbox-network.ts`): bwrap waits on
   * `blockFd` (one byte starts the command) until `slirp4netns` has connected
   * the sandbox; `resolvConf.content` is written to `resolvConf.fd` (and the
   * fd closed) for bwrap to bind as the sandbox's resolv.conf.
   */
  network: { slirp4netns: string; blockFd: number; resolvConf: { fd: number; content: string } | null } | null;
  /** The seccomp program (`seccomp-filter.ts`) to write to `fd`, where bwrap reads it. */
  seccomp: { fd: number; program: Buffer };
  /**
   * Set when the workspace holds git metadata to protect: the command waits at
   * a gate (`sandbox-start.ts`) until `guard`, given the host pid of the
   * sandbox's init, has protected it from inside the sandbox (`git-guard.ts`).
   */
  gate: { readyFd: number; goFd: number; guard(initPid: number): Promise<{ ok: true } | { ok: false; message: string }> } | null;
  /**
   * Gives the sandbox's temporary space back to the tenant's budget
   * (`temp-budget.ts`): call once the process has ended, or when it will never
   * start. Safe to call more than once.
   */
  release(): void;
}

export type SandboxPlan = ({ ok: true } & SandboxInvocation) | { ok: false; message: string };

export interface SandboxRunner {
  plan(request: SandboxRequest): Promise<SandboxPlan>;
  /**
   * The words that run a command as `identity` within `limits`, without the
   * sandbox (unconfined MCP servers, an operator's choice): never as root.
   */
  stepDown(request: Pick<SandboxRequest, "identity" | "limits">): { ok: true; args: string[] } | { ok: false; message: string };
}

/** The is_error text for a call the sandbox could not confine: why, and how to fix it. */
export function sandboxUnavailableMessage(reason: string): string {
  return (
    `Sandbox unavailable: ${reason}. Every command runs inside the bubblewrap sandbox as the tenant's own unprivileged user (Full Access too, with a wider view of the host) and is never run unconfined. ` +
    "To fix: install the Debian package bubblewrap on the worker host (apt-get install bubblewrap) or set FOYA_BWRAP_PATH to the bwrap binary, " +
    "and let the worker create namespaces (in a container: a seccomp profile that allows unshare and mount); util-linux's setpriv and prlimit must be on the tool PATH too."
  );
}

/**
 * The is_error text for a network-granted call whose network could not be
 * set up: why, and how to fix it. Such a call never falls back to the host's
 * network namespace.
 */
export function sandboxNetworkUnavailableMessage(reason: string): string {
  return (
    `Sandbox unavailable: ${reason}. A command granted the network runs in the bubblewrap sandbox with its own network namespace, ` +
    "connected to the outside by slirp4netns (so the host's loopback services stay out of reach), and never on the host's network. " +
    "To fix: install the Debian package slirp4netns on the worker host (apt-get install slirp4netns) or set FOYA_SLIRP4NETNS_PATH to the slirp4netns binary, " +
    "have bubblewrap working (see calls without the network), and run the worker as root (the sandbox's network namespace is made with unshare and entered by slirp4netns, which confines itself in a mount namespace; in a container: CAP_SYS_ADMIN and /dev/net/tun); " +
    "or run the command without the network grant."
  );
}

const statusFd = 3;
const blockFd = 4;
const resolvConfFd = 5;
const seccompFd = 6;
const gateFds = { readyFd: 7, goFd: 8 };
/** A sandbox whose full temporary space does not fit in what the tenant's others left gets less, but not below this. */
const minimumTempBytes = 16 * 1024 * 1024;
const within = (p: string, ancestor: string) => ancestor === "/" || p === ancestor || p.startsWith(`${ancestor}/`);

// The host facts are read synchronously: a few dozen stat calls on local
// paths take about 0.3 ms, while the same calls queued on libuv's small thread
// pool (shared with every job's file I/O) took about 1.6 ms at the median.
function real(p: string): string | undefined {
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}
const lstat = (p: string) => lstatSync(p, { throwIfNoEntry: false });

/**
 * Where the sandbox's /etc/resolv.conf leads, following symlinks as the host
 * has them, for the generated resolv.conf to be bound there: a file that
 * exists, or a path outside every shown tree (bwrap creates it on the
 * sandbox's own root, as for systemd-resolved's /run/systemd/resolve/...).
 * Null when nothing can be bound (a missing file inside a read-only tree).
 */
function resolvConfTarget(shownTrees: readonly string[]): string | null {
  let p = "/etc/resolv.conf";
  for (let hops = 0; hops < 16; hops++) {
    const stats = lstat(p);
    if (stats?.isSymbolicLink()) {
      try {
        p = path.resolve(path.dirname(p), readlinkSync(p));
      } catch {
        return null;
      }
      continue;
    }
    if (stats) return stats.isFile() ? p : null;
    return shownTrees.some((tree) => within(p, tree)) ? null : p;
  }
  return null;
}

const readText = (p: string) => {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return undefined;
  }
};

export function createSandbox(options: SandboxOptions): SandboxRunner {
  const absolute = (paths: readonly string[] | undefined) => (paths ?? []).map((p) => path.resolve(p));
  const systemPaths = systemReadOnlyPaths;
  const extraReadOnly = absolute(options.readOnlyPaths);
  const hiddenPaths = [
    ...new Set([
      ...defaultHiddenPaths,
      path.resolve(options.workspacesDir),
      ...absolute(options.servicePaths),
      ...absolute(options.hiddenPaths),
    ]),
  ];
  for (const hidden of hiddenPaths) {
    // Covering "/" or /usr would hide the toolchain itself; that is a configuration error, not a sandbox.
    const covers = systemPaths.find((system) => within(system, hidden));
    if (covers) throw new Error(`invalid sandbox configuration: hidden path ${hidden} would hide ${covers}`);
  }

  /** Shown trees, checked per call: a path that appears later is shown (or hidden) from then on. */
  const readOnlyTrees = (): HostTree[] => {
    const system = systemPaths.map((p): HostTree | undefined => {
      const stats = lstat(p);
      if (!stats) return undefined;
      if (!stats.isSymbolicLink()) return { path: p };
      const target = real(p);
      if (!target) return undefined;
      // /bin -> /usr/bin stays a symlink when its target is shown anyway; else the target is shown at p.
      return systemPaths.some((other) => other !== p && within(target, other))
        ? { path: p, symlinkTo: target }
        : { path: p, source: target };
    });
    const extras = extraReadOnly.map((p): HostTree | undefined => {
      const target = real(p);
      return target ? { path: target } : undefined;
    });
    return [...system, ...extras].filter((tree): tree is HostTree => tree !== undefined);
  };

  const gitSearchFolders = options.gitSearchFolders ?? 20_000;
  const repositories = createGitRepositories({ maxFolders: gitSearchFolders });
  const tempBudget = createTempBudget(path.join(path.resolve(options.workspacesDir), ".temp-budget"));

  const hiddenEntries = () => {
    const entries = new Map<string, { path: string; isDirectory: boolean }>();
    for (const p of hiddenPaths) {
      const target = real(p);
      const stats = target ? lstat(target) : undefined;
      if (target && stats) entries.set(target, { path: target, isDirectory: stats.isDirectory() });
    }
    return [...entries.values()];
  };

  return {
    stepDown(request) {
      const prefix = identityPrefix(request, options.searchPath);
      return prefix.ok ? { ok: true, args: prefix.args } : { ok: false, message: sandboxUnavailableMessage(prefix.reason) };
    },
    async plan(request) {
      const bwrap = findExecutable(options.bwrapPath, options.searchPath);
      if (!bwrap)
        return { ok: false, message: sandboxUnavailableMessage(`bubblewrap ("${options.bwrapPath}") is not installed on this worker`) };
      const slirp4netnsPath = options.slirp4netnsPath ?? "slirp4netns";
      const slirp4netns = request.network ? findExecutable(slirp4netnsPath, options.searchPath) : undefined;
      if (request.network && !slirp4netns) {
        return {
          ok: false,
          message: sandboxNetworkUnavailableMessage(
            `slirp4netns ("${slirp4netnsPath}") is not installed on this worker, and this command was granted the network`,
          ),
        };
      }
      // util-linux's unshare makes a network-granted sandbox's network namespace, and a user namespace owning it (see sandbox-network.ts).
      const unshare = request.network ? findExecutable("unshare", options.searchPath) : undefined;
      if (request.network && !unshare)
        return {
          ok: false,
          message: sandboxNetworkUnavailableMessage("unshare (Debian package util-linux) is not installed on this worker"),
        };
      const stepDown = identityPrefix(request, options.searchPath);
      if (!stepDown.ok) return { ok: false, message: sandboxUnavailableMessage(stepDown.reason) };
      const workspace = real(request.workspaceDir);
      const workspacesDir = real(options.workspacesDir);
      const workspaceStats = workspace ? lstat(workspace) : undefined;
      if (!workspace || !workspaceStats?.isDirectory())
        return { ok: false, message: sandboxUnavailableMessage(`the workspace ${request.workspaceDir} is not a directory`) };
      // A writable workspace must not contain the system trees or every tenant's workspaces.
      const exposes = [...systemPaths, ...(workspacesDir ? [workspacesDir] : [])].find((p) => within(p, workspace));
      if (exposes)
        return {
          ok: false,
          message: sandboxUnavailableMessage(`the workspace ${workspace} contains ${exposes}; a workspace must be a project's own folder`),
        };
      const unreachable = identityCannotUse(workspace, workspaceStats, request.identity);
      if (unreachable) return { ok: false, message: sandboxUnavailableMessage(unreachable) };
      const git = repositories.find(workspace);
      if (git.truncated) return { ok: false, message: unsearchedWorkspaceMessage(git.truncated, gitSearchFolders) };
      const program = seccompFilter();
      if (!program)
        return {
          ok: false,
          message: sandboxUnavailableMessage(
            `Foya has no seccomp filter for this machine's architecture (${process.arch}); it knows x64 and arm64`,
          ),
        };
      const gate = git.gitFolders.length + git.gitFiles.length > 0 ? gitGate(workspace, git, options.searchPath) : null;
      if (gate && "reason" in gate) return { ok: false, message: sandboxUnavailableMessage(gate.reason) };
      let prefix = stepDown.args;
      if (request.overlay) {
        const wrap = overlayPrefix(workspace, request.overlay, options.searchPath);
        if (!wrap.ok) return { ok: false, message: sandboxUnavailableMessage(wrap.reason) };
        prefix = [...wrap.args, ...prefix];
      }
      // Last, once nothing else can refuse the call: its share of the tenant's temporary space, given back when it ends.
      const { limits } = request;
      const wantedBytes = request.lifetime === "background" ? limits.backgroundTmpBytes : limits.tmpBytes;
      const share = tempBudget.reserve({
        uid: request.identity.uid,
        wantedBytes,
        minimumBytes: minimumTempBytes,
        budgetBytes: limits.tmpBudgetBytes,
      });
      if ("refused" in share) return { ok: false, message: `Sandbox unavailable: ${share.refused}. The command did not run.` };
      const layout: SandboxLayout = {
        view: request.view,
        readOnly: request.view === "confined" ? readOnlyTrees() : [],
        hidden: hiddenEntries(),
        workspace,
        tempBytes: share.bytes,
        disableUserNamespaces: process.getuid?.() === 0,
      };
      const command = gate ? gatedCommand(request.command, gateFds) : ["bash", "-c", request.command];
      const shared = { statusFd, seccomp: { fd: seccompFd, program }, gate, release: share.release };
      if (!slirp4netns || !unshare) {
        const [file, ...rest] = [...prefix, bwrap];
        return {
          ok: true,
          file: file as string,
          args: [...rest, ...bwrapArguments(layout, { network: null, statusFd, seccompFd }), ...command],
          network: null,
          ...shared,
        };
      }
      const resolvConfPath = resolvConfTarget(request.view === "host" ? [] : layout.readOnly.map((tree) => tree.path));
      const resolvConf = resolvConfPath ? { fd: resolvConfFd, path: resolvConfPath } : null;
      const content = sandboxResolvConf(readText("/etc/resolv.conf"), readText("/run/systemd/resolve/resolv.conf"));
      const [file, ...rest] = [...prefix, unshare];
      return {
        ok: true,
        file: file as string,
        args: [
          ...rest,
          "--user",
          "--map-root-user",
          "--net",
          "--",
          bwrap,
          ...bwrapArguments(layout, { network: { blockFd, resolvConf }, statusFd, seccompFd }),
          ...command,
        ],
        network: { slirp4netns, blockFd, resolvConf: resolvConf ? { fd: resolvConfFd, content } : null },
        ...shared,
      };
    },
  };
}

/** The gate of a call whose workspace holds git metadata: what protects it once the sandbox is up, or why it cannot be. */
function gitGate(workspace: string, found: GitMetadata, searchPath: string): NonNullable<SandboxInvocation["gate"]> | { reason: string } {
  const nsenter = findExecutable("nsenter", searchPath);
  const mount = findExecutable("mount", searchPath);
  if (!nsenter || !mount)
    return {
      reason:
        "nsenter and mount (Debian packages util-linux, mount) must be installed to protect the git metadata of the workspace's repositories",
    };
  const tools: GitGuardTools = { nsenter, mount, enterUserNamespace: process.getuid?.() !== 0 };
  return {
    ...gateFds,
    async guard(initPid) {
      const outcome = await guardGitMetadata(initPid, workspace, found, tools);
      return outcome.ok ? outcome : { ok: false, message: gitGuardFailureMessage(outcome.reason) };
    },
  };
}

/** Why a workspace whose repositories could not all be found is refused (SPEC S11: fail closed), and what to do. */
function unsearchedWorkspaceMessage(bound: "depth" | "folders", folders: number): string {
  const why =
    bound === "depth"
      ? `it has folders nested deeper than ${maxGitSearchDepth} levels`
      : `it has more than ${folders} folders outside node_modules`;
  return (
    `Sandbox unavailable: the workspace is too large to search for repositories before each command (${why}), so a repository in it could keep writable hooks and configuration (SPEC S11); ` +
    "the command did not run. Remove or move what makes it so large (generated trees, unpacked archives, virtual environments: node_modules is not searched), " +
    "or have the operator raise FOYA_SANDBOX_GIT_SEARCH_FOLDERS."
  );
}

function overlayPrefix(
  workspace: string,
  folders: OverlayFolders,
  searchPath: string,
): { ok: true; args: string[] } | { ok: false; reason: string } {
  if (process.getuid?.() !== 0) return { ok: false, reason: "a layered workspace needs a root worker to mount its overlay" };
  const unshare = findExecutable("unshare", searchPath);
  const mount = findExecutable("mount", searchPath);
  const sh = findExecutable("sh", searchPath);
  if (!unshare || !mount || !sh)
    return {
      ok: false,
      reason: "unshare, mount and sh (Debian packages util-linux, mount, dash) must be installed to layer the workspace",
    };
  const options = overlayOptions(workspace, folders);
  if (!options)
    return { ok: false, reason: `the workspace path ${workspace} holds a character overlayfs options cannot carry (, : \\ or a newline)` };
  return { ok: true, args: overlayWrap({ unshare, mount, sh }, workspace, options) };
}

/**
 * The words in front of bwrap (SPEC S7): a root service steps down to the
 * tenant's uid with `setpriv` (no groups, no new privileges: a setuid binary
 * gains nothing), then `prlimit` sets the call's rlimits, inherited by
 * everything the call starts. A service that is not root cannot step down and
 * runs as itself; asking it for another uid is a configuration error.
 */
function identityPrefix(
  request: Pick<SandboxRequest, "identity" | "limits">,
  searchPath: string,
): { ok: true; args: string[] } | { ok: false; reason: string } {
  const prlimit = findExecutable("prlimit", searchPath);
  if (!prlimit)
    return {
      ok: false,
      reason: "prlimit (Debian package util-linux) is not installed on this worker; without it the call's limits cannot be set",
    };
  const { identity, limits } = request;
  const rlimits = [
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.fileSizeBytes}`,
    "--core=0",
    // The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL for a process that ignores it.
    ...(limits.cpuSeconds === null ? [] : [`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`]),
  ];
  const self = process.getuid?.() ?? 0;
  if (identity.uid === 0) return { ok: false, reason: "tool processes may not run as root (uid 0)" };
  if (self !== 0) {
    if (identity.uid !== self)
      return {
        ok: false,
        reason: `this worker runs as uid ${self} and cannot run tools as uid ${identity.uid}; start it as root, or let tools use its own uid`,
      };
    return { ok: true, args: [prlimit, ...rlimits, "--"] };
  }
  const setpriv = findExecutable("setpriv", searchPath);
  if (!setpriv)
    return { ok: false, reason: "setpriv (Debian package util-linux) is not installed on this worker; without it tools would run as root" };
  // --pdeathsig: the call dies with its worker from here on, before bwrap's own --die-with-parent is armed.
  return {
    ok: true,
    args: [
      setpriv,
      `--reuid=${identity.uid}`,
      `--regid=${identity.gid}`,
      "--clear-groups",
      "--no-new-privs",
      "--pdeathsig",
      "SIGKILL",
      "--",
      prlimit,
      ...rlimits,
      "--",
    ],
  };
}

/**
 * Why the tenant's uid could not work in this workspace, or null: it must own
 * the workspace, and reach it (every folder above it searchable by others,
 * mode o+x, as the service keeps its workspaces folder: 0711).
 */
function identityCannotUse(workspace: string, stats: NonNullable<ReturnType<typeof lstat>>, identity: ProcessIdentity): string | null {
  if (stats.uid !== identity.uid)
    return `the workspace ${workspace} belongs to uid ${stats.uid}, not to the tenant's tool uid ${identity.uid}`;
  for (let folder = path.dirname(workspace); ; folder = path.dirname(folder)) {
    const above = lstat(folder);
    if (above && above.uid !== identity.uid && (above.mode & 0o001) === 0) {
      return `uid ${identity.uid} cannot reach the workspace: ${folder} is not searchable by others (mode ${(above.mode & 0o777).toString(8)}; the service keeps its workspaces folder at 0711)`;
    }
    if (folder === "/") return null;
  }
}
