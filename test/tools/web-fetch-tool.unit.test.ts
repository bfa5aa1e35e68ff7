import { createServer, type Server } from "node:http";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebFetchTool } from "../../src/tools/builtin/web-fetch-tool.js";
import type { Tool, ToolResult } from "../../src/tools/tool.js";
import { toolContext } from "../helpers/tool-context.js";

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/page") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<html><head><style>p{}</style></head><body><h1>Title</h1><p>Hello <b>world</b>.</p><img src=x.png></body></html>");
    } else if (req.url === "/plain") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("just text");
    } else if (req.url === "/hop") {
      res.writeHead(302, { location: "/plain" });
      res.end();
    } else if (req.url === "/silent") {
      // Accepts, then never answers.
      req.socket.setTimeout(0);
    } else if (req.url === "/dribble") {
      // Answers headers at once, then a byte now and then, forever.
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("."), 200);
      res.on("close", () => clearInterval(timer));
    } else if (req.url === "/huge") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("x".repeat(3 * 1024 * 1024));
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not here");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      // close() alone waits for every socket to end: one the client opened and never used lingers 3 s.
      server.closeAllConnections();
    }),
);

const fetchWith = (allowPrivate: boolean, url: string): Promise<ToolResult> =>
  (createWebFetchTool({ allowPrivate }) as unknown as Tool<{ url: string }>).run(
    toolContext({ workspaceDir: "/tmp" }),
    { url },
    { callId: "c", name: "web_fetch", argumentsRaw: "" },
  );
const text = (result: ToolResult) => (result.content[0]?.type === "text" ? result.content[0].text : "");

/** A real garbage collection, whatever flags the test process started with. */
function collectGarbage(): void {
  v8.setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe("web_fetch", () => {
  it("S10: the time limit fires even when the garbage collector runs meanwhile, for a silent server and a dribbling body", async () => {
    const tool = createWebFetchTool({ allowPrivate: true, timeoutMs: 600 }) as unknown as Tool<{ url: string }>;
    const collector = setInterval(collectGarbage, 50);
    try {
      for (const route of ["/silent", "/dribble"]) {
        const started = performance.now();
        const result = await tool.run(
          toolContext({ workspaceDir: "/tmp" }),
          { url: `${base}${route}` },
          { callId: "c", name: "web_fetch", argumentsRaw: "" },
        );
        expect(result, route).toMatchObject({ isError: true, errorCode: "fetch_failed" });
        expect(text(result)).toContain("timed out after 600 ms");
        // A correctness bound, not a benchmark: without a timer that fires, this call never ends.
        expect(performance.now() - started).toBeLessThan(10_000);
      }
    } finally {
      clearInterval(collector);
    }
  });

  it("turns HTML into readable text and follows redirects (loopback allowed explicitly, as in tests)", async () => {
    const page = await fetchWith(true, `${base}/page`);
    expect(page.isError).toBeUndefined();
    expect(text(page)).toContain("TITLE");
    expect(text(page)).toContain("Hello world.");
    expect(text(page)).not.toMatch(/<p>|<b>|p\{\}/);
    expect(text(await fetchWith(true, `${base}/hop`))).toBe(`200 ${base}/plain\n\njust text`);
  });

  it("caps size and keeps the head; a non-2xx answer is an is_error result", async () => {
    const huge = text(await fetchWith(true, `${base}/huge`));
    expect(huge).toContain("[only the first 2097152 bytes were downloaded; 2031616 of 2097152 characters not shown]");
    expect(await fetchWith(true, `${base}/missing`)).toMatchObject({ isError: true, errorCode: "http_status" });
  });

  it("refuses other schemes, bad URLs, and loopback or private addresses unless the deployment allows them", async () => {
    expect(await fetchWith(true, "file:///etc/passwd")).toMatchObject({ isError: true, errorCode: "unsupported_scheme" });
    expect(await fetchWith(true, "ftp://example.com/x")).toMatchObject({ isError: true, errorCode: "unsupported_scheme" });
    expect(await fetchWith(true, "not a url")).toMatchObject({ isError: true, errorCode: "invalid_url" });
    for (const url of [`${base}/plain`, "http://localhost:1/", "http://10.1.2.3/", "http://[::1]:1/", "http://169.254.169.254/latest"]) {
      expect(await fetchWith(false, url), url).toMatchObject({ isError: true, errorCode: "address_refused" });
    }
  });
});
