import { describe, expect, it } from "vitest";
import { prose, readRepoFile, repoFiles } from "./markdown.js";

/**
 * Requirement ids tie tests, docs and commits together (`it("D3: ...")`); docs/requirements.md
 * defines each in one line, so a clone can resolve them. An id is one or two capitals and a number,
 * standing as a word of its own: `D3:` at the start of a title, `X7` or `PR2` anywhere, but not the
 * `S3` inside `GPS3`, `S3a` or `E2E` (the shared spec-coverage tool matches ids the same way, from
 * the left). Names that look like ids and are none are listed here, each with what it is.
 */
const notRequirementIds = new Set([
  "RE2", // the linear-time regular expression engine (re2js)
  "V8", // Node's JavaScript engine
  "BM25", // the ranking function of tool_search
]);

const idPattern = /(?<![A-Za-z0-9_])([A-Z]{1,2}\d+)(?![A-Za-z0-9_])/g;

function citedIds(text: string): string[] {
  return [...text.matchAll(idPattern)].map((match) => match[1] ?? "").filter((id) => !notRequirementIds.has(id));
}

/** The ids docs/requirements.md defines: list items of the form `- **D3** one line`. */
function definedIds(): Map<string, string> {
  const defined = new Map<string, string>();
  for (const match of readRepoFile("docs/requirements.md").matchAll(/^- \*\*([A-Z]{1,2}\d+)\*\* (.*)$/gm)) {
    const [, id = "", line = ""] = match;
    if (defined.has(id)) throw new Error(`docs/requirements.md defines ${id} twice`);
    defined.set(id, line);
  }
  return defined;
}

/** Index just past a string literal that starts at `start` (its quote). */
function skipString(source: string, start: number): number {
  const quote = source[start];
  let i = start + 1;
  while (i < source.length && source[i] !== quote) i += source[i] === "\\" ? 2 : 1;
  return i + 1;
}

/** Index just past the balanced parentheses that open at `start`, stepping over strings. */
function skipParentheses(source: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < source.length) {
    const char = source[i] ?? "";
    if (char === '"' || char === "'" || char === "`") {
      i = skipString(source, i);
      continue;
    }
    if (char === "(") depth += 1;
    if (char === ")" && --depth === 0) return i + 1;
    i += 1;
  }
  return i;
}

/**
 * The literal titles of `it(`, `test(` and `describe(` calls, modifiers included
 * (`it.each(rows)(`, `describe.skipIf(cond)(`, `it.runIf(...)(`). Interpolations of a template
 * title are left out: they are code, not text.
 */
function titlesOf(source: string): string[] {
  const titles: string[] = [];
  for (const match of source.matchAll(/(?<![.\w$])(?:it|test|describe)(?=\s*[.(])/g)) {
    let i = (match.index ?? 0) + match[0].length;
    for (;;) {
      const modifier = /^\s*\.\s*[A-Za-z]+\s*/.exec(source.slice(i, i + 64));
      if (!modifier) break;
      i += modifier[0].length;
      if (source[i] === "(" && !/^\(\s*["'`]/.test(source.slice(i))) i = skipParentheses(source, i);
    }
    const opening = /^\s*\(\s*(["'`])/.exec(source.slice(i));
    if (!opening) continue;
    const quoteAt = i + opening[0].length - 1;
    const title = source.slice(quoteAt + 1, skipString(source, quoteAt) - 1);
    titles.push(title.replace(/\$\{[^}]*\}/g, ""));
  }
  return titles;
}

describe("the requirements glossary (docs/requirements.md)", () => {
  it("defines each id once, in one line of its own words", () => {
    const defined = definedIds();
    expect(defined.size).toBeGreaterThan(0);
    for (const [id, line] of defined) expect(line.length, id).toBeGreaterThan(20);
  });

  it("tells ids apart from words that only look like them", () => {
    expect(citedIds("D3: a crashed call is never run again")).toEqual(["D3"]);
    expect(citedIds("T4, T5: bad input; X7 and PR2 (S6-S8)")).toEqual(["T4", "T5", "X7", "PR2", "S6", "S8"]);
    expect(citedIds("xS3 GPS3 S3a E2E HTTP2 x86_64 O_PATH sha256 IPv6 W3C RE2 V8 BM25")).toEqual([]);
    expect(
      titlesOf('it("D3: one", () => {}); it.each(rows)("P4: %s", () => {}); describe.skipIf(!ok())(`E3: ${x} B2`, () => {});'),
    ).toEqual(["D3: one", "P4: %s", "E3:  B2"]);
    expect(titlesOf('expect(/x/.test("D99")); it.runIf(process.getuid?.() === 0)("S7: root", () => {});')).toEqual(["S7: root"]);
  });

  it("every id a test title cites is defined there", () => {
    const defined = definedIds();
    const missing: string[] = [];
    const files = repoFiles(["test/**/*.test.ts"]);
    expect(files.length).toBeGreaterThan(50);
    for (const file of files) {
      for (const title of titlesOf(readRepoFile(file))) {
        for (const id of citedIds(title)) if (!defined.has(id)) missing.push(`${id} in ${file}: "${title}"`);
      }
    }
    expect(missing, "ids cited by test titles but missing from docs/requirements.md").toEqual([]);
  });

  it("every id the docs cite in prose is defined there", () => {
    const defined = definedIds();
    const missing: string[] = [];
    for (const file of repoFiles(["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/**/*.md", "packages/*/README.md"])) {
      for (const id of citedIds(prose(readRepoFile(file)))) if (!defined.has(id)) missing.push(`${id} in ${file}`);
    }
    expect([...new Set(missing)], "ids cited by the docs but missing from docs/requirements.md").toEqual([]);
  });
});
