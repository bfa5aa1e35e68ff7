import { afterAll, describe, expect, it } from "vitest";
import { script, waitFor } from "../helpers/api-client.js";
import { startFoyaProcess, type FoyaProcess } from "../helpers/processes.js";
import { useTestEnv } from "../helpers/test-env.js";

// Commands run on worker processes, so that deleting and crashing can reach them across processes.
const { env, client } = useTestEnv({ fullAccess: true });
const processes: FoyaProcess[] = [];
afterAll(async () => {
  for (const child of processes) child.kill("SIGKILL");
  await Promise.all(processes.map((child) => child.exited));
});

async function worker(): Promise<FoyaProcess> {
  const child = await startFoyaProcess("worker", env.env);
  processes.push(child);
  return child;
}

/** Starts a background command through a model turn; answers its id once the turn has ended. */
async function startCommand(sessionId: string, command: string): Promise<string> {
  const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command, background: true } }], [{ text: "started" }]]));
  expect((await client.waitForRun(run.body.id, 30_000)).status).toBe("completed");
  const [row] = await env.query<{ text: string }>("select result->0->>'text' as text from tool_calls where run_id = $1", [run.body.id]);
  const id = /Started background command (cmd_\S+)\./.exec(row!.text)?.[1];
  expect(id, row!.text).toBeDefined();
  return id!;
}

const commandOf = async (id: string) => (await client.get(`/v1/commands/${id}`)).body;
const settled = (id: string) =>
  waitFor(
    async () => {
      const command = await commandOf(id);
      return command.status !== "running" && command;
    },
    30_000,
    `command ${id} to end`,
  );

describe("background commands", () => {
  it("B1: bash starts a background command and answers its id at once; status and output are read anywhere; it ends truthfully", async () => {
    await worker();
    const { sessionId } = await client.newSession();
    const id = await startCommand(sessionId, "for i in 1 2 3; do echo tick $i; sleep 0.3; done");
    expect((await commandOf(id)).status).toBe("running");
    const done = await settled(id);
    expect(done).toMatchObject({ status: "exited", exitCode: 0, signal: null });
    expect(done.output).toBe("tick 1\ntick 2\ntick 3\n");

    // The model reads it with the command tools in a later turn.
    const read = await client.startRun(
      sessionId,
      script([
        [
          { tool: "command_status", args: { id } },
          { tool: "command_output", args: { id, tail: 1 } },
        ],
        [{ text: "ok" }],
      ]),
    );
    await client.waitForRun(read.body.id);
    const results = await env.query<{ text: string }>(
      "select result->0->>'text' as text from tool_calls where run_id = $1 order by call_index",
      [read.body.id],
    );
    expect(results[0]!.text).toContain("exited, exit code 0");
    expect(results[1]!.text).toMatch(/tick 3\n$/);
    expect((await client.get(`/v1/sessions/${sessionId}/commands`)).body.commands.map((c: { id: string }) => c.id)).toEqual([id]);
  });

  it("B1, B2: status never lies: a killed command is not exit 0, a cancelled one says so; output stays bounded", async () => {
    // `kill` asks outside Full Access; this test is about truthful status, not the gateway.
    const { sessionId } = await client.newSession({ approvalMode: "full_access" });
    const killed = await startCommand(sessionId, "echo started; kill -9 $$");
    expect(await settled(killed)).toMatchObject({ status: "killed", signal: "SIGKILL", exitCode: null });
    const failing = await startCommand(sessionId, "exit 4");
    expect(await settled(failing)).toMatchObject({ status: "failed", exitCode: 4 });

    const long = await startCommand(sessionId, "sleep 60");
    expect((await client.post(`/v1/commands/${long}/cancel`)).status).toBe(200);
    expect(await settled(long)).toMatchObject({ status: "cancelled" });

    const loud = await startCommand(sessionId, "yes | head -c 5000000");
    const bounded = await settled(loud);
    expect(bounded).toMatchObject({ status: "exited", outputBytes: 5_000_000, outputLines: 2_500_000 });
    expect(bounded.output.length).toBeLessThan(1024 * 1024 + 200);
    expect(bounded.output).toContain("of 5000000 bytes omitted");
  });

  it("B3: deleting the session stops its commands on whichever worker process runs them", async () => {
    const { sessionId } = await client.newSession();
    const id = await startCommand(sessionId, "sleep 60");
    expect((await client.delete(`/v1/sessions/${sessionId}`)).status).toBe(204);
    expect(await settled(id)).toMatchObject({ status: "cancelled" });
  });

  it("B4: when the owning worker is SIGKILLed, its command is reported lost, not running", async () => {
    for (const child of processes.splice(0)) {
      child.kill("SIGKILL");
      await child.exited;
    }
    const owner = await worker();
    const { sessionId } = await client.newSession();
    const id = await startCommand(sessionId, "sleep 60");
    owner.kill("SIGKILL");
    await owner.exited;
    await worker(); // its sweeper notices the lapsed lease
    expect(await settled(id)).toMatchObject({ status: "lost" });
    const other = await env.newTenant("other");
    expect((await other.get(`/v1/commands/${id}`)).status).toBe(404);
    expect((await other.post(`/v1/commands/${id}/cancel`)).status).toBe(404);
  });
});
