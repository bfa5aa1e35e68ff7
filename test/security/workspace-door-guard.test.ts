import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files.js";
import { repoRoot } from "../helpers/test-env.js";

/**
 * Confinement by construction (SPEC S6): the workspace door is the only code
 * that touches a workspace's files. This guard fails when any other module of
 * the service starts importing the file system (or the trash, which moves
 * files by name), so a new tool cannot quietly bypass the door.
 */
const allowed: Record<string, string> = {
  "src/api/console-routes.ts": "checks that the web console's build (FOYA_CONSOLE_DIR, outside every workspace) exists before serving it",
  "src/config.ts": "reads the operator's providers file",
  "src/health/heartbeat-file.ts": "writes and reads the worker's heartbeat file for container health checks",
  "src/processes/process-start.ts": "reads a process's start time from /proc, so a reused pid is not taken for a dead one",
  "src/sandbox/confinement-report.ts": "reads the host's cgroup facts for /readyz",
  "src/sandbox/find-executable.ts": "looks up programs on the tool PATH",
  "src/sandbox/git-guard.ts":
    "binds the git metadata the door found read-only from descriptors opened through the sandbox's own root, never a path bwrap resolves",
  "src/sandbox/overlay/apply-upper.ts":
    "applies a shell call's layer: renames into folders held by descriptor, never followed through a symlink",
  "src/sandbox/overlay/call-layers.ts": "makes and removes the root-only folders of layered calls, outside every workspace",
  "src/sandbox/overlay/layer-journal.ts":
    "writes and reads a layered call's (or a door write's) records and apply marker in its root-only folder, and whether a door write's staged version is still there",
  "src/sandbox/overlay/set-layer-aside.ts":
    "moves a layer that could not be settled into the project's trash whole, its device nodes dropped first",
  "src/sandbox/overlay/upper-changes.ts": "reads a call's upper folder, and the workspace through held folders",
  "src/sandbox/sandbox-network.ts": "opens the sandbox's namespaces under /proc",
  "src/sandbox/sandbox-runner.ts": "reads host facts: system trees, hidden paths, resolv.conf",
  "src/sandbox/service-dir.ts": "finds the service's own install folder to hide it",
  "src/sandbox/sandbox-tree.ts": "walks a started sandbox's own tree from /proc/<init>/root, one real folder at a time",
  "src/sandbox/temp-budget.ts": "the per-host ledger of each tenant's temporary space, root's, outside every workspace",
  "src/workspace/checkpoint/captured-file-reader.ts":
    "the door: reads a captured file again for the checkpoint's blob store, through held folders, answered only while it hashes to its digest",
  "src/workspace/checkpoint/entry-writers.ts":
    "the door: a rebuild writes each folder, file (O_CREAT | O_EXCL | O_NOFOLLOW) and link in a parent held by descriptor, links only when they stay inside",
  "src/workspace/checkpoint/file-digest.ts":
    "the door: hashes a workspace file for a checkpoint, opened O_PATH | O_NOFOLLOW in a held folder and read through its own descriptor",
  "src/workspace/checkpoint/materialize.ts":
    "the door: rebuilds a checkpoint only into an empty folder it holds open, and sets folders' modes through their held descriptors",
  "src/workspace/checkpoint/tree-capture.ts":
    "the door: a workspace's whole tree for a checkpoint, walked from held descriptors, never through a symlink, FIFOs and devices never opened",
  "src/workspace/checkpoint/rebuild-folder.ts":
    "rebuilds a workspace in a fresh sibling folder and renames it into place; sets a damaged one aside and removes it",
  "src/workspace/descriptor-walk.ts": "the door: descriptor-relative resolution",
  "src/workspace/folder-handles.ts":
    "the door: folders held by descriptor, a bounded set, each reached one real folder at a time, never through a symlink",
  "src/workspace/git-folders.ts": "the door: tells git folders by their content",
  "src/workspace/held-file.ts": "the door: I/O on entries it holds, through their descriptors",
  "src/workspace/host-copies.ts":
    "a host's placement markers and project locks, root's, outside every workspace; a stale copy is set aside whole by one rename of its folder, never entered",
  "src/workspace/git-repositories.ts": "finds the workspace's repositories from held descriptors, for the sandbox's read-only binds",
  "src/workspace/open-workspace-files.ts": "the door itself",
  "src/workspace/project-workspace.ts": "creates workspace folders and hands them to the tenant's uid",
  "src/workspace/remove-tree.ts":
    "the door: removes a deleted project's workspace and trash (on a worker, in slices) through held descriptors, never following a symlink",
  "src/workspace/workspace-manifest.ts":
    "the door: a workspace's manifest walked from held descriptors, to summarize what a background command changed",
  "src/workspace/project-trash.ts": "the door: each project's trash, outside every workspace, and its listing",
  "src/workspace/workspace-trash.ts": "the door: removal into the project's trash through a private staging folder",
  "src/workspace/workspace-tree.ts": "the door: walks folders from held descriptors",
};
const fileSystemImport =
  /from\s+["'](?:node:)?fs(?:\/promises)?["']|from\s+["']trash["']|require\(\s*["'](?:node:)?fs|import\(\s*["'](?:node:)?fs/;

describe("the workspace door is the only way to a workspace", () => {
  it("S6: no module outside the door and the sandbox's host checks imports the file system; no tool gets a host path", async () => {
    const importing: string[] = [];
    for (const file of await sourceFiles(path.join(repoRoot, "src"))) {
      if (fileSystemImport.test(await readFile(file, "utf8"))) importing.push(path.relative(repoRoot, file));
    }
    expect(importing.sort()).toEqual(Object.keys(allowed).sort());
    expect(importing.filter((file) => file.startsWith("src/tools/"))).toEqual([]);
    // The tool contract hands tools the door and a process starter, never a folder.
    const contract = await readFile(path.join(repoRoot, "src/tools/tool.ts"), "utf8");
    expect(contract).not.toMatch(/workspaceDir|workspacePath/);
  });
});
