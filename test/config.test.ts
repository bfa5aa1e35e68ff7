import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";

describe("configuration", () => {
  it("PR1: provider profiles come from the server's file and environment, with keys resolved there", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-config-"));
    const file = path.join(folder, "providers.json");
    await writeFile(file, JSON.stringify({ profiles: [{ name: "local", kind: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", model: "m", apiKeyEnv: "LOCAL_KEY" }] }));
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
});
