/**
 * The words that put a call's overlay over its workspace (SPEC X7): a private
 * mount namespace made by the root worker, an overlay mounted in it on the
 * workspace's own path, then the usual step-down and bwrap, which binds that
 * path and so sees the overlay. Everything the command writes lands in the
 * call's upper folder; the workspace itself is untouched until Foya applies
 * the upper folder after the call (`apply-upper.ts`).
 *
 * The chain never forks a process that stays (unshare execs, sh execs after
 * mount): bwrap remains the worker's child, for `--die-with-parent` and the
 * network handshake's pid checks.
 */

export interface OverlayFolders {
  upperDir: string;
  workDir: string;
}

/**
 * `redirect_dir=off`, `metacopy=off` and `index=off` keep the upper folder a
 * plain picture of the changes (files whole, no redirects to follow when
 * applying); `volatile` skips the sync at unmount: the apply renames the
 * files into place right after.
 */
export function overlayOptions(workspace: string, folders: OverlayFolders): string | null {
  // overlayfs splits its options on "," and lower layers on ":"; Foya's own folders never hold them, and a workspace that does is not layered.
  if ([workspace, folders.upperDir, folders.workDir].some((p) => /[,:\\\n]/.test(p))) return null;
  return `lowerdir=${workspace},upperdir=${folders.upperDir},workdir=${folders.workDir},redirect_dir=off,metacopy=off,index=off,volatile`;
}

/**
 * Mounts, then goes on only if its parent is still the worker ($4): a worker killed while the
 * mount ran must not leave a command running with no one to stop it (bwrap's
 * `--die-with-parent` and setpriv's `--pdeathsig` only watch a parent alive when they start).
 */
const mountThenExec =
  '"$1" -t overlay -o "$2" overlay "$3" && read -r _ _ _ parent _ < /proc/$$/stat && [ "$parent" = "$4" ] && shift 4 && exec "$@"';

/** Absolute paths of the programs: the tool PATH is the tenant's, never trusted to find mount. */
export function overlayWrap(
  tools: { unshare: string; sh: string; mount: string },
  workspace: string,
  options: string,
  parentPid: number = process.pid,
): string[] {
  return [
    tools.unshare,
    "--mount",
    "--propagation",
    "private",
    "--",
    tools.sh,
    "-c",
    mountThenExec,
    "foya-overlay",
    tools.mount,
    options,
    workspace,
    String(parentPid),
  ];
}
