import type { ToolResult, ToolResultPart } from "../tools/tool.js";

/**
 * Stable error codes of MCP failures (SPEC M3), for is_error results and API answers.
 * `no_worker` and `mcp_busy` are the API's own: no worker took its request in time, or workers
 * held it back for the whole wait because its tenant's requests filled their share (src/mcp/mcp-request.ts).
 */
export type McpErrorCode =
  | "mcp_unavailable"
  | "mcp_timeout"
  | "mcp_protocol_error"
  | "mcp_message_too_large"
  | "mcp_request_failed"
  | "mcp_tool_error"
  | "cancelled"
  | "no_worker"
  | "mcp_busy";

export interface McpLimits {
  maxResultTextBytes: number;
  maxResultBinaryBytes: number;
}

/** One content block of an MCP result, loosely typed: servers may send anything. */
type McpContent = { type?: unknown; [key: string]: unknown };

/**
 * Maps an MCP `tools/call` result onto ours (SPEC M1, T3, I1, O1): text stays text;
 * images become image bytes for the artifact store; embedded resources become text
 * (with their URI) or bytes; `isError` becomes an is_error result. Text over the limit
 * keeps its head and tail with a note of what was left out.
 */
export function mapCallToolResult(result: Record<string, unknown>, limits: McpLimits): ToolResult {
  const parts: ToolResultPart[] = [];
  const content = Array.isArray(result.content) ? (result.content as McpContent[]) : [];
  for (const block of content) parts.push(...mapContent(block, limits));
  if (content.length === 0) {
    if (result.structuredContent !== undefined) parts.push({ type: "text", text: JSON.stringify(result.structuredContent, null, 2) });
    else if ("toolResult" in result) parts.push({ type: "text", text: JSON.stringify(result.toolResult, null, 2) });
  }
  if (parts.length === 0) parts.push({ type: "text", text: "(The MCP tool returned no content.)" });
  const capped = capTextParts(parts, limits.maxResultTextBytes);
  return result.isError === true ? { content: capped, isError: true, errorCode: "mcp_tool_error" } : { content: capped };
}

function mapContent(block: McpContent, limits: McpLimits): ToolResultPart[] {
  switch (block.type) {
    case "text":
      return [{ type: "text", text: String(block.text ?? "") }];
    case "image":
      return bytesPart("image", String(block.mimeType ?? "application/octet-stream"), block.data, undefined, limits);
    case "audio":
      return bytesPart("binary", String(block.mimeType ?? "application/octet-stream"), block.data, undefined, limits);
    case "resource_link": {
      const mime = typeof block.mimeType === "string" ? ` (${block.mimeType})` : "";
      const description = typeof block.description === "string" ? `: ${block.description}` : "";
      return [{ type: "text", text: `[Resource link] ${String(block.name ?? "")} <${String(block.uri ?? "")}>${mime}${description}` }];
    }
    case "resource":
      return mapResourceContents((block.resource ?? {}) as Record<string, unknown>, limits);
    default:
      return [{ type: "text", text: `[The MCP server returned content of an unsupported type ${JSON.stringify(block.type)}; omitted.]` }];
  }
}

/** One entry of an embedded resource or a `resources/read` answer. */
function mapResourceContents(resource: Record<string, unknown>, limits: McpLimits): ToolResultPart[] {
  const uri = String(resource.uri ?? "");
  const mimeType = typeof resource.mimeType === "string" ? resource.mimeType : undefined;
  if (typeof resource.text === "string") {
    return [{ type: "text", text: `Resource ${uri}${mimeType ? ` (${mimeType})` : ""}:\n${resource.text}` }];
  }
  if (typeof resource.blob === "string") {
    const mediaType = mimeType ?? "application/octet-stream";
    return bytesPart(mediaType.startsWith("image/") ? "image" : "binary", mediaType, resource.blob, uri, limits);
  }
  return [{ type: "text", text: `[Resource ${uri} had neither text nor bytes.]` }];
}

function bytesPart(
  kind: "image" | "binary",
  mediaType: string,
  base64: unknown,
  name: string | undefined,
  limits: McpLimits,
): ToolResultPart[] {
  if (typeof base64 !== "string")
    return [{ type: "text", text: `[The MCP server sent ${kind === "image" ? "an image" : "binary content"} without data; omitted.]` }];
  const data = Buffer.from(base64, "base64");
  if (data.length > limits.maxResultBinaryBytes) {
    return [
      {
        type: "text",
        text: `[${kind === "image" ? "Image" : "Binary content"} of ${data.length} bytes (${mediaType}) omitted: over the limit of ${limits.maxResultBinaryBytes} bytes.]`,
      },
    ];
  }
  if (kind === "image") return [{ type: "image-data", mediaType, data }];
  return [name === undefined ? { type: "binary", mediaType, data } : { type: "binary", mediaType, name, data }];
}

/** Keeps the total text of the parts within `maxBytes`, each part shortened in proportion to its size. */
export function capTextParts(parts: ToolResultPart[], maxBytes: number): ToolResultPart[] {
  let total = 0;
  for (const part of parts) if (part.type === "text") total += Buffer.byteLength(part.text);
  if (total <= maxBytes) return parts;
  return parts.map((part) => {
    if (part.type !== "text") return part;
    const size = Buffer.byteLength(part.text);
    const budget = Math.max(256, Math.floor((maxBytes * size) / total));
    return size <= budget ? part : { type: "text", text: headAndTail(part.text, budget) };
  });
}

/** The first and last halves of `text` within `maxBytes` (UTF-8), and what was left out between them. */
export function headAndTail(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  const half = Math.floor(maxBytes / 2);
  const head = bytes
    .subarray(0, half)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  const tail = bytes
    .subarray(bytes.length - half)
    .toString("utf8")
    .replace(/^\uFFFD/, "");
  const omitted = bytes.subarray(half, bytes.length - half);
  let omittedLines = 0;
  for (let at = omitted.indexOf(10); at !== -1; at = omitted.indexOf(10, at + 1)) omittedLines++;
  const totalLines = text.split("\n").length;
  return `${head}\n[… ${omitted.length} bytes (${omittedLines} lines) of ${bytes.length} bytes (${totalLines} lines) left out …]\n${tail}`;
}
