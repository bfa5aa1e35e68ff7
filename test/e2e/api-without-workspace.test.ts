import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ProjectId, TenantId } from "../../src/ids.js";
import { hostWorkspacePath } from "../../src/workspace/host-copies.js";
import { projectTrashRoot } from "../../src/workspace/project-trash.js";
import { tinyPng } from "../fixtures/test-tools.js";
import { ApiClient, type ApiResponse, script, waitFor } from "../helpers/api-client.js";
import { type FoyaProcess, processGroup } from "../helpers/processes.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

/**
 * The API touches no workspace (SPEC W3): an API process with no workspace root at all (its
 * FOYA_WORKSPACES_DIR does not exist) running as a uid that could not enter the host's root anyway
 * serves reverts, the trash, fork and rewind, artifacts and project deletion, all done on the
 * project's host (a worker process, as root, with the root) through host requests, with the same
 * answers as the in-process API of a root process.
 */
const nobody = { uid: 65534, gid: 65534 };
const hostId = `w3-host-${randomBytes(3).toString("hex")}`;
const missingRoot = `/nonexistent-foya-${randomBytes(4).toString("hex")}/workspaces`;

let env: TestEnv;
let api: FoyaProcess;
let remote: ApiClient;
let local: ApiClient;
const processes = processGroup();

beforeAll(async () => {
  // The compiled entries' folder is made private to root (mkdtemp): the API's uid must read its code.
  await chmod(inject("entryBuild"), 0o755);
  env = await createTestEnv({ FOYA_HOST_ID: hostId });
  await processes.start("worker", env.env);
  api = await processes.start("api", { ...env.env, FOYA_WORKSPACES_DIR: missingRoot }, { runAs: nobody });
  local = await env.newTenant("owner");
  remote = ApiClient.forUrl(api.url as string, local.key, local.tenantId);
}, 60_000);
afterAll(async () => {
  await processes.killAll();
  await env?.close();
});

/** The project's folder on its host: the worker's root, whatever the API recorded. */
const hostFolder = (client: ApiClient, projectId: ProjectId) =>
  hostWorkspacePath(env.config.workspaces.dir, { tenantId: client.tenantId as TenantId, projectId });

/** Runs `calls` as one step of a new run of the session; answers the run's id once it completed, every call succeeded. */
async function runCalls(client: ApiClient, sessionId: string, calls: object[]): Promise<string> {
  const started = await client.startRun(sessionId, script([calls, [{ text: "done" }]]));
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  expect((await client.waitForRun(started.body.id)).status).toBe("completed");
  const failed = await env.query("select name, error_code from tool_calls where run_id = $1 and status <> 'succeeded'", [started.body.id]);
  expect(failed).toEqual([]);
  return started.body.id;
}

/** An answer with its ids, uuids and times numbered by first appearance: two runs of the scenario compare equal. */
function normalized(transcript: unknown[]): unknown {
  const names = new Map<string, string>();
  const nameOf = (token: string, kind: string) => {
    if (!names.has(token)) names.set(token, `<${kind}#${names.size}>`);
    return names.get(token) as string;
  };
  return JSON.parse(
    JSON.stringify(transcript)
      .replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b/g, "<time>")
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, (token) => nameOf(token, "uuid"))
      // `newId` (and the scripted model's call ids): a prefix and 16 base64url characters.
      .replace(/\b([a-z]{3,4})_[0-9A-Za-z_-]{16}(?![0-9A-Za-z_-])/g, (token, kind: string) => nameOf(token, kind)),
  );
}

/**
 * Everything the API does on a project's files, through `client`: reverts, the trash, an
 * artifact, a fork and a rewind, the project's deletion. Answers what the API answered; checks the
 * files on the host as it goes.
 */
async function scenario(client: ApiClient, raw: (urlPath: string) => Promise<Response>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const note = (what: string, answer: ApiResponse<unknown>) => {
    seen.push({ what, status: answer.status, body: answer.body });
    return answer;
  };
  const { projectId, sessionId } = await client.newSession({ approvalMode: "auto" });
  expect((await client.request("PUT", `/v1/projects/${projectId}/policy`, { rules: { allow: ["delete"] } })).status).toBe(200);
  const folder = hostFolder(client, projectId);
  const firstRun = await runCalls(client, sessionId, [
    { tool: "write", args: { path: "a.txt", content: "first\n" } },
    { tool: "write", args: { path: "c.txt", content: "trash me\n" } },
  ]);
  const secondRun = await runCalls(client, sessionId, [
    { tool: "write", args: { path: "a.txt", content: "second\n" } },
    { tool: "write", args: { path: "b.txt", content: "new\n" } },
    { tool: "delete", args: { path: "c.txt" } },
    { tool: "make_image", args: {} },
  ]);
  const changes = note("file changes", await client.get(`/v1/sessions/${sessionId}/file-changes`)).body as {
    fileChanges: Array<{ id: string; path: string; existedBefore: boolean }>;
  };

  // A revert, on the host's copy; a second one is refused.
  const overwrite = changes.fileChanges.find((change) => change.path === "a.txt" && change.existedBefore);
  expect(note("revert", await client.post(`/v1/file-changes/${overwrite?.id}/revert`)).status).toBe(200);
  expect(await readFile(path.join(folder, "a.txt"), "utf8")).toBe("first\n");
  expect(note("revert again", await client.post(`/v1/file-changes/${overwrite?.id}/revert`)).status).toBe(409);

  // The trash, listed and restored on the host.
  const trash = note("trash", await client.get(`/v1/projects/${projectId}/trash`)).body as { entries: Array<{ id: string }> };
  const [entry] = trash.entries;
  expect(note("restore", await client.post(`/v1/projects/${projectId}/trash/${entry?.id}/restore`)).status).toBe(200);
  expect(await readFile(path.join(folder, "c.txt"), "utf8")).toBe("trash me\n");
  expect(note("restore again", await client.post(`/v1/projects/${projectId}/trash/${entry?.id}/restore`)).status).toBe(404);
  note("trash after", await client.get(`/v1/projects/${projectId}/trash`));

  // An artifact a tool made, read from the store.
  const image = (await client.toolMessages(sessionId)).flatMap((message) => message.content).find((part) => part.type === "image");
  const artifact = await raw(`/v1/artifacts/${image.artifactId}`);
  const bytes = Buffer.from(await artifact.arrayBuffer());
  seen.push({ what: "artifact", status: artifact.status, type: artifact.headers.get("content-type"), same: bytes.equals(tinyPng) });

  // A fork: its folder made by its host from the point's checkpoint, at its first batch.
  const forked = note("fork", await client.post(`/v1/sessions/${sessionId}/fork`, { at: { runId: secondRun } })).body as {
    session: { id: string };
    projectId: ProjectId;
  };
  const forkRun = await runCalls(client, forked.session.id, [{ tool: "read", args: { path: "a.txt" } }]);
  const [read] = await env.query<{ result: string }>("select result::text from tool_calls where run_id = $1", [forkRun]);
  expect(read?.result).toContain("second");
  // A rewind: the folder as it stands (reverted, restored) is looked at by the host and kept as the tip.
  const rewound = note("rewind", await client.post(`/v1/sessions/${sessionId}/rewind`, { at: { runId: firstRun } })).body as {
    tipCheckpointId: string;
  };
  const [tip] = await env.query<{ reason: string }>("select reason from workspace_checkpoints where id = $1", [rewound.tipCheckpointId]);
  expect(tip?.reason).toBe("before_rewind");

  // The project's deletion: its folder and its trash go on the host.
  expect(note("delete", await client.delete(`/v1/projects/${projectId}`)).status).toBe(204);
  const trashRoot = projectTrashRoot(env.config.workspaces.dir, folder);
  await waitFor(async () => !existsSync(folder) && !existsSync(trashRoot), 20_000, "the project's folder and trash to go on the host");
  note("project after", await client.get(`/v1/projects/${projectId}`));
  return seen;
}

describe("an API process without workspaces", () => {
  it("W3: an API process started with no access to any workspace root (different uid, no such folder) serves revert, trash restore, project deletion and artifact reads, with the same results as before", async () => {
    const owner = (await readFile(`/proc/${api.pid}/status`, "utf8")).match(/^Uid:\s+(\d+)/m)?.[1];
    expect(owner).toBe(String(nobody.uid));
    // The host's root lets others pass through, never list (0711): the API's uid could read nothing of it.
    expect((await stat(env.config.workspaces.dir)).mode & 0o066).toBe(0);

    const auth = { authorization: `Bearer ${local.key}` };
    const throughProcess = await scenario(remote, (urlPath) => fetch(`${api.url}${urlPath}`, { headers: auth }));
    const inProcess = await scenario(local, async (urlPath) => env.app.request(urlPath, { headers: auth }));
    expect(normalized(throughProcess)).toEqual(normalized(inProcess));
    expect(throughProcess.map((step) => [(step as { what: string }).what, (step as { status: number }).status])).toEqual([
      ["file changes", 200],
      ["revert", 200],
      ["revert again", 409],
      ["trash", 200],
      ["restore", 200],
      ["restore again", 404],
      ["trash after", 200],
      ["artifact", 200],
      ["fork", 201],
      ["rewind", 200],
      ["delete", 204],
      ["project after", 404],
    ]);
    expect(throughProcess).toContainEqual({ what: "artifact", status: 200, type: "image/png", same: true });
    // The API made no folder anywhere.
    expect(existsSync(path.dirname(missingRoot))).toBe(false);
  }, 180_000);
});
