import { lstat, realpath } from "node:fs/promises";
import path from "node:path";

/**
 * Resolves a model-supplied path inside a workspace, following symlinks with
 * real paths so that `..`, absolute paths and links leading outside are refused.
 */
export type WorkspacePathResult = { ok: true; absolute: string; relative: string } | { ok: false; message: string };

export async function resolveWorkspacePath(workspaceDir: string, requested: string): Promise<WorkspacePathResult> {
  if (requested.includes("\u0000")) return { ok: false, message: "The path contains a NUL character." };
  const root = await realpath(workspaceDir);
  const candidate = path.resolve(root, requested);
  if (!isInside(root, candidate)) return { ok: false, message: `The path "${requested}" is outside the workspace.` };

  // Follow the longest existing prefix through its real path; the rest does not exist yet.
  let existing = candidate;
  const missing: string[] = [];
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch {
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
  const real = path.join(await realpath(existing), ...missing);
  if (!isInside(root, real)) {
    return { ok: false, message: `The path "${requested}" leads outside the workspace through a symbolic link.` };
  }
  return { ok: true, absolute: real, relative: path.relative(root, real) || "." };
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
