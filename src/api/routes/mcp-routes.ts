import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { FoyaError, notFound } from "../../errors.js";
import type { McpFailure } from "../../mcp/mcp-connections.js";
import { mcpConfigOf, mcpScopeOf } from "../../mcp/mcp-server-rows.js";
import type { McpServerRow } from "../../store/mcp-servers.js";
import type { ApiServices, App, AppEnv } from "../app-env.js";
import { findProject, idOf } from "./find-owned.js";
import { refusedLiteralHost } from "../../net/address-guard.js";
import { ErrorSchema, errorResponses, foyaId, httpUrl, IdParam, text } from "../schemas.js";
import type { McpTransportConfig } from "../../core/mcp-transport.js";
import { environmentNamePattern, refusedStdioServer } from "../../core/mcp-stdio-commands.js";
import { parseId, type TenantId } from "../../ids.js";

const serverName = /^[a-z0-9][a-z0-9_-]{0,39}$/;
/** An HTTP header name (RFC 9110 token). */
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const StdioTransportSchema = z
  .object({
    kind: z.literal("stdio"),
    command: text().trim().min(1, "must not be empty").max(4096),
    args: z.array(text().max(8192)).max(200).optional(),
    env: z
      .record(
        z.string().regex(environmentNamePattern, "environment variable names must match ^[A-Za-z_][A-Za-z0-9_]*$"),
        text().max(32_768),
      )
      .optional()
      .openapi({
        description:
          "The server's whole environment, only names the operator admitted for the command (FOYA_MCP_STDIO_COMMANDS); the values are secrets and are never answered.",
      }),
    network: z.boolean().optional().openapi({
      description: "Whether the server, which runs in the sandbox, may reach the network (never the host's loopback). Default false.",
    }),
  })
  .strict();

const HttpTransportSchema = z
  .object({
    kind: z.literal("http"),
    url: httpUrl(),
    headers: z
      .record(z.string().regex(headerName, "must be a valid HTTP header name"), text().max(8192))
      .optional()
      .openapi({ description: "Sent with every request; the values are secrets and are never answered." }),
  })
  .strict();

const McpServerCreateSchema = z
  .object({
    name: z.string().regex(serverName, "must match ^[a-z0-9][a-z0-9_-]{0,39}$"),
    projectId: foyaId().optional().openapi({ description: "Only this project sees the server; absent: every project of the tenant." }),
    transport: z.discriminatedUnion("kind", [StdioTransportSchema, HttpTransportSchema]),
    startupTimeoutMs: z.number().int().min(100).max(600_000).optional(),
    callTimeoutMs: z.number().int().min(100).max(86_400_000).optional(),
    deferTools: z
      .boolean()
      .optional()
      .openapi({ description: "true: its tools are deferred; false: sent directly; absent: deferred when it has many tools." }),
  })
  .strict()
  .openapi("McpServerCreate");

const McpServerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    projectId: z.string().nullable(),
    transport: z.union([
      z.object({
        kind: z.literal("stdio"),
        command: z.string(),
        args: z.array(z.string()),
        envNames: z.array(z.string()),
        network: z.boolean(),
      }),
      z.object({ kind: z.literal("http"), url: z.string(), headerNames: z.array(z.string()) }),
    ]),
    startupTimeoutMs: z.number().nullable(),
    callTimeoutMs: z.number().nullable(),
    deferTools: z.boolean().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("McpServer");

const McpResourceSchema = z
  .object({
    uri: z.string(),
    name: z.string(),
    title: z.string().optional(),
    description: z.string().optional(),
    mimeType: z.string().optional(),
    size: z.number().optional(),
  })
  .openapi("McpResource");

const McpResourceContentSchema = z
  .object({
    uri: z.string(),
    mimeType: z.string().nullable(),
    text: z.string().optional(),
    blob: z.string().optional().openapi({ description: "Binary contents, base64" }),
  })
  .openapi("McpResourceContent");

const McpPromptSchema = z
  .object({
    name: z.string(),
    title: z.string().optional(),
    description: z.string().optional(),
    arguments: z.array(z.object({ name: z.string(), description: z.string().optional(), required: z.boolean().optional() })),
  })
  .openapi("McpPrompt");

const McpPromptResultSchema = z
  .object({
    description: z.string().optional(),
    messages: z.array(z.object({ role: z.string(), content: z.record(z.string(), z.unknown()) })),
  })
  .openapi("McpPromptResult");

const ProjectServerParams = z.object({
  id: foyaId().openapi({ param: { name: "id", in: "path" } }),
  server: z
    .string()
    .regex(serverName, "must match ^[a-z0-9][a-z0-9_-]{0,39}$")
    .openapi({ param: { name: "server", in: "path" } }),
});
const ProjectPromptParams = ProjectServerParams.extend({
  prompt: text()
    .min(1)
    .max(512)
    .openapi({ param: { name: "prompt", in: "path" } }),
});

const json = <T extends z.ZodType>(schema: T, description: string) => ({ content: { "application/json": { schema } }, description });
const conflictResponse = { 409: json(ErrorSchema, "A server of that name exists in the same scope") };
const mcpErrorResponses = {
  502: json(
    ErrorSchema,
    "The MCP server is unavailable, broke the protocol, sent a message over the size limit or refused the request (mcp_unavailable, mcp_protocol_error, mcp_message_too_large, mcp_request_failed)",
  ),
  429: {
    ...json(
      ErrorSchema,
      "Too many requests with this API key (rate_limited), or this tenant's MCP requests filled its share of the workers' slots for the whole wait (mcp_busy); see Retry-After",
    ),
    headers: { "Retry-After": { description: "Seconds to wait before asking again", schema: { type: "integer" as const } } },
  },
  503: {
    ...json(ErrorSchema, "No worker took the request in time (no_worker): MCP servers run on workers only"),
    headers: { "Retry-After": { description: "Seconds to wait before asking again", schema: { type: "integer" as const } } },
  },
  504: json(ErrorSchema, "The MCP server did not answer in time (mcp_timeout)"),
};

const create = createRoute({
  method: "post",
  path: "/v1/mcp-servers",
  summary: "Configure an MCP server for the tenant, or for one of its projects",
  request: { body: { content: { "application/json": { schema: McpServerCreateSchema } }, required: true } },
  responses: { 201: json(McpServerSchema, "Created"), ...errorResponses, ...conflictResponse },
});
const list = createRoute({
  method: "get",
  path: "/v1/mcp-servers",
  summary: "The tenant's MCP servers; environment and header values are never answered, only their names",
  request: { query: z.object({ projectId: foyaId().optional() }) },
  responses: { 200: json(z.object({ servers: z.array(McpServerSchema) }), "MCP servers"), ...errorResponses },
});
const get = createRoute({
  method: "get",
  path: "/v1/mcp-servers/{id}",
  request: { params: IdParam },
  responses: { 200: json(McpServerSchema, "The MCP server"), ...errorResponses },
});
const remove = createRoute({
  method: "delete",
  path: "/v1/mcp-servers/{id}",
  summary: "Remove an MCP server configuration; its running connection is stopped",
  request: { params: IdParam },
  responses: { 204: { description: "Deleted" }, ...errorResponses },
});
const listResources = createRoute({
  method: "get",
  path: "/v1/projects/{id}/mcp/{server}/resources",
  summary: "Resources of the project's MCP server of that name (its own, else the tenant-wide one)",
  request: { params: ProjectServerParams },
  responses: { 200: json(z.object({ resources: z.array(McpResourceSchema) }), "Resources"), ...errorResponses, ...mcpErrorResponses },
});
const readResource = createRoute({
  method: "get",
  path: "/v1/projects/{id}/mcp/{server}/resources/read",
  summary: "Read one resource: text, or binary contents as base64 with their MIME type",
  request: { params: ProjectServerParams, query: z.object({ uri: text().min(1).max(8192) }) },
  responses: { 200: json(z.object({ contents: z.array(McpResourceContentSchema) }), "Contents"), ...errorResponses, ...mcpErrorResponses },
});
const listPrompts = createRoute({
  method: "get",
  path: "/v1/projects/{id}/mcp/{server}/prompts",
  summary: "Prompts of the project's MCP server of that name",
  request: { params: ProjectServerParams },
  responses: { 200: json(z.object({ prompts: z.array(McpPromptSchema) }), "Prompts"), ...errorResponses, ...mcpErrorResponses },
});
const getPrompt = createRoute({
  method: "post",
  path: "/v1/projects/{id}/mcp/{server}/prompts/{prompt}",
  summary: "Get a prompt with its arguments: its messages",
  request: {
    params: ProjectPromptParams,
    body: {
      content: { "application/json": { schema: z.object({ arguments: z.record(z.string(), text().max(65_536)).optional() }).strict() } },
      required: false,
    },
  },
  responses: { 200: json(McpPromptResultSchema, "The prompt's messages"), ...errorResponses, ...mcpErrorResponses },
});

/** Never includes env or header values: they are secrets. */
function serializeMcpServer(row: McpServerRow) {
  const transport = row.transport;
  return {
    id: row.id,
    name: row.name,
    projectId: row.projectId,
    transport:
      transport.kind === "stdio"
        ? {
            kind: "stdio" as const,
            command: transport.command,
            args: transport.args,
            envNames: Object.keys(transport.env).sort(),
            network: transport.network === true,
          }
        : { kind: "http" as const, url: transport.url, headerNames: Object.keys(transport.headers).sort() },
    startupTimeoutMs: row.startupTimeoutMs,
    callTimeoutMs: row.callTimeoutMs,
    deferTools: row.deferTools,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function mcpFailure(c: Context<AppEnv>, failure: McpFailure) {
  const body = { error: { code: failure.errorCode, message: failure.message } };
  if (failure.errorCode === "no_worker" || failure.errorCode === "mcp_busy") {
    c.header("Retry-After", "5");
    return c.json(body, failure.errorCode === "mcp_busy" ? 429 : 503);
  }
  return c.json(body, failure.errorCode === "mcp_timeout" ? 504 : 502);
}

function optional<T>(value: T | undefined | null): T | undefined {
  return value === null || value === undefined ? undefined : value;
}

export function registerMcpRoutes(app: App, services: ApiServices): void {
  const { store } = services;

  async function requireProject(tenantId: TenantId, id: string): Promise<void> {
    await findProject(store, tenantId, id);
  }

  /**
   * The project's server of that name; 404 for another tenant's project. A worker answers for it
   * (`mcpViaWorkers`), given only the server's tenant, scope and name.
   */
  async function serverOf(tenantId: TenantId, rawProjectId: string, name: string) {
    const projectId = idOf("prj", rawProjectId, "project");
    await requireProject(tenantId, projectId);
    const row = await store.mcpServers.resolveMcpServer(tenantId, projectId, name);
    if (!row) throw notFound("MCP server");
    return { scope: mcpScopeOf(row), config: mcpConfigOf(row) };
  }

  app.openapi(create, async (c) => {
    const body = c.req.valid("json");
    const tenantId = c.get("tenantId");
    if (body.projectId !== undefined) await requireProject(tenantId, body.projectId);
    refuseUnsafeTransport(services.config, body.transport);
    const transport: McpTransportConfig =
      body.transport.kind === "stdio"
        ? {
            kind: "stdio",
            command: body.transport.command,
            args: body.transport.args ?? [],
            env: body.transport.env ?? {},
            network: body.transport.network === true,
          }
        : { kind: "http", url: body.transport.url, headers: body.transport.headers ?? {} };
    const row = await store.mcpServers.createMcpServer({
      tenantId,
      projectId: body.projectId === undefined ? null : idOf("prj", body.projectId, "project"),
      name: body.name,
      transport,
      startupTimeoutMs: body.startupTimeoutMs ?? null,
      callTimeoutMs: body.callTimeoutMs ?? null,
      deferTools: body.deferTools ?? null,
    });
    if (!row)
      throw new FoyaError(
        "conflict",
        `an MCP server named "${body.name}" already exists ${body.projectId ? "in that project" : "for the tenant"}`,
      );
    return c.json(serializeMcpServer(row), 201);
  });

  app.openapi(list, async (c) => {
    const { projectId } = c.req.valid("query");
    // A project id of another kind names no project: the tenant's own servers, as for an unknown one.
    const project = projectId === undefined ? undefined : parseId("prj", projectId);
    const rows =
      project === null
        ? (await store.mcpServers.listMcpServers(c.get("tenantId"))).filter((row) => row.projectId === null)
        : await store.mcpServers.listMcpServers(c.get("tenantId"), project);
    return c.json({ servers: rows.map(serializeMcpServer) }, 200);
  });

  app.openapi(get, async (c) => {
    const row = await store.mcpServers.findMcpServer(c.get("tenantId"), idOf("mcp", c.req.valid("param").id, "MCP server"));
    if (!row) throw notFound("MCP server");
    return c.json(serializeMcpServer(row), 200);
  });

  app.openapi(remove, async (c) => {
    const row = await store.mcpServers.deleteMcpServer(c.get("tenantId"), idOf("mcp", c.req.valid("param").id, "MCP server"));
    if (!row) throw notFound("MCP server");
    await services.mcpViaWorkers.disconnect(mcpScopeOf(row), row.name);
    return c.body(null, 204);
  });

  app.openapi(listResources, async (c) => {
    const { id, server } = c.req.valid("param");
    const { scope, config } = await serverOf(c.get("tenantId"), id, server);
    const outcome = await services.mcpViaWorkers.listResources(scope, config);
    if (!outcome.ok) return mcpFailure(c, outcome);
    const resources = outcome.value.map((r) => ({
      uri: r.uri,
      name: r.name,
      title: optional(r.title),
      description: optional(r.description),
      mimeType: optional(r.mimeType),
      size: optional(r.size),
    }));
    return c.json({ resources }, 200);
  });

  app.openapi(readResource, async (c) => {
    const { id, server } = c.req.valid("param");
    const { scope, config } = await serverOf(c.get("tenantId"), id, server);
    const outcome = await services.mcpViaWorkers.readResource(scope, config, c.req.valid("query").uri);
    if (!outcome.ok) return mcpFailure(c, outcome);
    const contents = outcome.value.map((part) =>
      "blob" in part && typeof part.blob === "string"
        ? { uri: part.uri, mimeType: part.mimeType ?? null, blob: part.blob }
        : { uri: part.uri, mimeType: part.mimeType ?? null, text: "text" in part && typeof part.text === "string" ? part.text : "" },
    );
    return c.json({ contents }, 200);
  });

  app.openapi(listPrompts, async (c) => {
    const { id, server } = c.req.valid("param");
    const { scope, config } = await serverOf(c.get("tenantId"), id, server);
    const outcome = await services.mcpViaWorkers.listPrompts(scope, config);
    if (!outcome.ok) return mcpFailure(c, outcome);
    const prompts = outcome.value.map((p) => ({
      name: p.name,
      title: optional(p.title),
      description: optional(p.description),
      arguments: (p.arguments ?? []).map((a) => ({ name: a.name, description: optional(a.description), required: optional(a.required) })),
    }));
    return c.json({ prompts }, 200);
  });

  app.openapi(getPrompt, async (c) => {
    const { id, server, prompt } = c.req.valid("param");
    const body = (c.req.valid("json") as { arguments?: Record<string, string> } | undefined) ?? {};
    const { scope, config } = await serverOf(c.get("tenantId"), id, server);
    const outcome = await services.mcpViaWorkers.getPrompt(scope, config, prompt, body.arguments ?? {});
    if (!outcome.ok) return mcpFailure(c, outcome);
    const result = outcome.value;
    return c.json(
      {
        description: optional(result.description),
        messages: result.messages.map((m) => ({ role: m.role, content: m.content as Record<string, unknown> })),
      },
      200,
    );
  });
}

/**
 * A stdio server is a program run on the service's hosts, so tenants may only
 * name commands an operator allowed, with only the environment names the operator
 * admitted for each (FOYA_MCP_STDIO_COMMANDS; loader and start-up variables never);
 * an HTTP server is fetched by the service, so private and loopback addresses are
 * refused like webhook targets, unless FOYA_MCP_ALLOW_PRIVATE.
 */
function refuseUnsafeTransport(
  config: Pick<ApiServices["config"], "mcp">,
  transport: { kind: "stdio"; command: string; env?: Record<string, string> | undefined } | { kind: "http"; url: string },
): void {
  if (transport.kind === "stdio") {
    const refused = refusedStdioServer(config.mcp.stdioCommands, { command: transport.command, env: transport.env ?? {} });
    if (refused) throw new FoyaError("bad_request", refused);
    return;
  }
  if (config.mcp.allowPrivate) return;
  const refused = refusedLiteralHost(new URL(transport.url).hostname);
  if (refused) throw new FoyaError("bad_request", `the MCP server URL is refused: ${refused}`);
}
