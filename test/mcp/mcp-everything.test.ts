import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listMcpTools, type McpToolDescriptor } from "../../src/mcp/mcp-tools.js";
import type { McpConnections } from "../../src/mcp/mcp-connections.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { toolContext } from "../helpers/tool-context.js";
import { connections, everythingConfig, groupAlive, scope, textOf } from "./mcp-test-helpers.js";

const secret = `foya-secret-${process.pid}-${Date.now()}`;
const marker = `foya-marker-${process.pid}`;
const config = everythingConfig({ FOYA_MCP_MARKER: marker });

let mcp: McpConnections;
let tools: McpToolDescriptor[];

function tool(name: string): Tool<Record<string, unknown>> {
  const found = tools.find((descriptor) => descriptor.tool.name === name);
  if (!found) throw new Error(`no tool ${name} among ${tools.map((d) => d.tool.name).join(", ")}`);
  return found.tool as unknown as Tool<Record<string, unknown>>;
}

async function run(name: string, args: Record<string, unknown>, progress: string[] = []): Promise<ToolResult> {
  const context = toolContext({ workspaceDir: "/tmp", reportProgress: async (message) => void progress.push(message) });
  return tool(name).run(context, args, { callId: "call_1", name, argumentsRaw: JSON.stringify(args) });
}

beforeAll(async () => {
  // Secrets of the worker: none may reach the server's environment.
  process.env.FOYA_TEST_SECRET = secret;
  process.env.DATABASE_URL ??= "postgres://worker-only@127.0.0.1:5432/secret_db";
  process.env.REDIS_URL ??= "redis://127.0.0.1:6379/9";
  mcp = connections();
  const listed = await listMcpTools({ connections: mcp, scope, config });
  if (!listed.ok) throw new Error(listed.message);
  tools = listed.tools;
});

afterAll(async () => {
  delete process.env.FOYA_TEST_SECRET;
  await mcp.close();
});

describe("M1: server-everything over stdio", () => {
  it("M1: lists its tools as mcp__everything__<tool> with their JSON Schemas and a map back to the real names", () => {
    const names = tools.map((descriptor) => descriptor.tool.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "mcp__everything__echo",
        "mcp__everything__get_sum",
        "mcp__everything__get_tiny_image",
        "mcp__everything__trigger_long_running_operation",
        "mcp__everything__get_env",
      ]),
    );
    for (const name of names) expect(name).toMatch(/^mcp__everything__[a-z0-9_]+$/);
    const sum = tools.find((descriptor) => descriptor.tool.name === "mcp__everything__get_sum");
    expect(sum?.mcpName).toBe("get-sum");
    expect(sum?.tool.parameters).toMatchObject({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } } });
    expect(sum?.tool.parameters).not.toHaveProperty("$schema");
    // Few tools: sent directly; get-env is annotated read-only.
    expect(tools.length).toBeLessThanOrEqual(20);
    expect(sum?.tool.exposure).toBe("direct");
    expect(tool("mcp__everything__get_env").sideEffect).toBe("read");
  });

  it("M1: calls echo and get-sum", async () => {
    const echoed = await run("mcp__everything__echo", { message: "hello mcp" });
    expect(echoed.isError).toBeFalsy();
    expect(textOf(echoed)).toContain("hello mcp");
    const sum = await run("mcp__everything__get_sum", { a: 19, b: 23 });
    expect(sum.isError).toBeFalsy();
    expect(textOf(sum)).toContain("42");
  });

  it("M1: many calls under one run's signal leave no listener on it", async () => {
    // A batch's calls share the run's signal; the SDK never removes the listeners it adds to a request's signal.
    const controller = new AbortController();
    for (let i = 0; i < 20; i++) {
      const result = await mcp.callTool(scope, config, "echo", { message: `n${i}` }, { signal: controller.signal });
      expect(result.isError).toBeFalsy();
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("M1: get-tiny-image returns an image-data part with the PNG's bytes", async () => {
    const result = await run("mcp__everything__get_tiny_image", {});
    expect(result.isError).toBeFalsy();
    const image = result.content.find((part) => part.type === "image-data");
    expect(image).toBeDefined();
    if (image?.type !== "image-data") throw new Error("no image");
    expect(image.mediaType).toBe("image/png");
    expect(Buffer.isBuffer(image.data)).toBe(true);
    expect(image.data.subarray(1, 4).toString("latin1")).toBe("PNG");
  });

  it("M1: trigger-long-running-operation completes, reporting progress", async () => {
    const progress: string[] = [];
    const result = await run("mcp__everything__trigger_long_running_operation", { duration: 1, steps: 3 }, progress);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/complete/i);
    expect(progress.length).toBeGreaterThan(0);
  });

  it("M1: get-env shows only the configured environment, never the worker's secrets", async () => {
    const result = await run("mcp__everything__get_env", {});
    expect(result.isError).toBeFalsy();
    const text = textOf(result);
    expect(text).toContain(marker);
    expect(text).not.toContain(secret);
    expect(text).not.toContain("FOYA_TEST_SECRET");
    expect(text).not.toContain("DATABASE_URL");
    expect(text).not.toContain("REDIS_URL");
    expect(text).not.toContain(process.env.DATABASE_URL ?? "<unset>");
    expect(text).not.toContain(process.env.REDIS_URL ?? "<unset>");
    const env = JSON.parse(text) as Record<string, string>;
    expect(env.FOYA_MCP_MARKER).toBe(marker);
    expect(env.HOME).toBeUndefined();
    // No PATH unless the manager is given one explicitly (defaults.stdioPath).
    expect(env.PATH).toBeUndefined();
  });

  it("M1: one connection is shared by every call, and close() stops the server's process group", async () => {
    const status = mcp.status(scope, "everything");
    expect(status.state).toBe("connected");
    const pid = status.pid;
    if (pid === undefined) throw new Error("no pid");
    await run("mcp__everything__echo", { message: "again" });
    expect(mcp.status(scope, "everything").pid).toBe(pid);
    const other = connections();
    const listed = await listMcpTools({ connections: other, scope, config });
    expect(listed.ok).toBe(true);
    const otherPid = other.status(scope, "everything").pid;
    expect(otherPid).toBeDefined();
    expect(groupAlive(otherPid!)).toBe(true);
    await other.close();
    expect(groupAlive(otherPid!)).toBe(false);
    expect(other.status(scope, "everything").state).toBe("idle");
    // A closed manager refuses calls with an is_error result.
    const descriptor = tools.find((d) => d.tool.name === "mcp__everything__echo")!;
    const refused = await other.callTool(scope, config, descriptor.mcpName, { message: "x" });
    expect(refused).toMatchObject({ isError: true, errorCode: "mcp_unavailable" });
  });
});

describe("M2: resources and prompts of server-everything", () => {
  it("M2: lists and reads its resources", async () => {
    const listed = await mcp.listResources(scope, config);
    if (!listed.ok) throw new Error(listed.message);
    expect(listed.value.length).toBeGreaterThan(0);
    const first = listed.value[0]!;
    expect(first.uri).toMatch(/^demo:\/\//);
    const read = await mcp.readResource(scope, config, first.uri);
    if (!read.ok) throw new Error(read.message);
    expect(read.value.length).toBeGreaterThan(0);
    expect(read.value[0]!.uri).toBe(first.uri);
    const content = read.value[0]!;
    expect("text" in content ? content.text.length : "blob" in content ? content.blob.length : 0).toBeGreaterThan(0);
    const missing = await mcp.readResource(scope, config, "demo://resource/does-not-exist");
    expect(missing.ok).toBe(false);
  });

  it("M2: lists and gets its prompts", async () => {
    const listed = await mcp.listPrompts(scope, config);
    if (!listed.ok) throw new Error(listed.message);
    const names = listed.value.map((prompt) => prompt.name);
    expect(names).toEqual(expect.arrayContaining(["simple-prompt", "args-prompt"]));
    const simple = await mcp.getPrompt(scope, config, "simple-prompt");
    if (!simple.ok) throw new Error(simple.message);
    expect(simple.value.messages.length).toBeGreaterThan(0);
    const args = listed.value.find((prompt) => prompt.name === "args-prompt")!;
    const required = Object.fromEntries((args.arguments ?? []).filter((a) => a.required).map((a) => [a.name, "Paris"]));
    const withArgs = await mcp.getPrompt(scope, config, "args-prompt", required);
    if (!withArgs.ok) throw new Error(withArgs.message);
    expect(JSON.stringify(withArgs.value.messages)).toContain("Paris");
  });
});
