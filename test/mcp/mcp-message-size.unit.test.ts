import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { McpConnections } from "../../src/mcp/mcp-connections.js";
import type { McpServerConfig } from "../../src/mcp/mcp-config.js";
import { connections, faultyConfig, scope, textOf } from "./mcp-test-helpers.js";

// What a server can make a worker hold (SPEC M3, O1): one message is capped (`maxMessageBytes`,
// FOYA_MCP_MAX_MESSAGE_BYTES), counted as it arrives, in linear time; past the cap the call gets an
// is_error result and the connection is restarted. Sizes here are far past the cap on purpose.
const here = path.dirname(fileURLToPath(import.meta.url));
const mib = 1024 * 1024;

/** What `work` answers, and by how much this process's resident memory rose above where it started while it ran (sampled every 5 ms). */
async function memoryGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    const value = await work();
    return { value, growth: Math.max(peak, process.memoryUsage.rss()) - baseline };
  } finally {
    clearInterval(sampler);
  }
}

let httpServer: ChildProcess;
let httpUrl: string;

beforeAll(async () => {
  httpServer = spawn(process.execPath, [path.join(here, "fixtures/huge-http-server.mjs")], { stdio: ["ignore", "pipe", "inherit"] });
  httpUrl = await new Promise<string>((resolve, reject) => {
    let text = "";
    httpServer.stdout?.on("data", (data: Buffer) => {
      text += data.toString();
      const port = /PORT=(\d+)/.exec(text)?.[1];
      if (port) resolve(`http://127.0.0.1:${port}/mcp`);
    });
    httpServer.once("exit", (code) => reject(new Error(`the fixture server exited (${code})`)));
  });
});
afterAll(() => {
  httpServer?.kill("SIGKILL");
});

const httpConfig: McpServerConfig = { name: "huge", transport: { kind: "http", url: "", headers: {} } };
const http = (): McpServerConfig => ({ ...httpConfig, transport: { kind: "http", url: httpUrl, headers: {} } });

async function withConnections(maxMessageBytes: number, body: (mcp: McpConnections) => Promise<void>): Promise<void> {
  const mcp = connections({ maxMessageBytes, initialBackoffMs: 50, maxBackoffMs: 50, callTimeoutMs: 120_000 });
  try {
    await body(mcp);
  } finally {
    await mcp.close();
  }
}

/** Calls `ok` until the server answers again (the connection was dropped and waits out its backoff). */
async function answersAgain(mcp: McpConnections, config: McpServerConfig): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await mcp.callTool(scope, config, "ok", {});
    if (!result.isError || Date.now() > deadline) return textOf(result);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("M3: an MCP server's messages are bounded", () => {
  it("M3, O1: a stdio line past the cap ends the call with mcp_message_too_large, unread, and the server is restarted", async () => {
    await withConnections(4 * mib, async (mcp) => {
      const config = faultyConfig();
      const { value: result, growth } = await memoryGrowth(() => mcp.callTool(scope, config, "huge-line", { mib: 256 }));
      expect(result).toMatchObject({ isError: true, errorCode: "mcp_message_too_large" });
      expect(textOf(result)).toContain(
        `The MCP server "faulty" sent a line on stdout larger than the ${4 * mib} bytes a worker accepts (FOYA_MCP_MAX_MESSAGE_BYTES)`,
      );
      // 256 MiB were sent; at most the cap (and the chunk that passed it) was kept.
      expect(growth).toBeLessThan(64 * mib);
      expect(await answersAgain(mcp, config)).toMatch(/^ok from \d+$/);
    });
  });

  it("M3: a stdio line is split in linear time: a 60 MiB message under the cap costs well under the 14 s of CPU it took when the whole buffer was joined per chunk", async () => {
    // A bound the task states as a test; generous: measured about 0.6 s here, and 14 s for 60 MiB before.
    await withConnections(128 * mib, async (mcp) => {
      const config = faultyConfig();
      expect(await answersAgain(mcp, config)).toMatch(/^ok from \d+$/);
      const cpu = process.cpuUsage();
      const result = await mcp.callTool(scope, config, "huge-line", { mib: 60 });
      const cpuSeconds = (({ user, system }) => (user + system) / 1e6)(process.cpuUsage(cpu));
      expect(result.isError).toBeFalsy();
      // Kept as head and tail (O1), with what was left out.
      expect(textOf(result)).toMatch(/^x+/);
      expect(textOf(result).length).toBeLessThan(mib);
      expect(cpuSeconds).toBeLessThan(5);
    });
  });

  it("M3, O1: HTTP answers past the cap (a JSON body, one event of an event stream) end their calls with mcp_message_too_large; the worker's memory does not grow with them", async () => {
    await withConnections(4 * mib, async (mcp) => {
      expect(await answersAgain(mcp, http())).toBe("ok");
      // Three at once, 3 × 150 MiB: the shape that took a worker from 0.2 to 3.9 GB.
      const { value: results, growth } = await memoryGrowth(() =>
        Promise.all([
          mcp.callTool(scope, http(), "huge", { mib: 150 }),
          mcp.callTool(scope, http(), "huge", { mib: 150 }),
          mcp.callTool(scope, http(), "huge-sse", { mib: 150 }),
        ]),
      );
      for (const result of results) {
        expect(result).toMatchObject({ isError: true, errorCode: "mcp_message_too_large" });
        expect(textOf(result)).toMatch(
          /^The MCP server "huge" sent (a response body|an event) larger than the 4194304 bytes a worker accepts \(FOYA_MCP_MAX_MESSAGE_BYTES\)/,
        );
      }
      expect(growth).toBeLessThan(128 * mib);
      expect(await answersAgain(mcp, http())).toBe("ok");
    });
  });

  it("M3: an event stream is counted per event: events under the cap pass whatever the stream's total", async () => {
    await withConnections(4 * mib, async (mcp) => {
      // Five events of 3 MiB on one stream (four notifications, then the result): 15 MiB in all.
      const result = await mcp.callTool(scope, http(), "huge-sse", { mib: 3, events: 5 });
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(textOf(result)).toMatch(/^x+/);
    });
  });
});
