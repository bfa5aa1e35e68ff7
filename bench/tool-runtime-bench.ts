/**
 * Tool runtime benchmark (part of `npm run bench`): tool_search over large
 * deferred catalogues, and rendering a 200-tool schema set per step. Pure
 * in-process work, no services needed.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { toAnthropicTools, toOpenAITools } from "../src/providers/render-tool-schemas.js";
import { createToolRegistry } from "../src/tools/tool-registry.js";
import { defineTool, textResult, type AnyTool } from "../src/tools/tool.js";

const verbs = ["create", "list", "delete", "update", "get", "search", "send", "sync", "archive", "export", "import", "approve"];
const nouns = [
  "invoice",
  "customer",
  "ticket",
  "event",
  "email",
  "order",
  "report",
  "user",
  "file",
  "payment",
  "issue",
  "contract",
  "shipment",
  "lead",
];
const systems = ["crm", "billing", "helpdesk", "calendar", "mail", "shop", "drive", "ledger", "tracker", "legal", "logistics", "sales"];
const words = [
  "quickly",
  "record",
  "account",
  "status",
  "history",
  "owner",
  "amount",
  "date",
  "region",
  "team",
  "priority",
  "note",
  "tag",
  "summary",
];

/** A deterministic pseudo-random generator, so every run benchmarks the same catalogue. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1664525 + 1013904223) % 4294967296;
    return state / 4294967296;
  };
}

function catalogue(size: number, exposure: "deferred" | "direct"): AnyTool[] {
  const next = random(size);
  const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)] as T;
  return Array.from({ length: size }, (_, i) => {
    const name = `${pick(systems)}_${pick(verbs)}_${pick(nouns)}_${i}`;
    const properties = Object.fromEntries(
      Array.from({ length: 3 }, () => [`${pick(nouns)}${pick(["Id", "Name", "Date"])}`, { type: "string" }]),
    );
    return defineTool({
      name,
      description: `${pick(verbs)} a ${pick(nouns)} in the ${pick(systems)} system; ${Array.from({ length: 8 }, () => pick(words)).join(" ")}.`,
      parameters: { type: "object", properties, additionalProperties: false },
      exposure,
      sideEffect: "read",
      run: async () => textResult("ok"),
    });
  });
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

const scope = { toolAllowList: null, runMode: "normal" as const };
const report: Record<string, unknown> = {};

for (const size of [1_000, 10_000]) {
  const registry = createToolRegistry(catalogue(size, "deferred"));
  const buildStart = performance.now();
  registry.searchDeferred("warm up the index", scope, 5); // the index is built on first use
  const buildMs = performance.now() - buildStart;
  const next = random(7);
  const queries = Array.from(
    { length: 300 },
    () =>
      `${verbs[Math.floor(next() * verbs.length)]} ${nouns[Math.floor(next() * nouns.length)]} ${systems[Math.floor(next() * systems.length)]}`,
  );
  const latencies = queries.map((query) => {
    const start = performance.now();
    registry.searchDeferred(query, scope, 5);
    return performance.now() - start;
  });
  report[`toolSearch${size}`] = { indexBuildMs: buildMs, queryP50Ms: percentile(latencies, 50), queryP99Ms: percentile(latencies, 99) };
  console.log(
    `tool_search over ${size.toLocaleString("en")} deferred tools: index build ${buildMs.toFixed(1)} ms, query p50 ${percentile(latencies, 50).toFixed(3)} ms, p99 ${percentile(latencies, 99).toFixed(3)} ms`,
  );
}

{
  const registry = createToolRegistry(catalogue(200, "direct"));
  const steps = 10_000;
  let first: unknown;
  let recomputed = 0;
  const start = performance.now();
  for (let step = 0; step < steps; step++) {
    const schemas = registry.schemasFor(registry.exposedFor(scope));
    const openAI = toOpenAITools(schemas);
    toAnthropicTools(schemas);
    if (first === undefined) first = openAI;
    else if (openAI !== first) recomputed++;
  }
  const perStepUs = ((performance.now() - start) / steps) * 1000;
  // A cold rendering, for comparison: a new registry each time.
  const coldStart = performance.now();
  for (let i = 0; i < 50; i++) {
    const cold = createToolRegistry(catalogue(200, "direct"));
    JSON.stringify(toOpenAITools(cold.schemasFor(cold.exposedFor(scope))));
  }
  const coldMs = (performance.now() - coldStart) / 50;
  report.render200 = { perStepMicroseconds: perStepUs, stepsMeasured: steps, recomputedRenderings: recomputed, coldRenderMs: coldMs };
  console.log(
    `200-tool schema set: ${perStepUs.toFixed(1)} µs per step over ${steps} steps; renderings recomputed after the first: ${recomputed} (same object every step); a cold registry and rendering: ${coldMs.toFixed(2)} ms`,
  );
}

const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
mkdirSync(results, { recursive: true });
writeFileSync(path.join(results, "tool-runtime.json"), `${JSON.stringify({ date: new Date().toISOString(), ...report }, null, 2)}\n`);
