import { afterEach, describe, expect, it } from "vitest";
import type { McpConnections } from "../../src/mcp/mcp-connections.js";
import { connections, faultyConfig, groupAlive, processAlive, scope, textOf } from "./mcp-test-helpers.js";

const fast = { initialBackoffMs: 50, maxBackoffMs: 200, stopGraceMs: 300 };

let mcp: McpConnections | undefined;
afterEach(async () => {
  await mcp?.close();
  mcp = undefined;
});

async function waitUntil(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** Calls `ok` until the backoff has passed and the restarted server answers. */
async function healthyCallAfterBackoff(manager: McpConnections, config = faultyConfig()): Promise<string> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const result = await manager.callTool(scope, config, "ok", {});
    if (!result.isError) return textOf(result);
    expect(result.errorCode).toBe("mcp_unavailable");
    expect(textOf(result)).toMatch(/unavailable.*new connection will be tried/s);
    if (Date.now() > deadline) throw new Error(textOf(result));
    await new Promise((done) => setTimeout(done, 25));
  }
}

function pidOf(manager: McpConnections): number {
  const pid = manager.status(scope, "faulty").pid;
  if (pid === undefined) throw new Error("not connected");
  return pid;
}

describe("M3: failing MCP servers", () => {
  it("M3: a server that exits mid-call gives an is_error result, is restarted later, and leaves no process", async () => {
    mcp = connections(fast);
    const first = await mcp.callTool(scope, faultyConfig(), "ok", {});
    expect(textOf(first)).toMatch(/^ok from \d+/);
    const pid = pidOf(mcp);
    const crashed = await mcp.callTool(scope, faultyConfig(), "crash", {});
    expect(crashed.isError).toBe(true);
    expect(crashed.errorCode).toBe("mcp_unavailable");
    expect(textOf(crashed)).toContain('The MCP server "faulty" exited with code 3');
    expect(textOf(crashed)).toContain("about to crash");
    expect(mcp.status(scope, "faulty").state).toBe("down");
    await waitUntil(() => !groupAlive(pid));
    const again = await healthyCallAfterBackoff(mcp);
    expect(again).toMatch(/^ok from \d+/);
    expect(pidOf(mcp)).not.toBe(pid);
  });

  it("M3: a server that hangs past the call timeout gives mcp_timeout, is stopped and restarted", async () => {
    mcp = connections(fast);
    const config = faultyConfig({ callTimeoutMs: 300 });
    await mcp.callTool(scope, config, "ok", {});
    const pid = pidOf(mcp);
    const started = Date.now();
    const hung = await mcp.callTool(scope, config, "hang", {});
    expect(Date.now() - started).toBeLessThan(3000);
    expect(hung).toMatchObject({ isError: true, errorCode: "mcp_timeout" });
    expect(textOf(hung)).toContain('The MCP server "faulty" did not answer the call of its tool "hang" within 300 ms');
    await waitUntil(() => !groupAlive(pid));
    expect(await healthyCallAfterBackoff(mcp, config)).toMatch(/^ok from \d+/);
    expect(pidOf(mcp)).not.toBe(pid);
  });

  it("M3: a server that writes garbage to stdout gives mcp_protocol_error, is stopped and restarted", async () => {
    mcp = connections(fast);
    await mcp.callTool(scope, faultyConfig(), "ok", {});
    const pid = pidOf(mcp);
    const garbage = await mcp.callTool(scope, faultyConfig(), "garbage", {});
    expect(garbage).toMatchObject({ isError: true, errorCode: "mcp_protocol_error" });
    expect(textOf(garbage)).toContain("not JSON-RPC");
    expect(textOf(garbage)).toContain("this is not JSON-RPC at all");
    await waitUntil(() => !groupAlive(pid));
    expect(await healthyCallAfterBackoff(mcp)).toMatch(/^ok from \d+/);
  });

  it("M3: a malformed result is an is_error result, not an exception", async () => {
    mcp = connections(fast);
    // The server's SDK refuses its own bad result: a JSON-RPC error, the connection stays.
    const refused = await mcp.callTool(scope, faultyConfig(), "bad-result", {});
    expect(refused).toMatchObject({ isError: true, errorCode: "mcp_tool_error" });
    expect(textOf(refused)).toContain("Invalid tools/call result");
    // A result of the wrong shape reaching the client is a protocol error.
    const malformed = await mcp.callTool(scope, faultyConfig(), "raw-bad-result", {});
    expect(malformed.isError).toBe(true);
    expect(malformed.errorCode, JSON.stringify(malformed)).toBe("mcp_protocol_error");
    expect(await healthyCallAfterBackoff(mcp)).toMatch(/^ok from \d+/);
  });

  it("M3: a server that will not start gives mcp_unavailable, with backoff between attempts", async () => {
    mcp = connections({ ...fast, initialBackoffMs: 60_000 });
    const config = faultyConfig({ name: "missing", transport: { kind: "stdio", command: "/nonexistent/mcp-server", args: [], env: {} } });
    const first = await mcp.callTool(scope, config, "ok", {});
    expect(first).toMatchObject({ isError: true, errorCode: "mcp_unavailable" });
    expect(textOf(first)).toContain('The MCP server "missing" could not be started');
    const second = await mcp.callTool(scope, config, "ok", {});
    expect(second).toMatchObject({ isError: true, errorCode: "mcp_unavailable" });
    expect(textOf(second)).toMatch(/new connection will be tried in about \d+ s/);
    const exits = faultyConfig({
      name: "exits",
      transport: { kind: "stdio", command: process.execPath, args: ["-e", "process.exit(7)"], env: {} },
    });
    const exited = await mcp.listTools(scope, exits);
    expect(exited).toMatchObject({ ok: false, errorCode: "mcp_unavailable" });
    if (!exited.ok) expect(exited.message).toContain("exited with code 7");
  });

  it("M3: a server that never finishes starting times out at the start-up limit", async () => {
    mcp = connections(fast);
    const silent = faultyConfig({
      name: "silent",
      startupTimeoutMs: 300,
      transport: { kind: "stdio", command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], env: {} },
    });
    const started = Date.now();
    const result = await mcp.listTools(scope, silent);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(result).toMatchObject({ ok: false, errorCode: "mcp_unavailable" });
    if (!result.ok) expect(result.message).toContain("did not finish starting within 300 ms");
  });

  it("M3: the whole process group is stopped, grandchildren included", async () => {
    mcp = connections(fast);
    const answer = await mcp.callTool(scope, faultyConfig(), "spawn-child", {});
    const grandchild = Number(textOf(answer));
    const pid = pidOf(mcp);
    expect(processAlive(grandchild)).toBe(true);
    // The server crashes: its grandchild does not outlive the drop.
    await mcp.callTool(scope, faultyConfig(), "crash", {});
    await waitUntil(() => !groupAlive(pid) && !processAlive(grandchild));
    await healthyCallAfterBackoff(mcp);
    const again = await mcp.callTool(scope, faultyConfig(), "spawn-child", {});
    const second = Number(textOf(again));
    expect(processAlive(second)).toBe(true);
    const pid2 = pidOf(mcp);
    await mcp.close();
    expect(groupAlive(pid2)).toBe(false);
    expect(processAlive(second)).toBe(false);
  });

  it("M3: cancelling a call answers cancelled and keeps the connection", async () => {
    mcp = connections(fast);
    await mcp.callTool(scope, faultyConfig(), "ok", {});
    const pid = pidOf(mcp);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await mcp.callTool(scope, faultyConfig(), "hang", {}, { signal: controller.signal });
    expect(result).toMatchObject({ isError: true, errorCode: "cancelled" });
    const ok = await mcp.callTool(scope, faultyConfig(), "ok", {});
    expect(textOf(ok)).toBe(`ok from ${pid}`);
  });
});
