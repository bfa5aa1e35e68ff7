import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { App } from "../../src/api/app-env.js";
import type { Services } from "../../src/services.js";
import { sqlPool } from "./sql-pool.js";

/** Calls the in-process API with a bearer key; throws on a status of 300 or more. */
export async function apiCall<T>(app: App, key: string, method: string, route: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    ...(body === undefined ? {} : { "content-type": "application/json" }),
  };
  const response = await app.request(route, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${route} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Starts one run in a new Full Access session of the project; answers its id. */
export async function startRunInNewSession(app: App, key: string, projectId: string, input: string): Promise<string> {
  const session = await apiCall<{ id: string }>(app, key, "POST", "/v1/sessions", { projectId, approvalMode: "full_access" });
  return (await apiCall<{ id: string }>(app, key, "POST", `/v1/sessions/${session.id}/runs`, { input })).id;
}

/** Waits until every run completed (throws if one ended otherwise); answers each run's created-to-ended time in ms. */
export async function waitForRuns(services: Services, runIds: readonly string[], pollMs = 10): Promise<number[]> {
  for (;;) {
    const { rows } = await sqlPool(services.config).query<{ status: string; ms: number }>(
      "select status, extract(epoch from (ended_at - created_at)) * 1000 as ms from runs where id = any($1)",
      [runIds],
    );
    if (rows.some((row) => ["failed", "interrupted", "cancelled"].includes(row.status))) throw new Error("a run did not complete");
    if (rows.length === runIds.length && rows.every((row) => row.status === "completed")) return rows.map((row) => Number(row.ms));
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Writes a benchmark's report to bench/results/<name>.json. */
export function writeBenchResult(name: string, report: unknown): void {
  const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(path.join(results, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
}
