import { afterAll, describe, expect, it } from "vitest";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { judgeCall } from "../../src/gateway/judge-call.js";
import { capTextParts, headAndTail, mapCallToolResult } from "../../src/mcp/mcp-results.js";
import { listMcpTools, mapMcpTools, mcpParameters, mcpSideEffect, mcpToolName } from "../../src/mcp/mcp-tools.js";
import type { AnyTool } from "../../src/tools/tool.js";
import { connections, faultyConfig, scope } from "./mcp-test-helpers.js";

const limits = { maxResultTextBytes: 256 * 1024, maxResultBinaryBytes: 1024 };
const mcp = connections();
afterAll(() => mcp.close());

function judgeAuto(tool: AnyTool) {
  return judgeCall({
    mode: "auto",
    tool: { name: tool.name, sideEffect: tool.sideEffect },
    subject: tool.approvalSubject?.({} as never) ?? { kind: "none" },
    workspaceDir: "/work/ws",
    policies: [],
  });
}

const fakeTool = (name: string, annotations?: McpTool["annotations"]): McpTool => ({
  name,
  inputSchema: { type: "object", properties: {} },
  ...(annotations ? { annotations } : {}),
});

describe("S5: MCP tools pass through the approval gateway by their annotations", () => {
  it("S5: maps annotations to side-effect classes", () => {
    expect(mcpSideEffect(undefined)).toBe("other");
    expect(mcpSideEffect({})).toBe("other");
    expect(mcpSideEffect({ readOnlyHint: true })).toBe("read");
    expect(mcpSideEffect({ readOnlyHint: true, openWorldHint: false })).toBe("read");
    expect(mcpSideEffect({ readOnlyHint: true, openWorldHint: true })).toBe("network");
    expect(mcpSideEffect({ destructiveHint: true })).toBe("write");
    expect(mcpSideEffect({ destructiveHint: true, openWorldHint: true })).toBe("write");
    expect(mcpSideEffect({ openWorldHint: true })).toBe("network");
    expect(mcpSideEffect({ readOnlyHint: false, destructiveHint: false, openWorldHint: false })).toBe("other");
  });

  it("S5: an MCP tool marked destructive asks in Auto mode; a read-only one runs; Full Access allows", async () => {
    const listed = await listMcpTools({ connections: mcp, scope, config: faultyConfig() });
    if (!listed.ok) throw new Error(listed.message);
    const drop = listed.tools.find((d) => d.mcpName === "drop-table")!.tool;
    expect(drop.name).toBe("mcp__faulty__drop_table");
    expect(drop.sideEffect).toBe("write");
    const verdict = judgeAuto(drop);
    expect(verdict.decision).toBe("ask");
    const ok = listed.tools.find((d) => d.mcpName === "ok")!.tool;
    expect(judgeAuto(ok).decision).toBe("allow");
    // No annotations: Auto cannot judge its effects, so it asks.
    const crash = listed.tools.find((d) => d.mcpName === "crash")!.tool;
    expect(judgeAuto(crash).decision).toBe("ask");
    expect(judgeCall({ mode: "full_access", tool: drop, subject: { kind: "none" }, workspaceDir: "/work/ws", policies: [] }).decision).toBe(
      "allow",
    );
    expect(judgeCall({ mode: "manual", tool: ok, subject: { kind: "none" }, workspaceDir: "/work/ws", policies: [] }).decision).toBe(
      "allow",
    );
    expect(judgeCall({ mode: "manual", tool: drop, subject: { kind: "none" }, workspaceDir: "/work/ws", policies: [] }).decision).toBe(
      "ask",
    );
    // Network tools ask in Auto unless the policy allows the network.
    const [web] = mapMcpTools({ connections: mcp, scope, config: faultyConfig() }, [fakeTool("web", { openWorldHint: true })]);
    expect(judgeAuto(web!.tool).decision).toBe("ask");
  });
});

describe("M1: mapping MCP tools onto the tool contract", () => {
  it("M1: names are mcp__<server>__<tool>, sanitized, capped at 64 characters, and distinct", () => {
    expect(mcpToolName("everything", "get-sum")).toBe("mcp__everything__get_sum");
    expect(mcpToolName("My Server!", "Do.Thing/Now")).toBe("mcp__my_server__do_thing_now");
    const long = mcpToolName("a-very-long-server-name-for-testing", "an-equally-long-tool-name-that-goes-on-and-on");
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).toMatch(/^mcp__[a-z0-9_]+$/);
    expect(mcpToolName("a-very-long-server-name-for-testing", "an-equally-long-tool-name-that-goes-on-and-on-2")).not.toBe(long);
    const mapped = mapMcpTools({ connections: mcp, scope, config: faultyConfig() }, [fakeTool("get-sum"), fakeTool("get_sum")]);
    expect(mapped.map((d) => d.mcpName)).toEqual(["get-sum", "get_sum"]);
    expect(new Set(mapped.map((d) => d.tool.name)).size).toBe(2);
    for (const d of mapped) expect(d.tool.name).toMatch(/^mcp__faulty__get_sum/);
  });

  it("M1: a server with many tools has them deferred; deferTools overrides", () => {
    const many = Array.from({ length: 21 }, (_, i) => fakeTool(`tool-${i}`));
    expect(mapMcpTools({ connections: mcp, scope, config: faultyConfig() }, many).every((d) => d.tool.exposure === "deferred")).toBe(true);
    expect(
      mapMcpTools({ connections: mcp, scope, config: faultyConfig() }, many.slice(0, 20)).every((d) => d.tool.exposure === "direct"),
    ).toBe(true);
    expect(
      mapMcpTools({ connections: mcp, scope, config: faultyConfig({ deferTools: true }) }, many.slice(0, 2)).every(
        (d) => d.tool.exposure === "deferred",
      ),
    ).toBe(true);
    expect(
      mapMcpTools({ connections: mcp, scope, config: faultyConfig({ deferTools: false }) }, many).every(
        (d) => d.tool.exposure === "direct",
      ),
    ).toBe(true);
  });

  it("M1: parameters are the server's schema as an object schema without $schema", () => {
    expect(
      mcpParameters({
        type: "object",
        $schema: "https://json-schema.org/draft/2020-12/schema",
        properties: { a: { type: "number" } },
        required: ["a"],
      } as McpTool["inputSchema"]),
    ).toEqual({
      type: "object",
      properties: { a: { type: "number" } },
      required: ["a"],
    });
  });
});

describe("M1: mapping MCP results", () => {
  it("M1: text, images, embedded resources and isError", () => {
    const png = Buffer.from("\x89PNG fake", "latin1");
    const result = mapCallToolResult(
      {
        content: [
          { type: "text", text: "hello" },
          { type: "image", mimeType: "image/png", data: png.toString("base64") },
          { type: "resource", resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "inside" } },
          {
            type: "resource",
            resource: { uri: "file:///b.bin", mimeType: "application/zip", blob: Buffer.from("zip").toString("base64") },
          },
          { type: "resource_link", uri: "file:///c", name: "c" },
          { type: "image", mimeType: "image/png", data: Buffer.alloc(2048).toString("base64") },
          { type: "weird" },
        ],
      },
      limits,
    );
    expect(result.isError).toBeUndefined();
    expect(result.content[0]).toEqual({ type: "text", text: "hello" });
    expect(result.content[1]).toEqual({ type: "image-data", mediaType: "image/png", data: png });
    expect(result.content[2]).toEqual({ type: "text", text: "Resource file:///a.txt (text/plain):\ninside" });
    expect(result.content[3]).toEqual({ type: "binary", mediaType: "application/zip", name: "file:///b.bin", data: Buffer.from("zip") });
    expect(result.content[4]).toMatchObject({ type: "text", text: expect.stringContaining("file:///c") });
    expect(result.content[5]).toMatchObject({ type: "text", text: expect.stringContaining("over the limit of 1024 bytes") });
    expect(result.content[6]).toMatchObject({ type: "text", text: expect.stringContaining("unsupported type") });
    expect(mapCallToolResult({ content: [{ type: "text", text: "bad" }], isError: true }, limits)).toEqual({
      content: [{ type: "text", text: "bad" }],
      isError: true,
      errorCode: "mcp_tool_error",
    });
    expect(mapCallToolResult({ content: [], structuredContent: { x: 1 } }, limits).content[0]).toMatchObject({
      type: "text",
      text: expect.stringContaining('"x": 1'),
    });
  });

  it("M1: outputs are capped like other tools: head and tail, with what was left out", () => {
    const lines = Array.from({ length: 50_000 }, (_, i) => `line ${i}`).join("\n");
    const [part] = capTextParts([{ type: "text", text: lines }], 10_000);
    if (part?.type !== "text") throw new Error("no text");
    expect(Buffer.byteLength(part.text)).toBeLessThan(10_300);
    expect(part.text.startsWith("line 0\nline 1\n")).toBe(true);
    expect(part.text.endsWith("line 49999")).toBe(true);
    expect(part.text).toMatch(/\[… \d+ bytes \(\d+ lines\) of \d+ bytes \(50000 lines\) left out …\]/);
    const big = mapCallToolResult({ content: [{ type: "text", text: "x".repeat(400 * 1024) }] }, limits);
    expect(Buffer.byteLength((big.content[0] as { text: string }).text)).toBeLessThan(257 * 1024);
    expect(headAndTail("short", 100)).toBe("short");
  });
});
