import { describe, expect, it } from "vitest";
import { brokenLink, prose, readRepoFile, relativeLinks, repoFiles } from "./markdown.js";

/**
 * The docs link to each other by file and heading (`architecture/jobs.md#the-tool-batch-job`).
 * When a page is split or a heading renamed, a link that no longer lands fails here, naming the
 * file and line. Permanent docs cite decision records and tests, never issue numbers or commit
 * hashes, which mean nothing to a reader of a clone.
 */
const docs = repoFiles(["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/**/*.md", "packages/*/README.md"]);

describe("links between the docs", () => {
  it("every relative link names a file of the repository, and a heading it has", () => {
    expect(brokenLink("README.md", "docs/usage.md#no-such-heading")).toBe("names no heading #no-such-heading");
    expect(brokenLink("docs/usage.md", "architecture/jobs.md#the-step-job")).toBeNull();
    expect(docs.length).toBeGreaterThan(20);
    const broken: string[] = [];
    for (const file of docs) {
      for (const { target, line } of relativeLinks(readRepoFile(file))) {
        const why = brokenLink(file, target);
        if (why) broken.push(`${file}:${line} ${target} ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the architecture is an overview of at most 250 lines and one page of 60 to 150 lines per subsystem, each linked from it", () => {
    const overview = readRepoFile("docs/architecture/README.md");
    expect(overview.trimEnd().split("\n").length).toBeLessThanOrEqual(250);
    const pages = repoFiles(["docs/architecture/*.md"]).filter((file) => !file.endsWith("/README.md"));
    expect(pages.length).toBeGreaterThan(10);
    for (const page of pages) {
      const lines = readRepoFile(page).trimEnd().split("\n").length;
      expect(lines, page).toBeGreaterThanOrEqual(60);
      expect(lines, page).toBeLessThanOrEqual(150);
      expect(overview, `${page} is not in the overview's table of contents`).toContain(`](${page.slice("docs/architecture/".length)})`);
    }
  });

  it("README, the changelog and docs/ cite no issue numbers or commit hashes", () => {
    const citations: string[] = [];
    for (const file of docs.filter((doc) => doc !== "CONTRIBUTING.md")) {
      const text = readRepoFile(file);
      const lines = text.split("\n");
      lines.forEach((line, index) => {
        const issue = /(?:\bissues? #?\d+|(?<![\w&/])#\d+\b)/i.exec(prose(line));
        const hash = /`(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}`/.exec(line);
        for (const found of [issue, hash]) if (found) citations.push(`${file}:${index + 1} ${found[0]}`);
      });
    }
    expect(citations).toEqual([]);
  });
});
