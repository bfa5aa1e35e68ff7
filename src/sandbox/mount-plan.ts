/**
 * The bubblewrap command line for one sandboxed process (SPEC S3), built from
 * facts about the host that `sandbox-runner.ts` gathered. Pure: no I/O.
 *
 * The new root is an empty tmpfs. Only whitelisted system trees are bound into
 * it, read-only; everything else of the host (the service's files, other
 * workspaces, /root, /home, /run, /var, database sockets and data) simply does
 * not exist inside. Hidden paths that lie inside a shown tree (secrets under
 * /etc, a service installed under /opt) are covered by an empty read-only
 * tmpfs (directories) or /dev/null (files). The workspace is bound writable at
 * its own path, on top of whatever covers its ancestors.
 */

export interface HostTree {
  /** Absolute path as it appears inside the sandbox (the same as on the host). */
  path: string;
  /** Set when the host path is a symlink into another shown tree (/bin -> usr/bin): recreated as that symlink. */
  symlinkTo?: string;
  /** Host directory bound read-only at `path` when it is not a symlink (its real path). */
  source?: string;
}

export interface SandboxLayout {
  /**
   * `confined`: an empty root with the read-only whitelist below (every call
   * outside Full Access, every stdio MCP server). `host`: Full Access (S8), the
   * host's file system as the tenant's own uid sees it, minus the hidden
   * paths; still its own user, PID, IPC and network namespaces.
   */
  view: "confined" | "host";
  /** Read-only trees: the system whitelist and configured extras, only those that exist (confined view only). */
  readOnly: readonly HostTree[];
  /** Existing host paths that must not be visible (real paths). */
  hidden: ReadonlyArray<{ path: string; isDirectory: boolean }>;
  /** Real path of the workspace: writable, and the working directory. */
  workspace: string;
  /**
   * The call's temporary space, its share of the tenant's budget
   * (`temp-budget.ts`): private tmpfs on /tmp, /var/tmp and /dev/shm whose
   * sizes add up to it (`tempSizes`). Nothing else of the workspace is bound
   * here: git metadata is protected from inside the started sandbox
   * (`git-guard.ts`), since bwrap resolves bind sources on the host.
   */
  tempBytes: number;
  /**
   * Have bwrap disable user namespaces inside the sandbox (`--disable-userns`),
   * which leaves the command in a second user namespace below the one that owns
   * the sandbox's mounts. A worker that is not root could then not enter the
   * sandbox to protect its git metadata (it has capabilities only in the first,
   * which it owns), so there bwrap keeps one level and the seccomp filter alone
   * refuses new user namespaces (`unshare`, `clone` with namespace flags, `clone3`).
   */
  disableUserNamespaces: boolean;
}

/** /var/tmp and /dev/shm are rarely large: an eighth of the call's temporary space each, at most 64 MiB. */
const smallTmpfsBytes = 64 * 1024 * 1024;

/** How a call's temporary space is split: /var/tmp and /dev/shm get `small` each, /tmp the rest. */
function tempSizes(tempBytes: number): { tmp: number; small: number } {
  const small = Math.max(1, Math.min(Math.floor(tempBytes / 8), smallTmpfsBytes));
  return { tmp: Math.max(1, tempBytes - 2 * small), small };
}

type Mount =
  | { kind: "ro" | "rw"; path: string; source: string }
  | { kind: "symlink"; path: string; target: string }
  | { kind: "tmpfs"; path: string; sizeBytes: number }
  | { kind: "proc" | "dev"; path: string }
  | { kind: "hide-dir" | "hide-file"; path: string }
  | { kind: "data"; path: string; fd: number };

/**
 * How a network-granted sandbox is wired (see `sandbox-network.ts`). bwrap
 * then runs inside a fresh network namespace that `unshare` made for it (so
 * it must not be run any other way), and waits on `blockFd` before it
 * runs the command, until slirp4netns has connected that namespace. The
 * generated resolv.conf (slirp4netns's DNS) is read from `resolvConf.fd` and
 * bound read-only at `resolvConf.path`, where /etc/resolv.conf leads.
 */
export interface NetworkWiring {
  blockFd: number;
  resolvConf: { fd: number; path: string } | null;
}

const depth = (p: string) => (p === "/" ? 0 : p.split("/").length - 1);
const within = (p: string, ancestor: string) => ancestor === "/" || p === ancestor || p.startsWith(`${ancestor}/`);

/**
 * Arguments for bwrap, up to and including `--`; the command follows. The
 * sandbox never has the host's network namespace: without `network` bwrap
 * makes an empty one (loopback only); with it, the runner starts bwrap in one
 * made for slirp4netns (bwrap's own would race slirp4netns: both bring up its
 * loopback, and bwrap dies on the address slirp4netns got there first).
 */
export function bwrapArguments(
  layout: SandboxLayout,
  options: { network: NetworkWiring | null; statusFd: number; seccompFd: number },
): string[] {
  const temp = tempSizes(layout.tempBytes);
  const mounts: Mount[] = [
    ...(layout.view === "host"
      ? [{ kind: "rw", path: "/", source: "/" } as const]
      : layout.readOnly.map(
          (tree): Mount =>
            tree.symlinkTo
              ? { kind: "symlink", path: tree.path, target: tree.symlinkTo }
              : { kind: "ro", path: tree.path, source: tree.source ?? tree.path },
        )),
    { kind: "proc", path: "/proc" },
    { kind: "dev", path: "/dev" },
    { kind: "tmpfs", path: "/dev/shm", sizeBytes: temp.small },
    { kind: "tmpfs", path: "/tmp", sizeBytes: temp.tmp },
    { kind: "tmpfs", path: "/var/tmp", sizeBytes: temp.small },
    // The workspace's root is the one path inside it bwrap is given: its parents are root's, so it cannot be swapped.
    { kind: "rw", path: layout.workspace, source: layout.workspace },
  ];

  // A hidden path needs covering where a host tree would show it. Under a
  // private tmpfs (the service installed below /tmp, say) it is covered too, so
  // it reads as the same empty, read-only place it is everywhere else rather
  // than a folder the command may fill. Under the empty root it does not exist
  // and cannot be made. A hidden folder holding the workspace (the workspaces
  // folder) is covered wherever it is, so the path down to the workspace is read-only.
  const shown = [...mounts];
  for (const hidden of layout.hidden) {
    const nearest = shown.filter((m) => within(hidden.path, m.path)).sort((a, b) => depth(b.path) - depth(a.path))[0];
    const visible = nearest !== undefined && (nearest.kind === "ro" || nearest.kind === "rw" || nearest.kind === "tmpfs");
    const holdsWorkspace = hidden.isDirectory && within(layout.workspace, hidden.path);
    if (visible || holdsWorkspace) mounts.push({ kind: hidden.isDirectory ? "hide-dir" : "hide-file", path: hidden.path });
  }

  if (options.network?.resolvConf) mounts.push({ kind: "data", path: options.network.resolvConf.path, fd: options.network.resolvConf.fd });

  // Parents before children, so each mount lands on top of its ancestors';
  // at the same path a cover goes last and wins.
  const rank = (m: Mount) => depth(m.path) * 2 + (m.kind === "hide-dir" || m.kind === "hide-file" ? 1 : 0);
  mounts.sort((a, b) => rank(a) - rank(b));

  const args = [
    "--unshare-user",
    // The tenant's host uid appears as root inside: tools that look themselves up find a user.
    "--uid",
    "0",
    "--gid",
    "0",
    ...(layout.disableUserNamespaces ? ["--disable-userns"] : []),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    ...(options.network ? [] : ["--unshare-net"]),
    "--hostname",
    "foya-sandbox",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--json-status-fd",
    String(options.statusFd),
    // The default seccomp filter (seccomp-filter.ts), read from this fd and installed just before the command runs.
    "--seccomp",
    String(options.seccompFd),
    ...(options.network ? ["--block-fd", String(options.network.blockFd)] : []),
  ];
  for (const mount of mounts) {
    switch (mount.kind) {
      case "ro":
        args.push("--ro-bind", mount.source, mount.path);
        break;
      case "rw":
        args.push("--bind", mount.source, mount.path);
        break;
      case "symlink":
        args.push("--symlink", mount.target, mount.path);
        break;
      case "tmpfs":
        args.push("--size", String(mount.sizeBytes), "--tmpfs", mount.path);
        break;
      case "proc":
        args.push("--proc", mount.path);
        break;
      case "dev":
        args.push("--dev", mount.path);
        break;
      case "hide-dir":
        args.push("--size", "4096", "--tmpfs", mount.path);
        break;
      case "hide-file":
        args.push("--ro-bind", "/dev/null", mount.path);
        break;
      case "data":
        args.push("--ro-bind-data", String(mount.fd), mount.path);
        break;
    }
  }
  // Covers and the root become read-only last, once every mount point inside
  // them exists; remount-ro is not recursive, so the workspace stays writable.
  // The host view keeps the host's own permissions instead (the tenant's uid is no one's owner there).
  for (const mount of mounts) if (mount.kind === "hide-dir") args.push("--remount-ro", mount.path);
  if (layout.view === "confined") args.push("--remount-ro", "/");
  args.push("--chdir", layout.workspace, "--");
  return args;
}
