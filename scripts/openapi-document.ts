import { createApp } from "../src/api/app.js";
import { loadConfig } from "../src/config.js";
import { createServices } from "../src/services.js";

/**
 * The API's OpenAPI document, as `GET /openapi.json` serves it, built in-process. The
 * configuration is fixed (defaults, not this shell's environment) so the document is the same
 * on every machine; building the app only constructs clients, so neither Postgres nor Redis
 * needs to answer. Routes that exist only with a setting (the metrics token's `/metrics`)
 * are left out, as in a default deployment.
 */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const config = loadConfig({ FOYA_MIGRATE_ON_START: "false", LOG_LEVEL: "silent" });
  const services = await createServices(config, { role: "api" });
  try {
    const response = await createApp(services).request("/openapi.json");
    if (response.status !== 200) throw new Error(`/openapi.json answered ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  } finally {
    await services.close();
  }
}
