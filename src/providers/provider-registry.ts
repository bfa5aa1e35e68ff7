import type { ProviderProfileConfig } from "../config.js";
import { FoyaError } from "../errors.js";
import { createAnthropicProvider } from "./anthropic-messages.js";
import { createOpenAIChatProvider } from "./openai-chat.js";
import type { ModelProvider } from "./provider.js";
import { createProviderHttp, type ProviderHttp } from "./provider-http.js";
import { createScriptedProvider } from "./scripted-provider.js";

export type ProviderCapabilities = ProviderProfileConfig["capabilities"];

/** Provider profiles configured on the server; tenants pick a profile by name, never a URL (PR1). */
export interface ProviderRegistry {
  get(profile: string): ModelProvider;
  has(profile: string): boolean;
  /** What the profile's models can take, e.g. images (I3); throws like `get` for an unknown profile. */
  capabilities(profile: string): ProviderCapabilities;
  profiles(): readonly ProviderProfileConfig[];
  /** Closes the profiles' connection pools. */
  close(): Promise<void>;
}

export function createProviderRegistry(profiles: readonly ProviderProfileConfig[]): ProviderRegistry {
  const providers = new Map<string, ModelProvider>();
  // One keep-alive pool per HTTP profile, for the life of the registry (provider-http.ts).
  const pools: ProviderHttp[] = [];
  const poolFetch = () => {
    const pool = createProviderHttp();
    pools.push(pool);
    return pool.fetch;
  };
  for (const profile of profiles) {
    switch (profile.kind) {
      case "scripted":
        providers.set(profile.name, createScriptedProvider({ profile: profile.name, model: profile.model }));
        break;
      case "openai-chat":
        providers.set(
          profile.name,
          createOpenAIChatProvider({
            profile: profile.name,
            baseUrl: profile.baseUrl,
            model: profile.model,
            timeoutMs: profile.timeoutMs,
            fetch: poolFetch(),
            ...(profile.apiKey ? { apiKey: profile.apiKey } : {}),
          }),
        );
        break;
      case "anthropic-messages":
        providers.set(
          profile.name,
          createAnthropicProvider({
            profile: profile.name,
            baseUrl: profile.baseUrl,
            model: profile.model,
            maxTokens: profile.maxTokens,
            timeoutMs: profile.timeoutMs,
            fetch: poolFetch(),
            ...(profile.thinking ? { thinking: profile.thinking } : {}),
            ...(profile.apiKey ? { apiKey: profile.apiKey } : {}),
          }),
        );
        break;
      default: {
        const unreachable: never = profile;
        throw new Error(`unknown provider kind ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return {
    get(profile) {
      const provider = providers.get(profile);
      if (!provider) throw new FoyaError("provider_config", `provider profile "${profile}" is not configured`);
      return provider;
    },
    has: (profile) => providers.has(profile),
    capabilities(profile) {
      const config = profiles.find((candidate) => candidate.name === profile);
      if (!config) throw new FoyaError("provider_config", `provider profile "${profile}" is not configured`);
      return config.capabilities;
    },
    profiles: () => profiles,
    async close() {
      await Promise.all(pools.map((pool) => pool.close()));
    },
  };
}
