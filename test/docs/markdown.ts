import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { globSync } from "tinyglobby";

/** Helpers the docs tests share: reading the repository's Markdown the way GitHub renders it. */

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export function readRepoFile(relative: string): string {
  return readFileSync(path.join(repoRoot, relative), "utf8");
}

/** Repository-relative paths matching the globs, sorted. */
export function repoFiles(patterns: string[]): string[] {
  return globSync(patterns, { cwd: repoRoot, ignore: ["**/node_modules/**"] }).sort();
}

/** The text without fenced code blocks (their `#` lines are not headings, their ids not citations). */
function withoutCodeBlocks(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
}

/** The text without fenced blocks and inline code spans: what a reader sees as prose. */
export function prose(markdown: string): string {
  return withoutCodeBlocks(markdown).replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown file defines, with GitHub's `-1`, `-2` suffixes for repeated headings. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutCodeBlocks(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = anchorOf(match[1] ?? "");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

export interface Link {
  target: string;
  line: number;
}

/** Relative link targets (`[text](target)`, images included), outside code. URLs and mail links are left out. */
export function relativeLinks(markdown: string): Link[] {
  const links: Link[] = [];
  const lines = withoutCodeBlocks(markdown)
    .replace(/`[^`\n]*`/g, "")
    .split("\n");
  lines.forEach((text, index) => {
    for (const match of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push({ target, line: index + 1 });
    }
  });
  return links;
}

/**
 * Why a link from `fromFile` (repository-relative) does not resolve, or null when it does: the
 * path must name a file or folder of the repository, and a `#fragment` a heading of the Markdown
 * file it names (or of `fromFile` itself for a bare `#fragment`).
 */
export function brokenLink(fromFile: string, target: string): string | null {
  const [pathPart = "", fragment] = target.split("#", 2);
  const resolved = pathPart === "" ? path.join(repoRoot, fromFile) : path.resolve(path.dirname(path.join(repoRoot, fromFile)), pathPart);
  if (!resolved.startsWith(repoRoot)) return "points outside the repository";
  if (!existsSync(resolved)) return "names no file";
  if (fragment === undefined || fragment === "") return null;
  if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) return "has an anchor on something that is not a Markdown file";
  return anchorsOf(readFileSync(resolved, "utf8")).has(fragment) ? null : `names no heading #${fragment}`;
}
