import { createHash } from "node:crypto";
import type { Tool as McpTool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { defineTool, type AnyTool, type Exposure, type SideEffect } from "../tools/tool.js";
import type { McpScope, McpServerConfig } from "./mcp-config.js";
import type { McpConnections, McpFailure } from "./mcp-connections.js";

/** Providers accept function names of at most 64 characters (OpenAI's limit). */
const maxMcpToolNameLength = 64;
const maxDescriptionLength = 4096;

/** `[a-z0-9_]` only: lower case, anything else becomes `_`, runs of `_` collapse. */
export function sanitizeMcpNamePart(name: string): string {
  const cleaned = name
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .replace(/_+/g, "_")
    .replace(/^_+|_+$/g, "");
  return cleaned === "" ? "x" : cleaned;
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 8);
}

/**
 * `mcp__<server>__<tool>` (SPEC M1), sanitized, at most 64 characters: a longer name
 * keeps its start and a hash of the real names, so distinct tools stay distinct.
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp__${sanitizeMcpNamePart(server)}__${sanitizeMcpNamePart(tool)}`;
  if (name.length <= maxMcpToolNameLength) return name;
  const suffix = `_${shortHash(`${server}\u0000${tool}`)}`;
  return `${name.slice(0, maxMcpToolNameLength - suffix.length).replace(/_+$/, "")}${suffix}`;
}

/**
 * The side-effect class the approval gateway judges an MCP tool by (SPEC S5), from the
 * server's annotations (hints: the configuration that trusts the server trusts them):
 * read-only → `read` (or `network` if it also reaches an open world); destructive →
 * `write` (Auto asks: it cannot tell where the tool writes); open-world → `network`;
 * no hints → `other`, which Auto asks for too. No MCP tool bypasses the gateway.
 */
export function mcpSideEffect(annotations: ToolAnnotations | undefined): SideEffect {
  if (!annotations) return "other";
  if (annotations.readOnlyHint === true) return annotations.openWorldHint === true ? "network" : "read";
  if (annotations.destructiveHint === true) return "write";
  if (annotations.openWorldHint === true) return "network";
  return "other";
}

/** The server's input schema as our parameters: an object schema, without `$schema` (ajv draft-07 would refuse 2020-12). */
export function mcpParameters(inputSchema: McpTool["inputSchema"] | undefined): Record<string, unknown> {
  const schema: Record<string, unknown> = { ...(inputSchema ?? {}) };
  delete schema.$schema;
  schema.type = "object";
  if (schema.properties === undefined) schema.properties = {};
  return schema;
}

/** One MCP tool as we register it, with the way back to the server's own name. */
export interface McpToolDescriptor {
  tool: AnyTool;
  server: string;
  /** The tool's name on its server. */
  mcpName: string;
}

export interface McpToolsOptions {
  connections: McpConnections;
  scope: McpScope;
  config: McpServerConfig;
}

/**
 * Lists a server's tools and maps them onto our tool contract (SPEC M1, T1): named
 * `mcp__<server>__<tool>`, the server's JSON Schema as parameters, a side-effect class
 * from the annotations, deferred when the server has many tools. Running one calls the
 * server through the shared connection; every failure is an is_error result.
 */
export async function listMcpTools(options: McpToolsOptions): Promise<{ ok: true; tools: McpToolDescriptor[] } | McpFailure> {
  const listed = await options.connections.listTools(options.scope, options.config);
  if (!listed.ok) return listed;
  return { ok: true, tools: mapMcpTools(options, listed.value) };
}

export function mapMcpTools(options: McpToolsOptions, mcpTools: readonly McpTool[]): McpToolDescriptor[] {
  const { connections, scope, config } = options;
  const deferred = config.deferTools ?? mcpTools.length > connections.defaults.deferThreshold;
  const exposure: Exposure = deferred ? "deferred" : "direct";
  const used = new Set<string>();
  const descriptors: McpToolDescriptor[] = [];
  for (const mcpTool of mcpTools) {
    let name = mcpToolName(config.name, mcpTool.name);
    if (used.has(name)) {
      // Two real names sanitized alike (`get-sum`, `get_sum`): the later one gets a hash.
      const suffix = `_${shortHash(`${config.name}\u0000${mcpTool.name}`)}`;
      name = `${name.slice(0, maxMcpToolNameLength - suffix.length)}${suffix}`;
    }
    used.add(name);
    const sideEffect = mcpSideEffect(mcpTool.annotations);
    const realName = mcpTool.name;
    const description = describe(config.name, mcpTool);
    const tool = defineTool<Record<string, unknown>>({
      name,
      description,
      parameters: mcpParameters(mcpTool.inputSchema),
      exposure,
      sideEffect,
      parallel: sideEffect === "read",
      run: (context, args) =>
        connections.callTool(scope, config, realName, args ?? {}, {
          signal: context.signal,
          onProgress: (message) => context.reportProgress(message),
        }),
    });
    descriptors.push({ tool, server: config.name, mcpName: realName });
  }
  return descriptors;
}

function describe(server: string, tool: McpTool): string {
  const title = tool.title ?? tool.annotations?.title;
  const text = tool.description?.trim() || title || tool.name;
  const full = `${text}\n(MCP server "${server}", tool "${tool.name}")`;
  return full.length > maxDescriptionLength ? `${full.slice(0, maxDescriptionLength - 1)}…` : full;
}
