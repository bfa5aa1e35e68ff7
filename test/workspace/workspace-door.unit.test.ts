import { mkdir, mkdtemp, readFile, realpath, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readTool } from "../../src/tools/builtin/read-tool.js";
import { writeTool } from "../../src/tools/builtin/write-tool.js";
import type { Tool, ToolContext } from "../../src/tools/tool.js";
import { toolContext } from "../helpers/tool-context.js";
import { openWorkspaceFiles } from "../../src/workspace/open-workspace-files.js";
import { sha256 } from "../../src/tools/file-change.js";

const blobs = new Map<string, Buffer>();

let root: string;
let workspace: string;
let outside: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(path.join(tmpdir(), "foya-paths-")));
  workspace = path.join(root, "ws");
  outside = path.join(root, "outside");
  await mkdir(path.join(workspace, "src"), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "top secret\n");
  await writeFile(path.join(workspace, "src", "a.txt"), "one\ntwo\n");
  await symlink(outside, path.join(workspace, "escape"));
  await symlink(path.join(outside, "secret.txt"), path.join(workspace, "secret-link"));
  await symlink(path.join(workspace, "src"), path.join(workspace, "inside-link"));
});

function context(): ToolContext {
  return toolContext({
    workspaceDir: workspace,
    exposedTools: ["read", "write"],
    blobs: {
      put: async (content) => {
        blobs.set(sha256(content), content);
        return sha256(content);
      },
    },
  });
}
const run = <A>(tool: unknown, args: A) =>
  (tool as Tool<A>).run(context(), args, { callId: "c", name: "t", argumentsRaw: JSON.stringify(args) });

describe("workspace confinement", () => {
  it("S6: the door refuses .., absolute paths and symlinks that lead outside; links that stay inside resolve to their target", async () => {
    const door = openWorkspaceFiles({ root: workspace, trashStaging: path.join(root, "staging"), trash: path.join(root, "trash") });
    for (const requested of [
      "../outside/secret.txt",
      "/etc/passwd",
      "escape/secret.txt",
      "secret-link",
      "escape/new.txt",
      "src/../../outside",
    ]) {
      await expect(door.locate(requested), requested).rejects.toMatchObject({ code: "path_outside_workspace" });
    }
    expect(await door.locate("inside-link/a.txt")).toBe("src/a.txt");
    expect(await door.locate(path.join(workspace, "src", "a.txt"))).toBe("src/a.txt");
    expect(await door.locate("src/./../src/a.txt")).toBe("src/a.txt");
    expect(await door.locate("new.txt")).toBe("new.txt");
    await expect(door.locate("new/deep/file.txt")).rejects.toMatchObject({ code: "file_not_found" });
    await expect(door.locate("a\u0000b")).rejects.toMatchObject({ code: "invalid_path" });
    await expect(door.locate("src/a.txt/x")).rejects.toMatchObject({ code: "not_a_directory" });
    // A ".." after a link goes up from the link's target, as the kernel's does, and never above the root.
    await mkdir(path.join(workspace, "src", "deeper"), { recursive: true });
    await symlink(path.join(workspace, "src", "deeper"), path.join(workspace, "to-deeper"));
    expect(await door.locate("to-deeper/../a.txt")).toBe("src/a.txt");
    expect(await door.locate(`${workspace}/to-deeper/../a.txt`)).toBe("src/a.txt");
    await expect(door.locate("to-deeper/../../..")).rejects.toMatchObject({ code: "path_outside_workspace" });
  });

  it("T4: read and write give is_error results for escapes and missing files, and touch nothing outside", async () => {
    const escaped = await run(readTool, { path: "secret-link" });
    expect(escaped).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
    expect(JSON.stringify(escaped)).not.toContain("top secret");
    const written = await run(writeTool, { path: "escape/planted.txt", content: "x" });
    expect(written).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
    await expect(readFile(path.join(outside, "planted.txt"))).rejects.toThrow();
    expect(await run(readTool, { path: "missing.txt" })).toMatchObject({ isError: true, errorCode: "file_not_found" });
    expect(await run(readTool, { path: "src" })).toMatchObject({ isError: true, errorCode: "is_directory" });
  });

  it("read numbers lines and pages with offset and limit", async () => {
    await run(writeTool, { path: "notes/many.txt", content: `${Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join("\n")}\n` });
    const page = await run(readTool, { path: "notes/many.txt", offset: 3, limit: 2 });
    expect(page.isError).toBeUndefined();
    const text = page.content[0]!.type === "text" ? page.content[0]!.text : "";
    expect(text.split("\n").slice(0, 2)).toEqual(["     3\tline 3", "     4\tline 4"]);
    expect(text).toContain("not shown");
  });

  it("O1: read reaches any offset of a big file, cuts long lines, and says what it left out of how much", async () => {
    const big = `${Array.from({ length: 50_000 }, (_, i) => `row ${i + 1}`).join("\n")}\n`;
    await run(writeTool, { path: "big.txt", content: big });
    const far = await run(readTool, { path: "big.txt", offset: 49_999, limit: 5 });
    const farText = far.content[0]!.type === "text" ? far.content[0]!.text : "";
    expect(farText.split("\n").slice(0, 2)).toEqual([" 49999\trow 49999", " 50000\trow 50000"]);
    expect(farText).toContain(
      `showing lines 49999-50000 of 50000; ${Buffer.byteLength(big) - 20} of ${Buffer.byteLength(big)} bytes not shown`,
    );
    await run(writeTool, { path: "wide.txt", content: `${"x".repeat(5000)}\nshort\n` });
    const wide = await run(readTool, { path: "wide.txt" });
    const wideText = wide.content[0]!.type === "text" ? wide.content[0]!.text : "";
    expect(wideText).toContain("… [line cut: 3000 more characters]");
    expect(wideText).toContain("     2\tshort");
    expect(wideText).toContain("1 long lines cut at 2000 characters");
  });
});
