import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script, waitFor, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, type TestEnv } from "../helpers/test-env.js";

const exporter = new InMemorySpanExporter();
let env: TestEnv;
let client: ApiClient;

beforeAll(async () => {
  env = await createTestEnv({}, { spanProcessors: [new SimpleSpanProcessor(exporter)] });
  await env.startWorker();
  client = await env.newTenant("traced tenant");
});
afterAll(async () => env?.close());

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe("traces", () => {
  it("X8: one run's spans form one tree: the API request, each step job and its model request, the batch job, the tool call and its sandbox spawn", async () => {
    const { sessionId } = await client.newSession();
    exporter.reset();
    const run = await client.startRun(sessionId, script([[{ tool: "bash", args: { command: "echo traced" } }], [{ text: "done" }]]));
    expect((await client.waitForRun(run.body.id)).status).toBe("completed");
    // The last job's span ends just after the run's commit.
    const spans = await waitFor(
      async () => {
        const finished = exporter.getFinishedSpans();
        return finished.filter((span) => span.name === "steps job" && span.attributes["foya.run_id"] === run.body.id).length === 2
          ? finished
          : undefined;
      },
      10_000,
      "both step jobs' spans",
    );

    const root = spans.find((span) => span.name === "POST /v1/sessions/:id/runs");
    expect(root, spans.map((span) => span.name).join(", ")).toBeDefined();
    const traceId = root!.spanContext().traceId;
    const tree = spans.filter((span) => span.spanContext().traceId === traceId);
    const byId = new Map(tree.map((span) => [span.spanContext().spanId, span]));
    // One root; every other span's parent is in the same trace.
    expect(tree.filter((span) => parentOf(span) === undefined)).toEqual([root]);
    for (const span of tree) if (span !== root) expect(byId.has(parentOf(span)!), `parent of ${span.name}`).toBe(true);

    const named = (name: string) => tree.filter((span) => span.name === name);
    const parentName = (span: ReadableSpan) => byId.get(parentOf(span)!)?.name;
    const [firstStep, secondStep] = named("steps job").sort(
      (a, b) => Number(a.attributes["foya.step_index"]) - Number(b.attributes["foya.step_index"]),
    );
    const [batch] = named("tools job");
    const [tool] = named("tool bash");
    const [spawn] = named("sandbox spawn");
    expect([firstStep, secondStep, batch, tool, spawn].every(Boolean)).toBe(true);
    // The chain the work took: request → step → batch → (tool → spawn) and → next step.
    expect(parentOf(firstStep!)).toBe(root!.spanContext().spanId);
    expect(parentOf(batch!)).toBe(firstStep!.spanContext().spanId);
    expect(parentOf(tool!)).toBe(batch!.spanContext().spanId);
    expect(parentOf(spawn!)).toBe(tool!.spanContext().spanId);
    expect(parentName(secondStep!)).toBe("tools job");
    expect(named("model request").map(parentName)).toEqual(["steps job", "steps job"]);
    expect(tool!.attributes).toMatchObject({ "foya.tool.name": "bash", "foya.tool.outcome": "succeeded" });
    expect(firstStep!.attributes).toMatchObject({ "foya.run_id": run.body.id, "foya.job.outcome": "committed" });
    expect(root!.attributes).toMatchObject({
      "http.route": "/v1/sessions/:id/runs",
      "http.response.status_code": 202,
      "foya.tenant_id": client.tenantId,
    });
  });

  it("X8: a caller's own trace (a W3C traceparent header) is joined by the request's span", async () => {
    exporter.reset();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    const response = await env.app.request("/v1/usage", {
      headers: { authorization: `Bearer ${client.key}`, traceparent: `00-${traceId}-${parent}-01` },
    });
    expect(response.status).toBe(200);
    const span = exporter.getFinishedSpans().find((finished) => finished.name === "GET /v1/usage");
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe(parent);
  });
});
