import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, type CommandId } from "../../src/ids.js";
import { createStoreDb, type StoreDb } from "../helpers/store-db.js";
import { placedRun, type PlacedRun } from "./run-fixtures.js";

/** `store.commands`: background commands, written only by their owning worker while they run (SPEC B1, B2, B4). */

let db: StoreDb;
beforeAll(async () => {
  db = await createStoreDb();
});
afterAll(async () => db?.close());

const output = (text: string) => ({ output: text, outputBytes: text.length, outputLines: 1 });

async function start(placed: PlacedRun, owner: string, allowed = 5, leaseMs = 30_000): Promise<CommandId | undefined> {
  const id = newId("cmd");
  const row = {
    id,
    tenantId: placed.tenantId,
    sessionId: placed.sessionId,
    runId: placed.run.id,
    command: "sleep 9",
    ownerWorker: owner,
    leaseMs,
  };
  return (await db.store.commands.recordCommandUnderCap(row, allowed)) ? id : undefined;
}

const stateOf = async (id: CommandId) =>
  (await db.query<{ status: string; output: string }>("select status, output from commands where id = $1", [id]))[0];

describe("store.commands", () => {
  it("B1: a command is recorded only under its tenant's cap", async () => {
    const placed = await placedRun(db);
    expect(await start(placed, "w-a", 1)).toBeDefined();
    expect(await start(placed, "w-a", 1)).toBeUndefined();
    expect(await db.store.commands.countRunningCommands(placed.tenantId)).toBe(1);
  });

  it("B2, B4: only the owning worker writes a running command's output and end; a lost command is not written as running", async () => {
    const placed = await placedRun(db);
    const id = (await start(placed, "w-owner")) as CommandId;
    await db.store.commands.flushCommandOutput("w-other", id, output("intruder"), 30_000);
    await db.store.commands.flushCommandOutput("w-owner", id, output("half"), 30_000);
    expect(await stateOf(id)).toEqual({ status: "running", output: "half" });
    expect(await db.store.commands.markCommandsOfWorkerLost("w-owner")).toBe(1);
    await db.store.commands.flushCommandOutput("w-owner", id, output("late"), 30_000);
    expect(await stateOf(id)).toEqual({ status: "lost", output: "half" });
    const end = { status: "exited" as const, exitCode: 0, signal: null, ...output("all") };
    await db.store.commands.finishCommand("w-other", id, end);
    expect((await stateOf(id))?.status).toBe("lost");
    await db.store.commands.finishCommand("w-owner", id, end);
    expect(await stateOf(id)).toEqual({ status: "exited", output: "all" });
  });

  it("B4: a command whose lease lapsed is lost; one whose owner renews is not", async () => {
    const placed = await placedRun(db);
    const lapsed = (await start(placed, "w-gone", 5, -1000)) as CommandId;
    const renewed = (await start(placed, "w-live", 5, -1000)) as CommandId;
    await db.store.commands.renewCommandLeases("w-live", [renewed], 30_000);
    await db.store.commands.markLostCommands();
    expect((await stateOf(lapsed))?.status).toBe("lost");
    expect((await stateOf(renewed))?.status).toBe("running");
  });
});
