/**
 * `npm run docs:config`: writes README's configuration tables, between `<!-- config:start -->`
 * and `<!-- config:end -->`, from the settings schema in src/config.ts (each setting's variables,
 * default, allowed values and `.describe()` text, grouped as in the config object). `--check`
 * writes nothing and fails when README differs; test/config.unit.test.ts makes the same check.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { documentedSettings } from "../src/config.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const readmeFile = path.join(repoRoot, "README.md");
export const configStart = "<!-- config:start -->";
export const configEnd = "<!-- config:end -->";

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The Markdown README shows between the markers: one table per group of settings. */
export function renderConfigReference(): string {
  const lines = ["<!-- Generated from src/config.ts by `npm run docs:config`: change the schema there, not these tables. -->"];
  for (const group of documentedSettings()) {
    lines.push("", `**${group.title}** (\`config.${group.key}\`)`, "");
    lines.push("| variable | setting | default | allowed | meaning |", "|---|---|---|---|---|");
    for (const setting of group.settings) {
      const variables = setting.env.map((name) => `\`${name}\``).join(", ");
      lines.push(
        `| ${variables} | \`${setting.key}\` | ${cell(setting.default)} | ${cell(setting.allowed)} | ${cell(setting.description)} |`,
      );
    }
  }
  return lines.join("\n");
}

/** `readme` with the text between the markers replaced by the generated tables. */
export function withConfigReference(readme: string): string {
  const start = readme.indexOf(configStart);
  const end = readme.indexOf(configEnd);
  if (start < 0 || end < start) throw new Error(`README.md needs ${configStart} and, after it, ${configEnd}`);
  return `${readme.slice(0, start + configStart.length)}\n${renderConfigReference()}\n${readme.slice(end)}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const readme = await readFile(readmeFile, "utf8");
  const updated = withConfigReference(readme);
  if (process.argv.includes("--check")) {
    if (updated !== readme) {
      console.error("README.md's configuration tables differ from src/config.ts: run `npm run docs:config`");
      process.exit(1);
    }
  } else if (updated !== readme) {
    await writeFile(readmeFile, updated);
    console.log("README.md: configuration tables written");
  } else {
    console.log("README.md: configuration tables already up to date");
  }
}
