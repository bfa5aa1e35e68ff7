import { WorkspaceError } from "./workspace-files.js";

/** Longest path a model may name; the kernel's own limit is 4096 bytes. */
const maxPathLength = 4096;

/**
 * The components of a model-written path, relative to the workspace root whose
 * real path is `rootPath`. Pure: nothing is opened. `..` stays a component (the
 * descriptor walk pops its own stack for it, so it can never climb above the
 * root); an absolute path is accepted only when it lies inside the root.
 */
export function pathComponents(requested: string, rootPath: string): string[] {
  if (requested.includes("\u0000")) throw new WorkspaceError("invalid_path", "The path contains a NUL character.");
  if (requested.length > maxPathLength)
    throw new WorkspaceError("invalid_path", `The path is ${requested.length} characters long; at most ${maxPathLength} are allowed.`);
  if (!requested.startsWith("/")) return split(requested);
  const inside = relativeInside(rootPath, requested);
  if (inside === null) throw new WorkspaceError("path_outside_workspace", `The path "${shorten(requested)}" is outside the workspace.`);
  return inside;
}

/**
 * The components below `rootPath` of an absolute path that starts with it, or
 * null when it does not. Nothing is normalized as text: a `..` after the
 * root's components is left for the descriptor walk, which resolves it from
 * the folder it actually reached (a `..` after a symlink goes up from the
 * link's target, as the kernel's does) and stops at the root.
 */
export function relativeInside(rootPath: string, absolute: string): string[] | null {
  const parts = split(absolute);
  const root = split(rootPath);
  if (parts.length < root.length || root.some((part, index) => parts[index] !== part)) return null;
  return parts.slice(root.length);
}

function split(text: string): string[] {
  return text.split("/").filter((part) => part !== "" && part !== ".");
}

/** A path as shown in messages: long ones cut, so an error never carries kilobytes of a model's text. */
export function shorten(requested: string): string {
  return requested.length > 200 ? `${requested.slice(0, 200)}… (${requested.length} characters)` : requested;
}

export function joinComponents(components: readonly string[]): string {
  return components.length === 0 ? "." : components.join("/");
}
