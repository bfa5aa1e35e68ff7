import { createRoute, z } from "@hono/zod-openapi";
import { requestCommandCancel } from "../../runs/cancel-command.js";
import type { CommandRow } from "../../store/commands.js";
import { notFound } from "../../errors.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { findSession, idOf } from "./find-owned.js";

const CommandSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    runId: z.string(),
    command: z.string(),
    status: z.enum(["running", "exited", "failed", "killed", "cancelled", "lost"]),
    exitCode: z.number().nullable(),
    signal: z.string().nullable(),
    output: z.string(),
    outputBytes: z.number(),
    outputLines: z.number(),
    createdAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .openapi("Command");

function serialize(row: CommandRow) {
  return {
    id: row.id,
    sessionId: row.sessionId,
    runId: row.runId,
    command: row.command,
    status: row.status,
    exitCode: row.exitCode,
    signal: row.signal,
    output: row.output,
    outputBytes: row.outputBytes,
    outputLines: row.outputLines,
    createdAt: row.createdAt.toISOString(),
    endedAt: row.endedAt ? row.endedAt.toISOString() : null,
  };
}

const listCommands = createRoute({
  method: "get",
  path: "/v1/sessions/{id}/commands",
  summary: "Background commands of a session",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: z.object({ commands: z.array(CommandSchema) }) } }, description: "Commands" },
    ...errorResponses,
  },
});
const getCommand = createRoute({
  method: "get",
  path: "/v1/commands/{id}",
  summary: "A background command: status and bounded output",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: CommandSchema } }, description: "The command" }, ...errorResponses },
});
const cancelCommand = createRoute({
  method: "post",
  path: "/v1/commands/{id}/cancel",
  summary: "Stop a background command, on whichever worker runs it",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/json": { schema: CommandSchema } }, description: "The command as it is now" },
    ...errorResponses,
  },
});

export function registerCommandRoutes(app: App, services: ApiServices): void {
  app.openapi(listCommands, async (c) => {
    const session = await findSession(services.store, c.get("tenantId"), c.req.valid("param").id);
    const rows = await services.store.commands.commandsOfSession(session.id);
    return c.json({ commands: rows.map(serialize) }, 200);
  });
  app.openapi(getCommand, async (c) => {
    const row = await services.store.commands.findCommand(c.get("tenantId"), idOf("cmd", c.req.valid("param").id, "command"));
    if (!row) throw notFound("command");
    return c.json(serialize(row), 200);
  });
  app.openapi(cancelCommand, async (c) => {
    const tenantId = c.get("tenantId");
    const row = await services.store.commands.findCommand(tenantId, idOf("cmd", c.req.valid("param").id, "command"));
    if (!row) throw notFound("command");
    await requestCommandCancel(services, row);
    return c.json(serialize((await services.store.commands.findCommand(tenantId, row.id)) ?? row), 200);
  });
}
