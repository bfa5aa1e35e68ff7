import { lstat, realpath } from "node:fs/promises";
import path from "node:path";

/**
 * Resolves a model-supplied path against a workspace, following symlinks with
 * real paths so that `..`, absolute paths and links leading outside are
 * refused. With `allowOutside` (Full Access) any path resolves; `relative`
 * then is the absolute path for places outside the workspace.
 */
export type WorkspacePathResult =
  | { ok: true; absolute: string; relative: string; inside: boolean }
  | { ok: false; message: string };

export async function resolveWorkspacePath(
  workspaceDir: string,
  requested: string,
  options: { allowOutside?: boolean; followFinalLink?: boolean } = {},
): Promise<WorkspacePathResult> {
  if (requested.includes("\u0000")) return { ok: false, message: "The path contains a NUL character." };
  const root = await realpath(workspaceDir);
  const candidate = path.resolve(root, requested);
  if (!options.allowOutside && !isInside(root, candidate)) return { ok: false, message: `The path "${requested}" is outside the workspace.` };

  // Follow the longest existing prefix through its real path; the rest does not exist yet.
  // A final symlink is kept as itself when asked (delete removes the link, not its target).
  const keepFinal = options.followFinalLink === false;
  let existing = keepFinal ? path.dirname(candidate) : candidate;
  const missing: string[] = keepFinal ? [path.basename(candidate)] : [];
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
  const inside = isInside(root, real);
  if (!inside && !options.allowOutside) {
    return { ok: false, message: `The path "${requested}" leads outside the workspace through a symbolic link.` };
  }
  return { ok: true, absolute: real, relative: inside ? path.relative(root, real) || "." : real, inside };
}

export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
