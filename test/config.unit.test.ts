import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { envSchema, loadConfig } from "../src/config.js";
import { defaultProcessLimits } from "../src/core/process-limits.js";

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
    expect(config.providerProfiles.map((p) => p.name)).toEqual(["scripted", "local", "openai"]);
    const local = config.providerProfiles.find((p) => p.name === "local");
    expect(local).toMatchObject({ kind: "openai-chat", apiKey: "sk-local", capabilities: { parallelToolCalls: true } });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("rejects bad configuration with a message that names the problem", async () => {
    expect(() => loadConfig({ PORT: "not-a-port" })).toThrow(/invalid configuration.*PORT/s);
    expect(() => loadConfig({ FOYA_DEFAULT_PROVIDER: "nope" })).toThrow(/FOYA_DEFAULT_PROVIDER "nope" is not a profile/);
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const file = path.join(folder, "providers.json");
    await writeFile(file, JSON.stringify({ profiles: [{ name: "scripted", kind: "scripted" }] }));
    expect(() => loadConfig({ FOYA_PROVIDERS_FILE: file })).toThrow(/defined twice/);
  });

  it("S8: Full Access is off unless the deployment allows it", () => {
    expect(loadConfig({}).fullAccessAllowed).toBe(false);
    expect(loadConfig({ FOYA_ALLOW_FULL_ACCESS: "false" }).fullAccessAllowed).toBe(false);
    expect(loadConfig({ FOYA_ALLOW_FULL_ACCESS: "true" }).fullAccessAllowed).toBe(true);
    expect(() => loadConfig({ FOYA_ALLOW_FULL_ACCESS: "yes" })).toThrow(/invalid configuration.*FOYA_ALLOW_FULL_ACCESS/s);
  });

  it("S7: tenant tool uids start at FOYA_TOOL_UID_BASE, which keeps clear of system accounts and below the 2^31 bubblewrap can map", () => {
    expect(loadConfig({}).toolUidBase).toBe(1_000_000_000);
    expect(loadConfig({ FOYA_TOOL_UID_BASE: "1000" }).toolUidBase).toBe(1000);
    expect(loadConfig({ FOYA_TOOL_UID_BASE: String(2 ** 31 - 1 - 100_000_000) }).toolUidBase).toBe(2 ** 31 - 1 - 100_000_000);
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

  it("S10: API limits have generous defaults, each overridable; 0 turns a count limit off, and body sizes must be positive", () => {
    const defaults = loadConfig({});
    expect(defaults.apiLimits).toEqual({
      maxBodyBytes: 1024 * 1024,
      maxInputBodyBytes: 8 * 1024 * 1024,
      rateLimit: 1000,
      rateWindowMs: 10_000,
      authFailureLimit: 20,
      authFailureWindowMs: 300_000,
      trustProxyHops: 0,
      maxStreamsPerTenant: 64,
    });
    expect(Object.isFrozen(defaults.apiLimits)).toBe(true);
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
    expect(overridden.apiLimits).toEqual({
      maxBodyBytes: 2048,
      maxInputBodyBytes: 4096,
      rateLimit: 0,
      rateWindowMs: 1000,
      authFailureLimit: 5,
      authFailureWindowMs: 60_000,
      trustProxyHops: 2,
      maxStreamsPerTenant: 8,
    });
    // The input limit is never below the general one.
    expect(loadConfig({ FOYA_API_MAX_BODY_BYTES: "10000000" }).apiLimits.maxInputBodyBytes).toBe(10_000_000);
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
  it("a value below a setting's floor is refused with the setting's name and floor, never raised in silence", () => {
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
      expect(() => loadConfig({ [name]: String(floor - 1) }), name).toThrow(
        new RegExp(`^invalid configuration:.*must be at least ${floor}.*${name}`, "s"),
      );
      expect(() => loadConfig({ [name]: String(floor) }), name).not.toThrow();
    }
  });

  it("every setting the schema reads has a row in README's configuration tables, and every row names a setting that exists", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const documented = new Set(
      [...readme.matchAll(/^\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \|/gm)].flatMap((row) =>
        [...row[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!),
      ),
    );
    const settings = Object.keys(envSchema.shape);
    expect(
      settings.filter((name) => !documented.has(name)),
      "settings without a README row",
    ).toEqual([]);
    const rowsOfSettings = [...documented].filter((name) => name.startsWith("FOYA_"));
    expect(
      rowsOfSettings.filter((name) => !settings.includes(name)),
      "README rows for settings that do not exist",
    ).toEqual([]);
  });
});
