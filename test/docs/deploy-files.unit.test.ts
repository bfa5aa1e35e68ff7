import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { documentedSettings, loadConfig } from "../../src/config.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { registerStateGauges } from "../../src/observability/state-gauges.js";
import { readRepoFile, repoFiles, repoRoot } from "./markdown.js";

/**
 * The files under deploy/ are what operators copy: Kubernetes manifests, Prometheus scrape
 * configurations and alert rules, a Grafana dashboard. They are checked here against the code
 * they describe, so a renamed metric, setting or entry point fails a test instead of an alert.
 */
type Yaml = Record<string, unknown>;

const yamlFiles = repoFiles(["deploy/**/*.yaml", "deploy/**/*.yml"]);

function documentsOf(file: string): Yaml[] {
  const parsed = parseAllDocuments(readRepoFile(file));
  const documents = Array.isArray(parsed) ? parsed : [parsed];
  for (const document of documents)
    expect(
      document.errors.map((error) => error.message),
      file,
    ).toEqual([]);
  return documents.map((document) => document.toJS() as Yaml);
}

/** Every metric name a Prometheus expression may use for what Foya registers (histograms' series included). */
function registeredSeries(): Set<string> {
  const metrics = createMetrics({ tenantLabels: 1 });
  // The state gauges read Redis and Postgres only when scraped; registering them reads nothing.
  registerStateGauges(metrics, {
    queues: [],
    pendingApprovals: async () => 0,
    liveWorkers: async () => 0,
    projectsWithFilesLeft: async () => 0,
    providerBudgets: async () => [],
    onError: () => {},
  });
  const names = new Set<string>();
  for (const metric of metrics.registry.getMetricsAsArray() as unknown as { name: string; type: string }[]) {
    names.add(metric.name);
    if (metric.type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(`${metric.name}${suffix}`);
    if (metric.type === "summary") for (const suffix of ["_sum", "_count"]) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

/** Foya's metric names in a PromQL expression (Prometheus's own, such as `up`, are not ours to check). */
const foyaMetricsIn = (expression: string): string[] => [...expression.matchAll(/\bfoya_[a-z0-9_]+/g)].map((match) => match[0]);

/** Values of `key` anywhere inside `value`. */
function valuesOf(value: unknown, key: string): unknown[] {
  if (Array.isArray(value)) return value.flatMap((item) => valuesOf(item, key));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([name, inner]) => [...(name === key ? [inner] : []), ...valuesOf(inner, key)]);
}

describe("deploy/", () => {
  it("X8, E4: every YAML file parses, and every Kubernetes document names its kind and itself", () => {
    expect(yamlFiles.length).toBeGreaterThanOrEqual(8);
    for (const file of yamlFiles) {
      const documents = documentsOf(file);
      expect(documents.length, file).toBeGreaterThan(0);
      for (const document of documents) expect(document, file).toBeTypeOf("object");
      if (!file.startsWith("deploy/kubernetes/")) continue;
      for (const document of documents) {
        expect(document.apiVersion, file).toBeTypeOf("string");
        expect(document.kind, file).toBeTypeOf("string");
        expect((document.metadata as Yaml | undefined)?.name, file).toBeTypeOf("string");
      }
    }
  });

  it("E4: the manifests run entry points that exist, with settings src/config.ts reads and accepts, from objects they define", () => {
    const documents = repoFiles(["deploy/kubernetes/*.yaml"]).flatMap(documentsOf);
    const named = (kind: string) =>
      new Set(documents.filter((document) => document.kind === kind).map((document) => (document.metadata as Yaml).name));

    // `node dist/x.js` in a container is `src/x.ts` compiled.
    const commands = valuesOf(documents, "command").flat() as string[];
    const entryPoints = commands.filter((word) => /^dist\/.+\.js$/.test(word));
    expect(entryPoints.length).toBeGreaterThanOrEqual(4);
    for (const entry of entryPoints) {
      expect(existsSync(path.join(repoRoot, entry.replace(/^dist\//, "src/").replace(/\.js$/, ".ts"))), entry).toBe(true);
    }

    // References between the objects resolve.
    for (const reference of valuesOf(documents, "configMapRef") as Yaml[]) expect(named("ConfigMap")).toContain(reference.name);
    for (const reference of valuesOf(documents, "secretRef") as Yaml[]) expect(named("Secret")).toContain(reference.name);
    for (const claim of valuesOf(documents, "claimName")) expect(named("PersistentVolumeClaim")).toContain(claim);

    // Every variable set is one the service reads (or a provider key a profile names), and together they load.
    const environment: Record<string, string> = {};
    for (const document of documents) {
      if (document.kind === "ConfigMap") Object.assign(environment, document.data);
      if (document.kind === "Secret") Object.assign(environment, document.stringData);
    }
    for (const variable of valuesOf(documents, "env").flat() as Yaml[]) environment[String(variable.name)] = String(variable.value);
    const known = new Set(documentedSettings().flatMap((group) => group.settings.flatMap((setting) => setting.env)));
    const unknown = Object.keys(environment).filter((name) => !known.has(name) && !/_API_KEY$/.test(name));
    expect(unknown, "variables the manifests set that src/config.ts does not read").toEqual([]);
    expect(() => loadConfig(environment)).not.toThrow();
  });

  it("X8: every metric an alert rule or the dashboard names is one Foya registers", () => {
    const registered = registeredSeries();
    const alerts = documentsOf("deploy/alerts/foya-alerts.yaml")[0] as { groups: { rules: Yaml[] }[] };
    const rules = alerts.groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThan(10);
    const unknown: string[] = [];
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^Foya[A-Za-z0-9]+$/);
      expect((rule.labels as Yaml | undefined)?.severity, String(rule.alert)).toMatch(/^(critical|warning|info)$/);
      const expression = String(rule.expr);
      expect(foyaMetricsIn(expression).length + (/\bup\{/.test(expression) ? 1 : 0), String(rule.alert)).toBeGreaterThan(0);
      for (const metric of foyaMetricsIn(expression)) if (!registered.has(metric)) unknown.push(`${rule.alert}: ${metric}`);
    }
    const dashboard = JSON.parse(readRepoFile("deploy/grafana/foya-dashboard.json")) as unknown;
    const panelExpressions = valuesOf(dashboard, "expr") as string[];
    expect(panelExpressions.length).toBeGreaterThan(10);
    for (const expression of panelExpressions) {
      for (const metric of foyaMetricsIn(expression)) if (!registered.has(metric)) unknown.push(`dashboard: ${metric}`);
    }
    expect(unknown, "metrics named in deploy/ but not registered in src/observability/").toEqual([]);

    // docs/operations.md says why each alert exists: one row per rule, and no row for a rule that is gone.
    const why = readRepoFile("docs/operations.md");
    const explained = new Set([...why.matchAll(/`(Foya[A-Za-z0-9]+)`/g)].map((match) => match[1]));
    expect(new Set(rules.map((rule) => rule.alert))).toEqual(explained);
  });
});
