/**
 * `npm run docs:config`: writes docs/configuration.md, the whole file, from the settings schema in
 * src/config.ts (each setting's variables, default, allowed values and `.describe()` text, grouped
 * as in the config object). `--check` writes nothing and fails when the file differs;
 * test/config.unit.test.ts makes the same check.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { documentedSettings } from "../src/config.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const configurationFile = path.join(repoRoot, "docs", "configuration.md");

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** What the tables cannot say: how values are read and checked. Written here, once. */
const introduction = `# Configuration

<!-- Generated from src/config.ts by \`npm run docs:config\`: change the schema there, not this file. -->

All settings are environment variables, read in one place: the schema in \`src/config.ts\` gives
each one its default, the values it accepts and its description, and groups them as the code
reads them (\`config.webhooks.pollMs\`). A value outside a setting's range, or one that is not a
value at all, stops the process with a message naming the variable, the value and what is
allowed; nothing is raised or lowered in silence. An empty value leaves a setting whose default
is "unset" unset. Rules between settings are checked too:
\`FOYA_LIVENESS_TIMEOUT_MS\` at least twice \`FOYA_LIVENESS_INTERVAL_MS\`,
\`FOYA_API_MAX_INPUT_BODY_BYTES\` at least \`FOYA_API_MAX_BODY_BYTES\`, \`FOYA_MCP_REQUEST_PICKUP_MS\`
at most \`FOYA_MCP_REQUEST_TIMEOUT_MS\`, \`FOYA_MCP_REQUEST_TENANT_CONCURRENCY\` at most
\`FOYA_MCP_REQUEST_CONCURRENCY\`, and \`FOYA_DEFAULT_PROVIDER\` naming a defined profile.

Every process of one deployment must agree on the queue prefix, the workspaces folder, the tool
uid base, the lease and liveness timings and the per-run settings
([operations](operations.md#31-what-scales)). The sections the descriptions name ("Pointing Foya
at a model", "What shell commands change") are in [usage.md](usage.md).`;

/** The settings tables: one per group of settings. */
function renderConfigReference(): string {
  const lines: string[] = [];
  for (const group of documentedSettings()) {
    lines.push(`## ${group.title} (\`config.${group.key}\`)`, "");
    lines.push("| variable | setting | default | allowed | meaning |", "|---|---|---|---|---|");
    for (const setting of group.settings) {
      const variables = setting.env.map((name) => `\`${name}\``).join(", ");
      lines.push(
        `| ${variables} | \`${setting.key}\` | ${cell(setting.default)} | ${cell(setting.allowed)} | ${cell(setting.description)} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n").trimEnd();
}

/** docs/configuration.md as it should be, byte for byte. */
export function renderConfigurationDoc(): string {
  return `${introduction}\n\n${renderConfigReference()}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const current = await readFile(configurationFile, "utf8").catch(() => "");
  const updated = renderConfigurationDoc();
  if (process.argv.includes("--check")) {
    if (updated !== current) {
      console.error("docs/configuration.md differs from src/config.ts: run `npm run docs:config`");
      process.exit(1);
    }
  } else if (updated !== current) {
    await writeFile(configurationFile, updated);
    console.log("docs/configuration.md written");
  } else {
    console.log("docs/configuration.md already up to date");
  }
}
