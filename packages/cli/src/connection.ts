import { createFoyaClient, type FoyaClient } from "@foya/client";
import type { CliContext } from "./cli-context.js";
import { CliError } from "./cli-errors.js";
import type { CliConfig } from "./config-file.js";

export interface Connection {
  url: string;
  apiKey: string;
}

/** Where to send requests: FOYA_URL and FOYA_API_KEY win over what `foya login` stored. */
export function resolveConnection(env: CliContext["env"], config: CliConfig): Connection {
  const url = env.FOYA_URL || config.url;
  const apiKey = env.FOYA_API_KEY || config.apiKey;
  if (!url || !apiKey) {
    throw new CliError("not_logged_in", "no API URL or key: run `foya login --url URL --key KEY`, or set FOYA_URL and FOYA_API_KEY");
  }
  return { url, apiKey };
}

export function connect(connection: Connection): FoyaClient {
  return createFoyaClient({ baseUrl: connection.url, apiKey: connection.apiKey });
}
