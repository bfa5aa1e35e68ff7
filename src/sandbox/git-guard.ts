import { spawn } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, openSync, readlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { viaDescriptor } from "../workspace/descriptor-walk.js";
import { openSandboxTree, type SandboxTree } from "./sandbox-tree.js";

/**
 * The git metadata of a sandboxed call (SPEC S11): in every repository the workspace held when the call was
 * planned, nested ones included, `hooks`, `config`, `config.worktree` and
 * `commondir` are read-only and the git folder cannot be renamed away (it is
 * bound onto itself); a `.git` file (a worktree's or submodule's pointer) is
 * read-only; a git folder whose guarded entries include a symlink (which could
 * be re-pointed) is read-only whole.
 *
 * bwrap is never given a path inside the workspace other than its root: it
 * resolves the sources of its binds on the host, so a folder the tenant swaps
 * for a symlink between the plan and bwrap's mount would show a host folder in
 * the sandbox. Instead, once bwrap has set the sandbox up and before the
 * command runs (the gate, `sandbox-gate.ts`), the worker:
 *
 * 1. opens each git folder through the sandbox's own root (`sandbox-tree.ts`),
 *    one real folder at a time, never through a symlink; a folder that moved
 *    since the plan fails the call;
 * 2. has `mount` bind them, entering the sandbox's mount namespace
 *    (`nsenter`), from those descriptors (`/proc/self/fd/N`): inside that
 *    namespace only what the sandbox already shows can be reached, whatever
 *    the tenant swaps meanwhile;
 * 3. walks again and checks that each guarded entry is read-only (EROFS) and
 *    each git folder is a mount point, where it was; otherwise the call fails.
 *
 * A repository created after the plan is unprotected for that call (it is the
 * command's own); the next call protects it.
 */
export interface GitMetadata {
  /** Paths inside the workspace of `.git` folders. */
  gitFolders: readonly string[];
  /** Paths inside the workspace of `.git` entries that are not folders (pointer files, symlinks). */
  gitFiles: readonly string[];
}

export interface GitGuardTools {
  nsenter: string;
  /** util-linux's mount, at the same path inside the sandbox (its system trees are the host's). */
  mount: string;
  /** A worker that is not root enters the sandbox's user namespace first, where it holds the capabilities (it owns it). */
  enterUserNamespace: boolean;
}

export type GitGuardOutcome = { ok: true } | { ok: false; reason: string };

const guarded = ["hooks", "config", "config.worktree", "commondir"];
/** Repositories protected per run of `mount`: each holds one or two descriptors meanwhile. */
const batchSize = 64;
const helperTimeoutMs = 10_000;
/** O_TMPFILE (with O_DIRECTORY, as the kernel defines it); Node has no constant for it. */
const O_TMPFILE = 0o20200000;

type Protection =
  | { kind: "folder"; at: string; git: number; entries: string[] }
  | { kind: "whole"; at: string; parent: number; git: number }
  | { kind: "file"; at: string; parent: number; file: number }
  | { kind: "link"; at: string; parent: number };

export async function guardGitMetadata(
  initPid: number,
  workspace: string,
  found: GitMetadata,
  tools: GitGuardTools,
): Promise<GitGuardOutcome> {
  // In batches, each with its own descriptors, so a workspace of many repositories holds few at once.
  const all = [...found.gitFolders.map((at) => ({ at, folder: true })), ...found.gitFiles.map((at) => ({ at, folder: false }))];
  for (let first = 0; first < all.length; first += batchSize) {
    const batch = all.slice(first, first + batchSize);
    const outcome = await guardBatch(
      initPid,
      workspace,
      {
        gitFolders: batch.filter((entry) => entry.folder).map((entry) => entry.at),
        gitFiles: batch.filter((entry) => !entry.folder).map((entry) => entry.at),
      },
      tools,
    );
    if (!outcome.ok) return outcome;
  }
  return { ok: true };
}

async function guardBatch(initPid: number, workspace: string, found: GitMetadata, tools: GitGuardTools): Promise<GitGuardOutcome> {
  let tree: SandboxTree;
  try {
    tree = openSandboxTree(initPid);
  } catch (error) {
    return { ok: false, reason: `the sandbox was gone before its git metadata was protected (${(error as Error).message})` };
  }
  try {
    const root = tree.folder(null, components(workspace));
    if (root === null) return { ok: false, reason: "the workspace is not where the sandbox shows it" };
    const planned = plan(tree, root, workspace, found);
    if (!Array.isArray(planned)) return planned;
    const failed = await runMount(initPid, tools, planned);
    if (failed) return { ok: false, reason: failed };
    return verify(tree, root, workspace, planned);
  } finally {
    tree.close();
  }
}

/** The sandbox-facing message for a call whose git metadata could not be protected: nothing ran. */
export function gitGuardFailureMessage(reason: string): string {
  return (
    `Sandbox unavailable: the repositories of the workspace could not be protected in this call's sandbox (${reason}), so the command did not run. ` +
    "Their hooks and configuration are read-only in every sandbox (SPEC S11); a repository moved or replaced while the sandbox was set up " +
    "(by another command of this tenant) makes the call fail rather than run unprotected. Try again once the workspace holds still."
  );
}

const components = (relative: string) => relative.split("/").filter(Boolean);
const parentOf = (relative: string) => components(relative).slice(0, -1);
const moved = (at: string, what: string): GitGuardOutcome => ({ ok: false, reason: `${at} ${what}` });

function plan(tree: SandboxTree, root: number, workspace: string, found: GitMetadata): Protection[] | GitGuardOutcome {
  const protections: Protection[] = [];
  for (const at of found.gitFolders) {
    const parent = tree.folder(root, parentOf(at));
    const git = parent === null ? null : tree.entry(parent, ".git");
    if (parent === null || !git?.stats.isDirectory()) return moved(at, "is no longer a folder where it was when the call was planned");
    const entries = guarded.map((name) => ({ name, found: tree.stat(git.fd, name) }));
    if (entries.some((entry) => entry.found?.isSymbolicLink())) {
      protections.push({ kind: "whole", at, parent, git: git.fd });
      continue;
    }
    protections.push({ kind: "folder", at, git: git.fd, entries: entries.filter((entry) => entry.found).map((entry) => entry.name) });
  }
  for (const at of found.gitFiles) {
    const parent = tree.folder(root, parentOf(at));
    const file = parent === null ? null : tree.entry(parent, ".git");
    if (parent === null || !file) return moved(at, "is gone since the call was planned");
    if (file.stats.isFile()) protections.push({ kind: "file", at, parent, file: file.fd });
    else if (file.stats.isSymbolicLink()) {
      if (leadsIntoWorkspace(parent, workspace)) protections.push({ kind: "link", at, parent });
    } else return moved(at, "is no longer a file where it was when the call was planned");
  }
  return protections;
}

/**
 * Whether a `.git` symlink leads to something of the workspace, which is then
 * made read-only as the sandbox sees it. Nothing to protect when it leads
 * nowhere (mount would refuse it, and fail the call) or outside the workspace
 * (read-only system trees, the call's own temporary folders). A relative link
 * is resolved from its folder as held in the sandbox; the workspace has the
 * same absolute path inside as outside.
 */
function leadsIntoWorkspace(parent: number, workspace: string): boolean {
  let target: string;
  try {
    target = readlinkSync(viaDescriptor(parent, ".git"));
  } catch {
    return false;
  }
  if (target.startsWith("/") && target !== workspace && !target.startsWith(`${workspace}/`)) return false;
  return existsSync(viaDescriptor(parent, ".git"));
}

/**
 * One `mount --all` inside the sandbox's namespaces, from an fstab on its
 * stdin whose sources and targets are the descriptors it inherits. A read-only
 * bind is bound, then remounted read-only through its name in a held folder
 * (which finds the new mount); each git folder is bound onto itself last,
 * recursively, so it carries its read-only entries.
 */
function runMount(initPid: number, tools: GitGuardTools, protections: readonly Protection[]): Promise<string | null> {
  const passed: number[] = [];
  const slot = (fd: number) => {
    let index = passed.indexOf(fd);
    if (index === -1) index = passed.push(fd) - 1;
    return `/proc/self/fd/${index + 3}`;
  };
  const readOnly = "none bind,ro,nosuid,nodev 0 0";
  const lines: string[] = [];
  for (const protection of protections) {
    switch (protection.kind) {
      case "folder":
        for (const name of protection.entries) lines.push(`${slot(protection.git)}/${name} ${slot(protection.git)}/${name} ${readOnly}`);
        lines.push(`${slot(protection.git)} ${slot(protection.git)} none rbind 0 0`);
        break;
      case "whole":
        lines.push(`${slot(protection.git)} ${slot(protection.parent)}/.git ${readOnly}`);
        break;
      case "file":
        lines.push(`${slot(protection.file)} ${slot(protection.parent)}/.git ${readOnly}`);
        break;
      case "link":
        // What the link leads to, as the sandbox sees it (nothing else is reachable in its namespace).
        lines.push(`${slot(protection.parent)}/.git ${slot(protection.parent)}/.git none bind,ro,nosuid,nodev 0 0`);
        break;
      default:
        protection satisfies never;
    }
  }
  const args = [
    "--target",
    String(initPid),
    ...(tools.enterUserNamespace ? ["--user", "--preserve-credentials"] : []),
    "--mount",
    "--pid",
    "--",
    tools.mount,
    "--all",
    "--no-mtab",
    "--no-canonicalize",
    "--fstab",
    "/proc/self/fd/0",
  ];
  // mount reads its fstab twice, so a pipe will not do: an anonymous file (O_TMPFILE: no name, gone once closed).
  let fstab: number;
  try {
    fstab = openSync(tmpdir(), O_TMPFILE | constants.O_RDWR, 0o600);
    writeSync(fstab, `${lines.join("\n")}\n`);
  } catch (error) {
    return Promise.resolve(`the list of mounts could not be written (${(error as Error).message})`);
  }
  return new Promise((resolve) => {
    const child = spawn(tools.nsenter, args, { stdio: [fstab, "ignore", "pipe", ...passed], env: {} });
    closeSync(fstab);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-2000);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), helperTimeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve(`${tools.nsenter} could not be started (${error.message})`);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve(code === 0 ? null : `mount inside the sandbox failed (${signal ?? `exit ${code}`}: ${stderr.trim() || "no message"})`);
    });
  });
}

/** Whether writing through `p` fails because its mount is read-only (a permission error proves nothing: the tenant may chmod its own files). */
function readOnly(p: string, alsoFine: readonly string[] = []): boolean {
  try {
    accessSync(p, constants.W_OK);
    return false;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    return code === "EROFS" || alsoFine.includes(code);
  }
}

function verify(tree: SandboxTree, root: number, workspace: string, protections: readonly Protection[]): GitGuardOutcome {
  const mountPoints = tree.mountPoints();
  for (const protection of protections) {
    const parent = tree.folder(root, parentOf(protection.at));
    const now = parent === null ? null : tree.entry(parent, ".git");
    if (parent === null || !now) return moved(protection.at, "moved while the sandbox was set up");
    switch (protection.kind) {
      case "folder": {
        if (!now.stats.isDirectory() || !mountPoints.has(`${workspace}/${protection.at}`))
          return moved(protection.at, "was not protected where it is (it moved while the sandbox was set up)");
        for (const name of protection.entries) {
          const entry = tree.entry(now.fd, name);
          if (!entry || !readOnly(viaDescriptor(entry.fd)))
            return moved(`${protection.at}/${name}`, "was not protected where it is (it moved while the sandbox was set up)");
        }
        break;
      }
      case "whole":
      case "file":
        if (!readOnly(viaDescriptor(now.fd)))
          return moved(protection.at, "was not protected where it is (it moved while the sandbox was set up)");
        break;
      case "link":
        if (!readOnly(viaDescriptor(parent, ".git"), ["ENOENT", "ENOTDIR", "ELOOP"]))
          return moved(protection.at, "was not protected where it is (it moved while the sandbox was set up)");
        break;
      default:
        protection satisfies never;
    }
  }
  return { ok: true };
}
