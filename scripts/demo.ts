/**
 * `npm run demo`: starts Foya (API and worker in this process), then drives one
 * turn over real HTTP with the scripted model, no API key needed: it creates a
 * tenant, a project and a session, follows the session's SSE stream, and prints
 * the events and the resulting history. The service keeps running afterwards
 * (Ctrl-C stops it) unless `--exit` is given.
 */
import { randomBytes } from "node:crypto";
import { createParser } from "eventsource-parser";
import { startHttpServer } from "../src/api/http-server.js";
import { loadConfig } from "../src/config.js";
import { createServices } from "../src/services.js";
import { startWorkerRuntime } from "../src/worker/worker-runtime.js";

const exitAfterDemo = process.argv.includes("--exit");
const adminToken = randomBytes(16).toString("hex");
const config = loadConfig({ LOG_LEVEL: "warn", FOYA_ADMIN_TOKEN: adminToken, ...process.env });
const services = await createServices(config, { role: "demo" });
const server = await startHttpServer(services);
const worker = await startWorkerRuntime(services);
const base = server.url;

async function call(method: string, path: string, token: string, body?: unknown): Promise<any> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

console.log(`Foya is running at ${base} (admin token ${config.api.adminToken})\n`);
const { apiKey, tenant } = await call("POST", "/v1/tenants", config.api.adminToken ?? adminToken, { name: "demo" });
const project = await call("POST", "/v1/projects", apiKey, { name: "demo project" });
const session = await call("POST", "/v1/sessions", apiKey, { projectId: project.id });
console.log(`tenant ${tenant.id}, project ${project.id}, session ${session.id}\n`);

// Follow the session's events over SSE while the run goes.
const events = new AbortController();
const finished = (async () => {
  const response = await fetch(`${base}/v1/sessions/${session.id}/events`, {
    headers: { authorization: `Bearer ${apiKey}`, accept: "text/event-stream" },
    signal: events.signal,
  });
  let ended = false;
  const parser = createParser({
    onEvent(message) {
      const event = JSON.parse(message.data);
      const step = event.step ? ` step ${event.step.index}.${event.step.attempt}` : "";
      const detail = { ...event.data };
      delete detail.type;
      console.log(`  #${message.id} ${message.event}${step} ${JSON.stringify(detail)}`);
      if (message.event === "run_end") ended = true;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of response.body!) {
    parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    if (ended) break;
  }
})();

const run = await call("POST", `/v1/sessions/${session.id}/runs`, apiKey, { input: "Hello, Foya!" });
console.log(`POST /v1/sessions/${session.id}/runs -> ${run.id} (${run.status}); events:`);
await finished;
events.abort();

const done = await call("GET", `/v1/runs/${run.id}`, apiKey);
console.log(`\nrun ${done.id} is ${done.status}. History:`);
for (const message of (await call("GET", `/v1/sessions/${session.id}/messages`, apiKey)).messages) {
  const content = message.content;
  const text =
    message.role === "tool"
      ? `${content.name} ${content.status}: ${content.content
          .map((p: { text?: string }) => p.text ?? "")
          .join("")
          .replace(/\n/g, "\\n")}`
      : message.role === "assistant"
        ? `${content.text}${content.toolCalls.map((c: { name: string; argumentsRaw: string }) => ` [${c.name} ${c.argumentsRaw}]`).join("")}`
        : content.text;
  console.log(`  ${message.role.padEnd(9)} ${text.slice(0, 160)}`);
}

if (exitAfterDemo) {
  await worker.close();
  await server.close();
  await services.close();
  process.exit(done.status === "completed" ? 0 : 1);
}
console.log(`\nTry it yourself (Ctrl-C stops the service):
  curl -s -X POST ${base}/v1/sessions/${session.id}/runs -H 'authorization: Bearer ${apiKey}' -H 'content-type: application/json' -d '{"input":"hi again"}'
  curl -N ${base}/v1/sessions/${session.id}/events -H 'authorization: Bearer ${apiKey}' -H 'accept: text/event-stream'`);
const stop = async () => {
  await worker.close();
  await server.close();
  await services.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
