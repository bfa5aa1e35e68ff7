import { describe, expect, it } from "vitest";
import { useTestEnv } from "../helpers/test-env.js";

// Default configuration: no stdio command allowed, private addresses refused.
const { client } = useTestEnv();

describe("what tenants may configure as MCP servers", () => {
  it("S3, M1: a stdio server needs a command an operator allowed, and an HTTP server may not point at private or loopback addresses", async () => {
    const stdio = await client.post("/v1/mcp-servers", {
      name: "shell",
      transport: { kind: "stdio", command: "/bin/sh", args: ["-c", "id"] },
    });
    expect(stdio.status).toBe(400);
    expect(stdio.body.error.message).toMatch(/FOYA_MCP_STDIO_COMMANDS/);
    for (const url of [
      "http://127.0.0.1:5432/mcp",
      "http://localhost/mcp",
      "http://10.0.0.5/mcp",
      "http://[::1]/mcp",
      "http://169.254.169.254/latest",
    ]) {
      const answer = await client.post("/v1/mcp-servers", { name: "inside", transport: { kind: "http", url } });
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.message, url).toMatch(/refused/);
    }
    expect(
      (await client.post("/v1/mcp-servers", { name: "outside", transport: { kind: "http", url: "https://mcp.example.com/mcp" } })).status,
    ).toBe(201);
    expect((await client.get("/v1/mcp-servers")).body.servers.map((s: { name: string }) => s.name)).toEqual(["outside"]);
  });
});
