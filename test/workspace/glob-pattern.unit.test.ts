import { describe, expect, it } from "vitest";
import { compileGlob } from "../../src/workspace/glob-pattern.js";

function compiled(pattern: string) {
  const glob = compileGlob(pattern);
  if (!glob.ok) throw new Error(`"${pattern}" was refused: ${glob.message}`);
  return glob;
}

/** [pattern, path, matches] */
const cases: Array<[string, string, boolean]> = [
  // * and ? stay within a segment
  ["*.ts", "index.ts", true],
  ["*.ts", "src/index.ts", false],
  ["src/*.ts", "src/index.ts", true],
  ["src/*", "src/a/b.ts", false],
  ["*", "README.md", true],
  ["?.md", "a.md", true],
  ["?.md", "ab.md", false],
  ["a?b", "a/b", false],
  ["?", "😀", true],
  // classes never match "/"
  ["[abc].txt", "b.txt", true],
  ["[abc].txt", "d.txt", false],
  ["file[0-9].log", "file7.log", true],
  ["file[0-9].log", "filex.log", false],
  ["[!x]y", "ay", true],
  ["[!x]y", "xy", false],
  ["[^x]y", "xy", false],
  ["a[!x]b", "a/b", false],
  ["[]]", "]", true],
  ["[a-]", "-", true],
  ["[[:digit:]]x", "7x", true],
  ["[\\]]", "]", true],
  // braces, nested, and across segments
  ["*.{ts,tsx}", "a.tsx", true],
  ["*.{ts,tsx}", "a.js", false],
  ["{src,test}/**/*.ts", "test/a/b.ts", true],
  ["{src,test}/**/*.ts", "bench/a.ts", false],
  ["a{b,c{d,e}}f", "acef", true],
  ["a{b,c{d,e}}f", "acf", false],
  ["{a/b,c}/x", "a/b/x", true],
  ["{a/b,c}/x", "c/x", true],
  ["x{,.bak}", "x.bak", true],
  ["x{,.bak}", "x", true],
  ["{a}", "{a}", true],
  ["{a}", "a", false],
  ["{a{b,c}}", "{ac}", true],
  ["x{}", "x{}", true],
  ["a,b", "a,b", true],
  // globstar
  ["**", "a", true],
  ["**", "a/b/c.txt", true],
  ["**/*.ts", "x.ts", true],
  ["**/*.ts", "a/b/x.ts", true],
  ["**/*.ts", "a/b/x.js", false],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["a/**/b", "a/x/y/c", false],
  ["a/**/b", "b", false],
  ["a/**", "a/b/c", true],
  ["a/**", "a", true],
  ["a/**", "ab/c", false],
  ["**/**/secret.txt", "config/secret.txt", true],
  ["**/**/secret.txt", "secret.txt", true],
  ["**/**/secret.txt", "a/b/c/secret.txt", true],
  ["a/**/**/b", "a/b", true],
  ["**/b/**", "a/b/c/d", true],
  ["a/***/b", "a/x/b", true],
  ["a/***/b", "a/x/y/b", false],
  ["{**,x}/y", "a/b/y", true],
  // ** inside a segment is *
  ["a**b", "axyb", true],
  ["a**b", "ax/yb", false],
  ["src/**.ts", "src/a/b.ts", false],
  // dotfiles match
  ["*", ".env", true],
  ["**/*", ".github/workflows/ci.yml", true],
  ["**/.env", "app/.env", true],
  // escapes
  ["\\*.txt", "*.txt", true],
  ["\\*.txt", "a.txt", false],
  ["a\\/b", "a/b", true],
  ["\\{a,b\\}", "{a,b}", true],
  ["\\[id\\].tsx", "[id].tsx", true],
  ["[id].tsx", "i.tsx", true],
  // literal text, case and odd characters
  ["a/b.txt", "a/b.txt", true],
  ["a/b.txt", "a/bxtxt", false],
  ["A.txt", "a.txt", false],
  ["(x)+.txt", "(x)+.txt", true],
  ["*", "name with\nnewline", true],
];

describe("compileGlob: matching", () => {
  it.each(cases)("%s against %s is %s", (pattern, path, expected) => {
    expect(compiled(pattern).matches(path)).toBe(expected);
  });

  it("never tells a walker to skip a folder that holds a match", () => {
    for (const [pattern, path, expected] of cases) {
      if (!expected) continue;
      const glob = compiled(pattern);
      const folders = path.split("/").slice(0, -1);
      for (let depth = 0; depth <= folders.length; depth++) {
        expect(glob.mayMatchUnder(folders.slice(0, depth).join("/")), `${pattern} under ${folders.slice(0, depth).join("/")}`).toBe(true);
      }
    }
  });

  it("lets a walker skip folders no match can be in", () => {
    expect(compiled("src/**/*.ts").mayMatchUnder("test")).toBe(false);
    expect(compiled("src/**/*.ts").mayMatchUnder("src/a/b")).toBe(true);
    expect(compiled("src/*.ts").mayMatchUnder("src/a")).toBe(false);
    expect(compiled("*.ts").mayMatchUnder("src")).toBe(false);
    expect(compiled("a/b.txt").mayMatchUnder("a/b.txt")).toBe(false);
    expect(compiled("{src,test}/*.ts").mayMatchUnder("test")).toBe(true);
    expect(compiled("{src,test}/*.ts").mayMatchUnder("bench")).toBe(false);
    expect(compiled("**/x").mayMatchUnder("any/folder")).toBe(true);
    expect(compiled("a/**").mayMatchUnder("a")).toBe(true);
  });

  it("gives the leading literal segments as the static prefix", () => {
    expect(compiled("src/**/*.ts").staticPrefix).toEqual(["src"]);
    expect(compiled("**/x").staticPrefix).toEqual([]);
    expect(compiled("a/b.txt").staticPrefix).toEqual(["a", "b.txt"]);
    expect(compiled("src/{a,b}/*.ts").staticPrefix).toEqual(["src"]);
    expect(compiled("{src,test}/*.ts").staticPrefix).toEqual([]);
    expect(compiled("a\\*b/x?").staticPrefix).toEqual(["a*b"]);
    expect(compiled("src/[ab]/x").staticPrefix).toEqual(["src"]);
    expect(compiled("src/**").source).toBe("src/**");
  });

  it("matches a pathological pattern in linear time", () => {
    const glob = compiled("*a*a*a*a*a*a*a*a*a*a*a*a*c");
    const path = "a".repeat(10_000);
    const started = performance.now();
    expect(glob.matches(path)).toBe(false);
    expect(glob.matches(`${path}c`)).toBe(true);
    expect(compiled("**/*a*a*a*a*a*a*a*a*a*a*a*a*c").matches(`${"a/".repeat(2_000)}${path}`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("compileGlob: refusals", () => {
  const refused = (pattern: string, messagePart: RegExp) => {
    const glob = compileGlob(pattern);
    expect(glob.ok, pattern).toBe(false);
    if (!glob.ok) expect(glob.message).toMatch(messagePart);
  };

  it("S6: refuses patterns that climb out with '..', however it is spelled", () => {
    for (const pattern of ["../x/*", "a/../../x", "\\.\\./x/*", "..\\/x/*", "{..,a}/x", "a/.{.,}/x", "**/.."]) refused(pattern, /"\.\."/);
  });

  it("S6: refuses absolute patterns, including an escaped or braced leading '/'", () => {
    for (const pattern of ["/etc/passwd", "\\/etc/*", "{/etc,a}/x"]) refused(pattern, /relative to the workspace root/);
  });

  it("S6: refuses '.' segments, empty segments and empty patterns", () => {
    refused("./src/*.ts", /"\."/);
    refused("src/./x", /"\."/);
    refused("a//b", /empty path segment/);
    refused("src/", /empty path segment/);
    refused("", /empty/);
    refused("{,}", /empty/);
  });

  it("S6: refuses NUL characters and over-long patterns", () => {
    refused("a\u0000b", /NUL/);
    refused("a".repeat(1001), /at most 1000/);
  });

  it("S6: refuses brace expansions past 1000 alternatives or 20000 characters", () => {
    refused("{a,b}".repeat(10), /more than 1000 alternatives/);
    refused("{{a,b},{c,d}}".repeat(5), /more than 1000 alternatives/);
    refused(`${"x".repeat(900)}{a,b}{a,b}{a,b}{a,b}{a,b}`, /characters in all/);
    expect(compileGlob("{0,1,2,3,4,5,6,7,8,9}{0,1,2,3,4,5,6,7,8,9}{0,1,2,3,4,5,6,7,8,9}.log").ok).toBe(true);
  });

  it("S6: refuses unbalanced braces and brackets, and a trailing backslash, saying how to escape", () => {
    refused("src/{a,b", /not closed by "}"/);
    refused("src/a}", /"}" with no "{"/);
    refused("file[0-9.log", /not closed by "]"/);
    refused("a[b/c]", /not closed by "]"/);
    refused("a\\", /lone "\\"/);
    refused("[z-a]", /not valid/);
  });
});
