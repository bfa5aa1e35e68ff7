/**
 * `npm run demo`: starts Foya (API and worker in this process), then drives one
 * turn over real HTTP with the scripted model, no API key needed: it creates a
 * tenant, a project and a session, follows the session's SSE stream, and prints
 * the events and the resulting history. The service keeps running afterwards
 * (Ctrl-C stops it) unless `--exit` is given; then a second run, in a Manual
 * session, waits for an approval, and the demo ends by printing the web
 * console's address and the API key to sign in with, so the runs, the note's
 * diff and the approval can be seen in a browser. The console is built first
 * when its build is missing (`npm run console:build`).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { createParser } from "eventsource-parser";
import { startHttpServer } from "../src/api/http-server.js";
import { loadConfig } from "../src/config.js";
import { createServices } from "../src/services.js";
import { startWorkerRuntime } from "../src/worker/worker-runtime.js";

const exitAfterDemo = process.argv.includes("--exit");
const adminToken = randomBytes(16).toString("hex");
const config = loadConfig({ LOG_LEVEL: "warn", FOYA_ADMIN_TOKEN: adminToken, ...process.env });
const consoleReady = exitAfterDemo ? false : ensureConsoleBuild(config.api.consoleDir);
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

// A second run in a Manual session: its write asks, so the run waits for a person's decision.
const manual = await call("POST", "/v1/sessions", apiKey, { projectId: project.id, approvalMode: "manual" });
const waiting = await call("POST", `/v1/sessions/${manual.id}/runs`, apiKey, { input: "Hello again, Foya! (approve me)" });
const parked = await waitForStatus(waiting.id, "awaiting_approval", 30_000);

console.log(`\nTry it yourself (Ctrl-C stops the service):
  curl -s -X POST ${base}/v1/sessions/${session.id}/runs -H 'authorization: Bearer ${apiKey}' -H 'content-type: application/json' -d '{"input":"hi again"}'
  curl -N ${base}/v1/sessions/${session.id}/events -H 'authorization: Bearer ${apiKey}' -H 'accept: text/event-stream'`);
if (consoleReady) {
  console.log(`\nWeb console: ${base}/console/
  Sign in with the API key ${apiKey}
  (it stays in the browser tab's session storage and is sent only as an Authorization header).
  The run and the note's diff:  ${base}/console/sessions/${session.id}
  A run waiting for approval:   ${base}/console/approvals  (run ${waiting.id} is ${parked})`);
} else {
  console.log(`\nWeb console: not built (run \`npm run console:build\`, then start the demo again); a run waits for approval:
  curl -s '${base}/v1/approvals?status=pending' -H 'authorization: Bearer ${apiKey}'`);
}
const stop = async () => {
  await worker.close();
  await server.close();
  await services.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());

/** Polls the run until it has `status`, or answers the status it has at the deadline. */
async function waitForStatus(runId: string, status: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await call("GET", `/v1/runs/${runId}`, apiKey);
    if (run.status === status || Date.now() > deadline) return run.status;
    await sleep(100);
  }
}

/**
 * The API serves the console only when its build exists at start-up, so a missing default build
 * is made first (a few seconds, once). A folder named by FOYA_CONSOLE_DIR is left to its owner.
 */
function ensureConsoleBuild(consoleDir: string): boolean {
  if (existsSync(path.join(consoleDir, "index.html"))) return true;
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  if (path.resolve(consoleDir) !== path.join(repoRoot, "packages/console/dist")) return false;
  console.log("Building the web console (npm run console:build, once)...");
  const built = spawnSync("npm", ["run", "--silent", "console:build"], { cwd: repoRoot, encoding: "utf8" });
  if (built.status === 0 && existsSync(path.join(consoleDir, "index.html"))) return true;
  console.log(`The console build failed; the demo goes on without it:\n${built.stderr || built.stdout || built.error}`);
  return false;
}
