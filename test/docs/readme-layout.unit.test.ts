import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { brokenLink, readRepoFile, relativeLinks, repoRoot } from "./markdown.js";

/**
 * The README is a landing page a newcomer can read in one sitting: what Foya is, the two commands
 * that start it and test it, the processes, a map of every source folder, and links to the rest.
 * Reference material lives under docs/ (configuration, usage, performance, architecture).
 */
const readme = readRepoFile("README.md");
const maxLines = 200;

/** The fenced code block right under a `## ` heading. */
function codeUnder(heading: string): string {
  const section = readme.split(/^## /m).find((part) => part.startsWith(`${heading}\n`)) ?? "";
  return /```[^\n]*\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
}

describe("README.md", () => {
  it(`stays within ${maxLines} lines`, () => {
    expect(readme.trimEnd().split("\n").length).toBeLessThanOrEqual(maxLines);
  });

  it("names every folder of src/ in its folder map", () => {
    const folders = readdirSync(path.join(repoRoot, "src"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.length).toBeGreaterThan(10);
    const map = codeUnder("Folder map");
    const unnamed = folders.filter((folder) => !new RegExp(`^src/${folder}/ `, "m").test(map));
    expect(unnamed, "src/ folders missing from README's folder map").toEqual([]);
  });

  it("starts with the two quick-start commands, and both are scripts of package.json", () => {
    const commands = codeUnder("Quick start")
      .split("\n")
      .map((line) => line.replace(/#.*$/, "").trim());
    expect(commands).toContain("npm ci && npm run demo");
    expect(commands).toContain("npm test");
    const scripts = (JSON.parse(readRepoFile("package.json")) as { scripts: Record<string, string> }).scripts;
    expect(scripts.demo).toBe("tsx scripts/demo.ts");
    expect(scripts.test).toBeDefined();
  });

  it("links only to files that exist, and to headings they have", () => {
    const links = relativeLinks(readme);
    expect(links.length).toBeGreaterThan(5);
    const broken = links.flatMap(({ target, line }) => {
      const why = brokenLink("README.md", target);
      return why ? [`README.md:${line} ${target} ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });
});
