import { mkdir, mkdtemp, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { grepTool } from "../../src/tools/builtin/grep-tool.js";
import { listTool } from "../../src/tools/builtin/list-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { toolContext } from "../helpers/tool-context.js";

let workspace: string;
beforeAll(async () => {
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), "foya-search-")));
  await mkdir(path.join(workspace, "src", "deep"), { recursive: true });
  await mkdir(path.join(workspace, "node_modules", "x"), { recursive: true });
  await writeFile(path.join(workspace, "src", "a.ts"), "export const alpha = 1;\n// TODO: beta\n");
  await writeFile(path.join(workspace, "src", "deep", "b.ts"), "const Beta = 2;\n");
  await writeFile(path.join(workspace, "notes.md"), "beta notes\n");
  await writeFile(path.join(workspace, "node_modules", "x", "i.ts"), "beta inside node_modules\n");
  await writeFile(path.join(workspace, "blob.bin"), Buffer.from([0, 1, 2, 98, 101, 116, 97]));
  await writeFile(path.join(workspace, "many.txt"), Array.from({ length: 700 }, (_, i) => `hit ${i}`).join("\n"));
});

const call = (tool: unknown, args: object): Promise<ToolResult> =>
  (tool as Tool<object>).run(toolContext({ workspaceDir: workspace }), args, { callId: "c", name: "t", argumentsRaw: "" });
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

describe("list and grep", () => {
  it("list: sorted matches of a glob, skipping node_modules; escapes refused", async () => {
    expect(text(await call(listTool, { pattern: "**/*.ts" })).split("\n")).toEqual(["src/a.ts", "src/deep/b.ts"]);
    expect(text(await call(listTool, { path: "src" })).split("\n")).toEqual(["a.ts", "deep/b.ts"]);
    expect(await call(listTool, { path: "../" })).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
    expect(await call(listTool, { pattern: "../*" })).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
    expect(text(await call(listTool, { pattern: "*.none" }))).toBe("No files match *.none.");
  });

  it("grep: path:line: text per match, case-insensitive on request, binary and node_modules skipped, capped with a count", async () => {
    expect(text(await call(grepTool, { pattern: "beta", glob: "**/*.{ts,md}" })).split("\n")).toEqual([
      "notes.md:1: beta notes",
      "src/a.ts:2: // TODO: beta",
    ]);
    expect(text(await call(grepTool, { pattern: "beta", ignoreCase: true, glob: "src/**" })).split("\n")).toEqual([
      "src/a.ts:2: // TODO: beta",
      "src/deep/b.ts:1: const Beta = 2;",
    ]);
    expect(text(await call(grepTool, { pattern: "hit \\d+" }))).toMatch(/\[200 of 700 matches not shown\]$/);
    expect(await call(grepTool, { pattern: "([" })).toMatchObject({ isError: true, errorCode: "invalid_pattern" });
    expect(text(await call(grepTool, { pattern: "zzz" }))).toMatch(/^No match for \/zzz\//);
  });

  it("grep: a catastrophic pattern runs in linear time, and lookaround is refused with a clear message", async () => {
    // With a backtracking engine, `(a+)+$` over 5,000 a's and a b would not finish in any useful time.
    await writeFile(path.join(workspace, "redos.txt"), `${"a".repeat(5000)}b\n`);
    const result = await call(grepTool, { pattern: "(a+)+$", glob: "redos.txt" });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toMatch(/^No match for/);
    const refused = await call(grepTool, { pattern: "(?<=x)y" });
    expect(refused).toMatchObject({ isError: true, errorCode: "invalid_pattern" });
    expect(text(refused)).toContain("RE2 syntax");
  });
});
