import { FoyaApiError } from "@foya/client";
import { UsageError } from "../cli-errors.js";
import { connect } from "../connection.js";
import { exitCodes } from "../exit-codes.js";
import type { Command } from "./command.js";
import { stringOption } from "./option-values.js";

export const loginCommand: Command = {
  name: "login",
  summary: "Check an API URL and key, and store them for later commands",
  details: [
    "The key is checked against the API first; nothing is stored if it is refused.",
    "Stored in $FOYA_CONFIG_DIR/config.json (else ~/.config/foya/config.json), readable by you only (0600).",
    "FOYA_URL and FOYA_API_KEY, when set, win over what is stored.",
  ],
  arguments: [],
  options: {
    url: { type: "string", valueName: "URL", description: "the API's origin, e.g. https://foya.example.com" },
    key: { type: "string", valueName: "KEY", description: "a tenant's API key" },
  },
  async run(input) {
    const url = stringOption(input, "url");
    const apiKey = stringOption(input, "key");
    if (!url || !apiKey) throw new UsageError("login needs --url URL and --key KEY");
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
      throw new UsageError(`--url must be an http(s) URL (got ${JSON.stringify(url)})`);

    // Any authenticated route proves the key; usage is small and needs no id.
    const client = connect({ url, apiKey });
    const checked = await client.api.GET("/v1/usage");
    if (checked.error !== undefined || !checked.response.ok) throw FoyaApiError.fromBody(checked.response, checked.error);

    const before = await input.config.read();
    const sameAccount = before.url === url && before.apiKey === apiKey;
    // A project and session remembered for another API or key mean nothing here.
    await input.config.update({ url, apiKey, ...(sameAccount ? {} : { projectId: undefined, sessionId: undefined }) });

    if (input.output.json) input.output.document({ url, configPath: input.config.path });
    else input.output.line(`Logged in to ${url} (stored in ${input.config.path})`);
    return exitCodes.ok;
  },
};
