import type { ProviderProfileConfig } from "../config.js";
import { FoyaError } from "../errors.js";
import { createOpenAIChatProvider } from "./openai-chat.js";
import type { ModelProvider } from "./provider.js";
import { createScriptedProvider } from "./scripted-provider.js";

/** Provider profiles configured on the server; tenants pick a profile by name, never a URL (PR1). */
export interface ProviderRegistry {
  get(profile: string): ModelProvider;
  has(profile: string): boolean;
  profiles(): readonly ProviderProfileConfig[];
}

export function createProviderRegistry(profiles: readonly ProviderProfileConfig[]): ProviderRegistry {
  const providers = new Map<string, ModelProvider>();
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
    profiles: () => profiles,
  };
}
