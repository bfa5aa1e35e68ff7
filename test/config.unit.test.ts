import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { documentedSettings, loadConfig, type Config } from "../src/config.js";
import { defaultProcessLimits } from "../src/core/process-limits.js";
import { configurationFile, renderConfigurationDoc } from "../scripts/generate-config-docs.js";

describe("configuration", () => {
  it("PR1: provider profiles come from the server's file and environment, with keys resolved there", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const file = path.join(folder, "providers.json");
    await writeFile(
      file,
      JSON.stringify({
        profiles: [{ name: "local", kind: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", model: "m", apiKeyEnv: "LOCAL_KEY" }],
      }),
    );
    const config = loadConfig({ FOYA_PROVIDERS_FILE: file, LOCAL_KEY: "sk-local", FOYA_OPENAI_BASE_URL: "http://127.0.0.1:8/v1" });
    expect(config.providers.profiles.map((p) => p.name)).toEqual(["scripted", "local", "openai"]);
    const local = config.providers.profiles.find((p) => p.name === "local");
    expect(local).toMatchObject({ kind: "openai-chat", apiKey: "sk-local", capabilities: { parallelToolCalls: true } });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("PR3: a profile's budget, fallbacks and throttle wait come from the providers file with their defaults; a fallback must be another profile", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const file = path.join(folder, "providers.json");
    const base = { kind: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", model: "m" };
    const write = (profiles: object[]) => writeFile(file, JSON.stringify({ profiles }));
    await write([
      { ...base, name: "main", budget: { requestsPerMinute: 60, inputTokensPerMinute: 20_000 }, fallbacks: ["spare"] },
      { ...base, name: "spare" },
    ]);
    const profiles = loadConfig({ FOYA_PROVIDERS_FILE: file }).providers.profiles;
    expect(profiles.find((p) => p.name === "main")).toMatchObject({
      budget: { requestsPerMinute: 60, inputTokensPerMinute: 20_000, outputTokensPerMinute: 0, concurrentRequests: 0, windowMs: 60_000 },
      fallbacks: ["spare"],
      throttleWaitMs: 600_000,
    });
    expect(profiles.find((p) => p.name === "spare")).toMatchObject({ fallbacks: [] });
    expect(profiles.find((p) => p.name === "spare")?.budget).toBeUndefined();
    await write([{ ...base, name: "main", fallbacks: ["nowhere"] }]);
    expect(() => loadConfig({ FOYA_PROVIDERS_FILE: file })).toThrow(
      /provider profile "main" names fallback "nowhere"; a fallback must be another defined profile/,
    );
    await write([{ ...base, name: "main", fallbacks: ["main"] }]);
    expect(() => loadConfig({ FOYA_PROVIDERS_FILE: file })).toThrow(/names fallback "main"/);
    await write([{ ...base, name: "main", budget: { windowMs: 10 } }]);
    expect(() => loadConfig({ FOYA_PROVIDERS_FILE: file })).toThrow();
  });

  it("rejects bad configuration with a message that names the problem", async () => {
    expect(() => loadConfig({ PORT: "not-a-port" })).toThrow(/invalid configuration.*PORT/s);
    expect(() => loadConfig({ FOYA_DEFAULT_PROVIDER: "nope" })).toThrow(
      'invalid configuration: FOYA_DEFAULT_PROVIDER is "nope"; it must name a provider profile (scripted)',
    );
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const file = path.join(folder, "providers.json");
    await writeFile(file, JSON.stringify({ profiles: [{ name: "scripted", kind: "scripted" }] }));
    expect(() => loadConfig({ FOYA_PROVIDERS_FILE: file })).toThrow(/defined twice/);
  });

  it("PR5: an Anthropic profile takes a thinking budget of at least 1,024 tokens, below its maxTokens", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const withThinking = async (budgetTokens: number) => {
      const file = path.join(folder, `providers-${budgetTokens}.json`);
      const profile = { name: "claude", kind: "anthropic-messages", baseUrl: "http://127.0.0.1:9", model: "m", maxTokens: 4096 };
      await writeFile(file, JSON.stringify({ profiles: [{ ...profile, thinking: { budgetTokens } }] }));
      return () => loadConfig({ FOYA_PROVIDERS_FILE: file });
    };
    expect((await withThinking(2048))().providers.profiles.at(-1)).toMatchObject({ thinking: { budgetTokens: 2048 } });
    expect(await withThinking(4096)).toThrow(/budgetTokens must be below maxTokens/);
    expect(await withThinking(512)).toThrow(/budgetTokens/);
  });

  it("S8: Full Access is off unless the deployment allows it", () => {
    expect(loadConfig({}).sandbox.fullAccessAllowed).toBe(false);
    expect(loadConfig({ FOYA_ALLOW_FULL_ACCESS: "false" }).sandbox.fullAccessAllowed).toBe(false);
    expect(loadConfig({ FOYA_ALLOW_FULL_ACCESS: "true" }).sandbox.fullAccessAllowed).toBe(true);
    expect(() => loadConfig({ FOYA_ALLOW_FULL_ACCESS: "yes" })).toThrow(/invalid configuration.*FOYA_ALLOW_FULL_ACCESS/s);
  });

  it("S7: tenant tool uids start at FOYA_TOOL_UID_BASE, which keeps clear of system accounts and below the 2^31 bubblewrap can map", () => {
    expect(loadConfig({}).sandbox.toolUidBase).toBe(1_000_000_000);
    expect(loadConfig({ FOYA_TOOL_UID_BASE: "1000" }).sandbox.toolUidBase).toBe(1000);
    expect(loadConfig({ FOYA_TOOL_UID_BASE: String(2 ** 31 - 1 - 100_000_000) }).sandbox.toolUidBase).toBe(2 ** 31 - 1 - 100_000_000);
    for (const invalid of [
      "999",
      "0",
      String(2 ** 31 - 100_000_000),
      String(2 ** 32 - 2 - 100_000_000),
      String(2 ** 32),
      "-5",
      "1.5",
      "many",
    ]) {
      expect(() => loadConfig({ FOYA_TOOL_UID_BASE: invalid }), invalid).toThrow(/invalid configuration.*FOYA_TOOL_UID_BASE/s);
    }
    expect(() => loadConfig({ FOYA_TOOL_UID_BASE: String(2 ** 31 - 100_000_000) })).toThrow(
      'invalid configuration: FOYA_TOOL_UID_BASE is "2047483648"; it must be an integer from 1000 to 2047483647 (above the system accounts, leaving room for 100000000 tenant uids below 2^31)',
    );
  });

  it("S7: per-call process limits default to defaultProcessLimits, each overridable by a positive integer", () => {
    const defaults = loadConfig({});
    expect(defaults.toolLimits).toEqual(defaultProcessLimits);
    expect(Object.isFrozen(defaults.toolLimits)).toBe(true);
    const overridden = loadConfig({
      FOYA_TOOL_MEMORY_BYTES: "1073741824",
      FOYA_TOOL_PROCESSES: "64",
      FOYA_TOOL_CPU_SECONDS: "30",
      FOYA_TOOL_FILE_BYTES: "1048576",
      FOYA_TOOL_WALL_SECONDS: "45",
      FOYA_TOOL_TMP_BYTES: "8388608",
      FOYA_TOOL_BACKGROUND_TMP_BYTES: "4194304",
      FOYA_TOOL_TMP_BUDGET_BYTES: "33554432",
      FOYA_TOOL_BACKGROUND_COMMANDS: "3",
      FOYA_TOOL_BACKGROUND_SECONDS: "60",
    });
    expect(overridden.toolLimits).toEqual({
      memoryBytes: 1_073_741_824,
      processes: 64,
      cpuSeconds: 30,
      fileSizeBytes: 1_048_576,
      wallSeconds: 45,
      tmpBytes: 8_388_608,
      backgroundTmpBytes: 4_194_304,
      tmpBudgetBytes: 33_554_432,
      backgroundCommands: 3,
      backgroundSeconds: 60,
    });
    const keys = [
      "FOYA_TOOL_MEMORY_BYTES",
      "FOYA_TOOL_PROCESSES",
      "FOYA_TOOL_CPU_SECONDS",
      "FOYA_TOOL_FILE_BYTES",
      "FOYA_TOOL_WALL_SECONDS",
      "FOYA_TOOL_TMP_BYTES",
      "FOYA_TOOL_BACKGROUND_TMP_BYTES",
      "FOYA_TOOL_TMP_BUDGET_BYTES",
      "FOYA_TOOL_BACKGROUND_COMMANDS",
      "FOYA_TOOL_BACKGROUND_SECONDS",
    ];
    for (const key of keys) {
      for (const invalid of ["0", "-1", "2.5", "lots", ""]) {
        expect(() => loadConfig({ [key]: invalid }), `${key}=${JSON.stringify(invalid)}`).toThrow(
          new RegExp(`invalid configuration.*${key}`, "s"),
        );
      }
    }
  });

  it("S3: the PATH of tool processes is fixed (never the service's own), absolute, and names no folder the sandbox can write", () => {
    expect(loadConfig({}).tools.path).toBe("/usr/local/bin:/usr/bin:/bin");
    // The service's PATH (node_modules/.bin under npm, a version manager's shims under /root) names the host's layout.
    expect(loadConfig({ PATH: "/srv/foya/node_modules/.bin:/root/.pyenv/shims:/usr/bin" }).tools.path).toBe("/usr/local/bin:/usr/bin:/bin");
    expect(loadConfig({ FOYA_TOOL_PATH: "/opt/tools/bin:/usr/bin" }).tools.path).toBe("/opt/tools/bin:/usr/bin");
    for (const path of [
      "/tmp/bin:/usr/bin",
      "/usr/bin:/var/tmp/x",
      "/dev/shm",
      "/usr/bin::/bin",
      "bin:/usr/bin",
      ".:/usr/bin",
      "/tmp/../tmp/bin",
    ]) {
      expect(() => loadConfig({ FOYA_TOOL_PATH: path }), path).toThrow(/FOYA_TOOL_PATH is .*absolute folders separated by/s);
    }
    expect(() => loadConfig({ FOYA_WORKSPACES_DIR: "/srv/ws", FOYA_TOOL_PATH: "/usr/bin:/srv/ws/t/p/bin" })).toThrow(
      /FOYA_TOOL_PATH names \/srv\/ws\/t\/p\/bin, inside FOYA_WORKSPACES_DIR/,
    );
  });

  it("S10: API limits have generous defaults, each overridable; 0 turns a count limit off, and body sizes must be positive", () => {
    const defaults = loadConfig({});
    expect(defaults.api).toMatchObject({
      maxBodyBytes: 1024 * 1024,
      maxInputBodyBytes: 8 * 1024 * 1024,
      rateLimit: 1000,
      rateWindowMs: 10_000,
      authFailureLimit: 20,
      authFailureWindowMs: 300_000,
      trustProxyHops: 0,
      maxStreamsPerTenant: 64,
    });
    expect(Object.isFrozen(defaults.api)).toBe(true);
    const overridden = loadConfig({
      FOYA_API_MAX_BODY_BYTES: "2048",
      FOYA_API_MAX_INPUT_BODY_BYTES: "4096",
      FOYA_API_RATE_LIMIT: "0",
      FOYA_API_RATE_WINDOW_MS: "1000",
      FOYA_API_AUTH_FAILURE_LIMIT: "5",
      FOYA_API_AUTH_FAILURE_WINDOW_MS: "60000",
      FOYA_API_TRUST_PROXY_HOPS: "2",
      FOYA_API_MAX_STREAMS_PER_TENANT: "8",
    });
    expect(overridden.api).toMatchObject({
      maxBodyBytes: 2048,
      maxInputBodyBytes: 4096,
      rateLimit: 0,
      rateWindowMs: 1000,
      authFailureLimit: 5,
      authFailureWindowMs: 60_000,
      trustProxyHops: 2,
      maxStreamsPerTenant: 8,
    });
    // The input limit is never below the general one: refused, not raised to it.
    expect(() => loadConfig({ FOYA_API_MAX_BODY_BYTES: "10000000" })).toThrow(
      "invalid configuration: FOYA_API_MAX_INPUT_BODY_BYTES is 8388608; it must be at least FOYA_API_MAX_BODY_BYTES (10000000)",
    );
    expect(loadConfig({ FOYA_API_MAX_BODY_BYTES: "10000000", FOYA_API_MAX_INPUT_BODY_BYTES: "10000000" }).api.maxInputBodyBytes).toBe(
      10_000_000,
    );
    for (const key of [
      "FOYA_API_MAX_BODY_BYTES",
      "FOYA_API_MAX_INPUT_BODY_BYTES",
      "FOYA_API_RATE_WINDOW_MS",
      "FOYA_API_AUTH_FAILURE_WINDOW_MS",
    ]) {
      expect(() => loadConfig({ [key]: "0" }), key).toThrow(new RegExp(`invalid configuration.*${key}`, "s"));
    }
    expect(() => loadConfig({ FOYA_API_RATE_LIMIT: "-1" })).toThrow(/invalid configuration.*FOYA_API_RATE_LIMIT/s);
  });
});

describe("settings: one schema, documented, never clamped", () => {
  const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const settings = documentedSettings().flatMap((group) => group.settings);
  const valueAt = (config: Config, key: string): unknown => {
    const [group, field] = key.split(".") as [keyof Config, string];
    return (config[group] as Record<string, unknown>)[field];
  };
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  /** The error of loadConfig(env), which must throw. */
  const problemOf = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`loadConfig(${JSON.stringify(env)}) accepted it`);
  };

  it("every setting is read from variables no other setting reads, under a group, with a description", () => {
    const groups = documentedSettings();
    expect(groups.map((group) => group.key)).toEqual([
      "database",
      "redis",
      "api",
      "workers",
      "runs",
      "providers",
      "tools",
      "sandbox",
      "toolLimits",
      "quotas",
      "workspaces",
      "mcp",
      "webhooks",
      "metrics",
      "tracing",
      "logging",
      "testing",
    ]);
    const names = settings.flatMap((setting) => setting.env);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
    for (const setting of settings) {
      expect(setting.description, setting.key).toMatch(/^\S.*[.]$/s);
      expect(setting.allowed, setting.key).not.toBe("");
    }
    // Every group of the config object is documented, and nothing else is in it.
    const config = loadConfig({});
    expect(Object.keys(config)).toEqual(groups.map((group) => group.key));
    for (const group of groups) {
      const fields = Object.keys(config[group.key as keyof Config]);
      const documented = group.settings.map((setting) => setting.key.slice(group.key.length + 1));
      // The provider profiles are derived from the providers group's settings.
      expect(
        fields.filter((field) => field !== "profiles"),
        group.key,
      ).toEqual(documented);
      expect(Object.isFrozen(config[group.key as keyof Config]), group.key).toBe(true);
    }
  });

  it("defaults produce the values docs/configuration.md documents", () => {
    const config = loadConfig({});
    for (const setting of settings) {
      const value = valueAt(config, setting.key);
      const literal = /^`([^`]*)`/.exec(setting.default)?.[1];
      if (setting.default === "unset") expect(value, setting.key).toBeUndefined();
      else if (setting.default === "unset (none)") expect([...(value as Iterable<string>)], setting.key).toEqual([]);
      else if (literal === undefined)
        continue; // a derived default, checked below
      else if (typeof value === "number") expect(value, setting.key).toBe(Number(literal));
      else if (typeof value === "boolean") expect(String(value), setting.key).toBe(literal);
      else if (setting.allowed === "a non-empty path") expect(value, setting.key).toBe(path.resolve(repoRoot, literal));
      else expect(value, setting.key).toBe(literal);
    }
    expect(config.toolLimits).toEqual(defaultProcessLimits);
    expect(config.webhooks).toEqual({
      pollMs: 500,
      attempts: 8,
      backoffMs: 2_000,
      timeoutMs: 10_000,
      staleMs: 60_000,
      retentionDays: 30,
      concurrency: 16,
      allowPrivate: false,
    });
    // The derived ones: a tenant's share of a worker's MCP request slots, the stream token secret.
    expect(config.mcp.requestTenantConcurrency).toBe(2);
    expect(loadConfig({ FOYA_MCP_REQUEST_CONCURRENCY: "5" }).mcp.requestTenantConcurrency).toBe(3);
    expect(loadConfig({ FOYA_MCP_REQUEST_CONCURRENCY: "1" }).mcp.requestTenantConcurrency).toBe(1);
    expect(loadConfig({ FOYA_MCP_REQUEST_TENANT_CONCURRENCY: "4" }).mcp.requestTenantConcurrency).toBe(4);
    expect(config.api.streamTokenSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(loadConfig({}).api.streamTokenSecret).not.toBe(config.api.streamTokenSecret);
    const fromAdmin = loadConfig({ FOYA_ADMIN_TOKEN: "admin" }).api.streamTokenSecret;
    expect(loadConfig({ FOYA_ADMIN_TOKEN: "admin" }).api.streamTokenSecret).toBe(fromAdmin);
    expect(loadConfig({ FOYA_ADMIN_TOKEN: "admin", FOYA_STREAM_TOKEN_SECRET: "s".repeat(32) }).api.streamTokenSecret).toBe("s".repeat(32));
    expect(config.tracing.otlpUrl).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/v1/traces" }).tracing.otlpUrl).toBe("http://b:4318/v1/traces");
    expect(
      loadConfig({ FOYA_OTLP_TRACES_URL: "http://a:4318/v1/traces", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/v1/traces" }).tracing
        .otlpUrl,
    ).toBe("http://a:4318/v1/traces");
  });

  it("an integer outside its setting's range, or no integer at all, is refused with the variable, the value and the range", () => {
    const integers = settings.filter((setting) => setting.allowed.startsWith("an integer from "));
    expect(integers.length).toBeGreaterThan(50);
    for (const setting of integers) {
      const [, min, max] = /^an integer from (\d+) to (\d+)(?: \(.*\))?$/.exec(setting.allowed) ?? [];
      expect(max, `${setting.key} has an upper bound`).toBeDefined();
      const name = setting.env[0];
      // An empty value leaves a setting without a default unset (below).
      const values = [String(BigInt(min!) - 1n), String(BigInt(max!) + 1n), "1.5", "12abc", "many", " ", "0x10", "1e3"];
      for (const value of setting.optional ? values : [...values, ""]) {
        expect(problemOf({ [name]: value }), `${name}=${value}`).toBe(
          `invalid configuration: ${name} is ${JSON.stringify(value)}; it must be ${setting.allowed}`,
        );
      }
      // Both ends of the range are taken as they are; a rule between settings may still refuse one.
      for (const value of [Number(min), Number(max)]) {
        let config: Config;
        try {
          config = loadConfig({ [name]: String(value) });
        } catch (error) {
          expect((error as Error).message, `${name}=${value}`).not.toMatch(new RegExp(`${name} is "${value}"`));
          continue;
        }
        expect(valueAt(config, setting.key), `${name}=${value}`).toBe(value);
      }
    }
  });

  it("a sample of each group: out-of-range and malformed values are refused with messages naming the variable", () => {
    const refused: Array<[Record<string, string>, string]> = [
      [{ FOYA_MIGRATE_ON_START: "yes" }, 'FOYA_MIGRATE_ON_START is "yes"; it must be `true` or `false`'],
      [{ FOYA_QUEUE_PREFIX: "" }, 'FOYA_QUEUE_PREFIX is ""; it must be a non-empty text without `{` or `}`'],
      [{ FOYA_QUEUE_PREFIX: "{foya}" }, 'FOYA_QUEUE_PREFIX is "{foya}"; it must be a non-empty text without `{` or `}`'],
      [{ FOYA_STEP_QUEUE_SHARDS: "0" }, 'FOYA_STEP_QUEUE_SHARDS is "0"; it must be an integer from 1 to 1024'],
      [{ PORT: "65536" }, 'PORT is "65536"; it must be an integer from 0 to 65535'],
      [{ FOYA_SSE_KEEPALIVE_MS: "99" }, 'FOYA_SSE_KEEPALIVE_MS is "99"; it must be an integer from 100 to 2147483647'],
      [{ FOYA_LEASE_MS: "2147483648" }, 'FOYA_LEASE_MS is "2147483648"; it must be an integer from 500 to 2147483647'],
      [{ FOYA_STEP_CONCURRENCY: "0" }, 'FOYA_STEP_CONCURRENCY is "0"; it must be an integer from 1 to 2147483647'],
      [{ FOYA_MAX_STEPS_PER_RUN: "-3" }, 'FOYA_MAX_STEPS_PER_RUN is "-3"; it must be an integer from 1 to 2147483647'],
      [{ FOYA_OPENAI_BASE_URL: "api.example.com" }, 'FOYA_OPENAI_BASE_URL is "api.example.com"; it must be an http or https URL'],
      [{ FOYA_WEB_FETCH_ALLOW_PRIVATE: "1" }, 'FOYA_WEB_FETCH_ALLOW_PRIVATE is "1"; it must be `true` or `false`'],
      [{ FOYA_BWRAP_PATH: "" }, 'FOYA_BWRAP_PATH is ""; it must be a non-empty text'],
      [{ FOYA_TOOL_WALL_SECONDS: "2147484" }, 'FOYA_TOOL_WALL_SECONDS is "2147484"; it must be an integer from 1 to 2147483'],
      [{ FOYA_QUOTA_ACTIVE_RUNS: "0" }, 'FOYA_QUOTA_ACTIVE_RUNS is "0"; it must be an integer from 1 to 2147483647'],
      [{ FOYA_WORKSPACES_DIR: "" }, 'FOYA_WORKSPACES_DIR is ""; it must be a non-empty path'],
      [{ FOYA_TRASH_RETENTION_DAYS: "36501" }, 'FOYA_TRASH_RETENTION_DAYS is "36501"; it must be an integer from 0 to 36500'],
      [{ FOYA_MCP_SANDBOX: "off" }, 'FOYA_MCP_SANDBOX is "off"; it must be `true` or `false`'],
      [{ FOYA_WEBHOOK_POLL_MS: "49" }, 'FOYA_WEBHOOK_POLL_MS is "49"; it must be an integer from 50 to 2147483647'],
      [{ FOYA_WEBHOOK_ATTEMPTS: "eight" }, 'FOYA_WEBHOOK_ATTEMPTS is "eight"; it must be an integer from 1 to 2147483647'],
      [{ FOYA_METRICS_PORT: "0" }, 'FOYA_METRICS_PORT is "0"; it must be an integer from 1 to 65535'],
      [
        { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" },
        'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is "collector:4318"; it must be an http or https URL',
      ],
      [{ LOG_LEVEL: "verbose" }, 'LOG_LEVEL is "verbose"; it must be one of `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`'],
    ];
    for (const [env, message] of refused) expect(problemOf(env), JSON.stringify(env)).toBe(`invalid configuration: ${message}`);
  });

  it("an empty value leaves a setting without a default unset, and is refused for one with a default", () => {
    const config = loadConfig({
      FOYA_PROVIDERS_FILE: "",
      FOYA_OPENAI_BASE_URL: "",
      FOYA_METRICS_PORT: "",
      FOYA_METRICS_TOKEN: "",
      FOYA_WORKER_HEARTBEAT_FILE: "",
      FOYA_FAILPOINTS: "",
    });
    expect(config.providers.profiles.map((profile) => profile.name)).toEqual(["scripted"]);
    expect([config.metrics.port, config.metrics.token, config.workers.heartbeatFile]).toEqual([undefined, undefined, undefined]);
    expect(config.testing.failpoints.size).toBe(0);
    // The first variable set wins, and an empty one is not set.
    expect(loadConfig({ FOYA_OTLP_TRACES_URL: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/v1/traces" }).tracing.otlpUrl).toBe(
      "http://b:4318/v1/traces",
    );
    expect(problemOf({ FOYA_LEASE_MS: "" })).toBe(
      'invalid configuration: FOYA_LEASE_MS is ""; it must be an integer from 500 to 2147483647',
    );
  });

  it("a secret's value is never repeated in the message that refuses it", () => {
    const message = problemOf({ FOYA_METRICS_TOKEN: "short-secret", FOYA_STREAM_TOKEN_SECRET: "also-too-short" });
    expect(message).toBe(
      "invalid configuration: FOYA_STREAM_TOKEN_SECRET is a 14-character secret; it must be at least 32 characters\n" +
        "  FOYA_METRICS_TOKEN is a 12-character secret; it must be at least 16 characters",
    );
  });

  it("rules between settings refuse, with both variables named, what used to be clamped", () => {
    expect(problemOf({ FOYA_LIVENESS_INTERVAL_MS: "2000" })).toBe(
      "invalid configuration: FOYA_LIVENESS_TIMEOUT_MS is 3000; it must be at least twice FOYA_LIVENESS_INTERVAL_MS (2000), or a worker that misses one renewal is taken for dead",
    );
    expect(problemOf({ FOYA_MCP_REQUEST_TIMEOUT_MS: "1000" })).toBe(
      "invalid configuration: FOYA_MCP_REQUEST_PICKUP_MS is 5000; it must be at most FOYA_MCP_REQUEST_TIMEOUT_MS (1000), by which the API answers anyway",
    );
    expect(loadConfig({ FOYA_MCP_REQUEST_TIMEOUT_MS: "1000", FOYA_MCP_REQUEST_PICKUP_MS: "1000" }).mcp).toMatchObject({
      requestTimeoutMs: 1000,
      requestPickupMs: 1000,
    });
    expect(problemOf({ FOYA_MCP_REQUEST_TENANT_CONCURRENCY: "5" })).toBe(
      "invalid configuration: FOYA_MCP_REQUEST_TENANT_CONCURRENCY is 5; it must be at most FOYA_MCP_REQUEST_CONCURRENCY (4), the slots it is a share of",
    );
    expect(problemOf({ REDIS_URL: "redis://a:6379,redis://b:6379" })).toBe(
      "invalid configuration: REDIS_URL lists several nodes; it must be one URL unless FOYA_REDIS_CLUSTER is true (several are a Redis Cluster's seed nodes)",
    );
    expect(loadConfig({ REDIS_URL: "redis://a:6379,redis://b:6379", FOYA_REDIS_CLUSTER: "true" }).redis.cluster).toBe(true);
    expect(problemOf({ FOYA_API_MAX_INPUT_BODY_BYTES: "1000" })).toMatch(
      /^invalid configuration: FOYA_API_MAX_INPUT_BODY_BYTES is 1000; it must be at least FOYA_API_MAX_BODY_BYTES \(1048576\)/,
    );
  });

  it("M1, S7: the operator's stdio MCP commands name, per program, the environment variables a tenant may set; loader and start-up variables can never be admitted", () => {
    const commands = loadConfig({ FOYA_MCP_STDIO_COMMANDS: " /usr/bin/node , /opt/mcp/github:GITHUB_TOKEN:GITHUB_HOST,/usr/bin/node:LANG" })
      .mcp.stdioCommands;
    expect([...commands].map(([command, names]) => [command, [...names].sort()])).toEqual([
      ["/usr/bin/node", ["LANG"]],
      ["/opt/mcp/github", ["GITHUB_HOST", "GITHUB_TOKEN"]],
    ]);
    for (const [value, problem] of [
      ["/usr/bin/node:NODE_OPTIONS", "NODE_OPTIONS (for /usr/bin/node) can never be admitted: an interpreter runs or loads code"],
      ["/usr/bin/python3:PYTHONPATH", "PYTHONPATH (for /usr/bin/python3) can never be admitted"],
      ["/opt/x:LD_PRELOAD", "LD_PRELOAD (for /opt/x) can never be admitted: it makes the dynamic loader"],
      ["/opt/x:BASH_ENV", "BASH_ENV (for /opt/x) can never be admitted: a shell reads it"],
      ["/opt/x:PATH", "PATH (for /opt/x) can never be admitted: it names a program to run"],
      ["/opt/x:GIT_CONFIG_COUNT", "GIT_CONFIG_COUNT (for /opt/x) can never be admitted"],
      ["/opt/x:npm_config_node_options", "npm_config_node_options (for /opt/x) can never be admitted"],
      ["/opt/x:A-B", '"A-B" (for /opt/x) is not an environment variable name'],
      ["node", '"node" is not an absolute path'],
    ]) {
      expect(problemOf({ FOYA_MCP_STDIO_COMMANDS: value as string }), value).toContain(problem as string);
    }
  });

  it("the floors that used to be raised in silence are refused, with the setting's name and floor", () => {
    const floors: Record<string, number> = {
      FOYA_STEP_CONCURRENCY: 1,
      FOYA_TOOL_CONCURRENCY: 1,
      FOYA_LEASE_MS: 500,
      FOYA_STALLED_INTERVAL_MS: 200,
      FOYA_SWEEP_INTERVAL_MS: 100,
      FOYA_STEP_ATTEMPTS: 1,
      FOYA_MAX_STEPS_PER_RUN: 1,
      FOYA_SSE_KEEPALIVE_MS: 100,
      FOYA_APPROVAL_TTL_SECONDS: 1,
      FOYA_WEBHOOK_POLL_MS: 50,
      FOYA_WEBHOOK_ATTEMPTS: 1,
      FOYA_WEBHOOK_BACKOFF_MS: 10,
      FOYA_WEBHOOK_TIMEOUT_MS: 100,
      FOYA_WEBHOOK_STALE_MS: 500,
      FOYA_WEBHOOK_CONCURRENCY: 1,
    };
    for (const [name, floor] of Object.entries(floors)) {
      expect(problemOf({ [name]: String(floor - 1) }), name).toMatch(
        new RegExp(`^invalid configuration: ${name} is "${floor - 1}"; it must be an integer from ${floor} to \\d+$`),
      );
      expect(() => loadConfig({ [name]: String(floor) }), name).not.toThrow();
    }
  });

  it("docs/configuration.md is the one the schema generates (npm run docs:config)", () => {
    const documented = readFileSync(configurationFile, "utf8");
    expect(documented, "docs/configuration.md is out of date: run `npm run docs:config`").toBe(renderConfigurationDoc());
    // Every variable the schema reads has a row, and each row names one.
    for (const setting of settings) {
      expect(documented, setting.key).toMatch(
        new RegExp(`^\\| ${setting.env.map((name) => escapeRegExp(`\`${name}\``)).join(", ")} \\|`, "m"),
      );
    }
  });
});
