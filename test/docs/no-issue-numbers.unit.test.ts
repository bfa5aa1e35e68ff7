import { describe, expect, it } from "vitest";
import { readRepoFile, repoFiles } from "./markdown.js";

/**
 * Code and test comments cite SPEC ids, decision records (docs/decisions/) and tests, never
 * issue numbers or commit hashes, which mean nothing to a reader of a clone. Printed text counts
 * too: a benchmark's report is read the same way. `doc-links.unit.test.ts` holds the docs to it.
 */
const thisFile = "test/docs/no-issue-numbers.unit.test.ts";
const sources = repoFiles(["{src,test,bench}/**/*.{ts,mts,cts,js,mjs,cjs}", ".dependency-cruiser.cjs"]).filter((file) => file !== thisFile);

/** `issue 27`, `issues #12`, `pull request 9` (`PR #3` is a bare number below; `PR1` is a SPEC id). */
const namedIssue = /\b(?:issues?|pull requests?)\s?#?\d+\b/gi;
/** `#27`, `(#14)`, `pre-#12`; not `&#39;`, `doc.md#31-heading`, `#!/`, `#field`, `#1a2b3c`. */
const bareNumber = /(?<![\w&#/])#\d+\b(?!-)/g;
/** An all-digit CSS colour: `"#000"`, `color: #123456`. */
const colour = /(?:["'`]|:\s*)#(?:\d{3,4}|\d{6}|\d{8})$/;
/** `commit 1a2b3c4`, or a backticked hash with a digit and a letter: `` `1a2b3c4d` ``. */
const commitHash = /\bcommit\s+[0-9a-f]{7,40}\b|`(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}`/i;

/** The issue or commit citations in one line of code, as written. */
function citationsIn(line: string): string[] {
  const found = [...line.matchAll(namedIssue)].map((match) => match[0]);
  // Blanked out so that `issue #27` is one citation, not two.
  const rest = line.replace(namedIssue, (named) => " ".repeat(named.length));
  for (const match of rest.matchAll(bareNumber)) {
    const upToIt = rest.slice(0, (match.index ?? 0) + match[0].length);
    if (!colour.test(upToIt)) found.push(match[0]);
  }
  const hash = commitHash.exec(line);
  if (hash) found.push(hash[0]);
  return found;
}

describe("citations in code, tests and benchmarks", () => {
  it("the detector finds issue and commit citations and leaves colours, shebangs, private fields and anchors alone", () => {
    const cited = [
      "// the data loss of issue 27",
      "// see pull request 9",
      " * (SPEC S7; issue #27)",
      " * Issue #14 item 3",
      " * the same sets took seconds (#27: 21 s)",
      "console.log(`door vs the pre-#12 access`);",
      '"goals (issue #14):",',
      "// fixed in PR #31",
      "// reverted in commit 1a2b3c4d",
      "// since `e64aa04`",
    ];
    for (const line of cited) expect(citationsIn(line), line).toHaveLength(1);
    const clean = [
      "#!/usr/bin/env node",
      "  #listeners = new Map<string, Listener>();",
      "  this.#pending.clear();",
      'const border = "#000";',
      "  color: #123456;",
      "background: '#1a2b3c'",
      "// [operations](operations.md#31-what-scales)",
      'text.replace(/&#39;/g, "\'")',
      "// SPEC S11; docs/decisions/0006-the-workspace-door.md",
      "const digest = `sha256:${hex}`;",
      "// tissue 12 is not an issue citation",
      'it("PR1: streams the profile\'s model")',
    ];
    for (const line of clean) expect(citationsIn(line), line).toEqual([]);
  });

  it("src/, test/, bench/ and the dependency rules cite no issue numbers or commit hashes", () => {
    expect(sources.length).toBeGreaterThan(300);
    expect(sources).toContain(".dependency-cruiser.cjs");
    const citations: string[] = [];
    for (const file of sources) {
      readRepoFile(file)
        .split("\n")
        .forEach((line, index) => {
          for (const found of citationsIn(line)) citations.push(`${file}:${index + 1} ${found}`);
        });
    }
    expect(citations).toEqual([]);
  });
});
