import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The worker's jobs read as their phases: no function of src/worker (nor of src/mcp) passes 60
 * lines. Biome's `noExcessiveLinesPerFunction` enforces it in `npm run lint`; this test makes sure
 * the rule stays configured for those folders and that, as configured, it fails a longer function.
 */

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const biome = path.join(repo, "node_modules", ".bin", "biome");
const guardedFolders = ["src/worker/**", "src/mcp/**"];
const maxLines = 60;

interface BiomeOverride {
  includes?: string[];
  linter?: { rules?: { complexity?: { noExcessiveLinesPerFunction?: unknown } } };
}

function lengthOverride(): BiomeOverride {
  const text = readFileSync(path.join(repo, "biome.jsonc"), "utf8");
  // The TypeScript parser reads JSON with comments, as biome.jsonc is written.
  const parsed = ts.parseConfigFileTextToJson("biome.jsonc", text);
  if (parsed.error) throw new Error(ts.flattenDiagnosticMessageText(parsed.error.messageText, "\n"));
  const overrides = (parsed.config as { overrides?: BiomeOverride[] }).overrides ?? [];
  const found = overrides.find((override) => override.linter?.rules?.complexity?.noExcessiveLinesPerFunction !== undefined);
  if (!found) throw new Error("biome.jsonc has no override with noExcessiveLinesPerFunction");
  return found;
}

/** A function whose body holds `lines` lines between its braces, as biome counts them. */
function functionWithBodyLines(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, index) => `  total += ${index};`);
  return [`export function ${name}(): number {`, "  let total = 0;", ...body, "  return total;", "}", ""].join("\n");
}

const scratch: string[] = [];
afterAll(async () => {
  for (const folder of scratch) await rm(folder, { recursive: true, force: true });
});

describe("function length in the worker", () => {
  it(`biome.jsonc fails any function over ${maxLines} lines in ${guardedFolders.join(" and ")}`, () => {
    const override = lengthOverride();
    expect(override.includes).toEqual(expect.arrayContaining(guardedFolders));
    expect(override.linter?.rules?.complexity?.noExcessiveLinesPerFunction).toEqual({ level: "error", options: { maxLines } });
  });

  it(`the rule as configured names a function of ${maxLines + 1} lines and passes one of ${maxLines}`, async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-function-length-"));
    scratch.push(folder);
    const config = { root: true, vcs: { enabled: false }, linter: { enabled: true }, overrides: [lengthOverride()] };
    await writeFile(path.join(folder, "biome.json"), JSON.stringify(config));
    await mkdir(path.join(folder, "src", "worker"), { recursive: true });
    await mkdir(path.join(folder, "src", "mcp"), { recursive: true });
    await mkdir(path.join(folder, "src", "other"), { recursive: true });
    await writeFile(path.join(folder, "src/worker/long.ts"), functionWithBodyLines("tooLong", maxLines + 1));
    await writeFile(path.join(folder, "src/worker/short.ts"), functionWithBodyLines("justFits", maxLines));
    await writeFile(path.join(folder, "src/mcp/long.ts"), functionWithBodyLines("tooLongToo", maxLines + 1));
    await writeFile(path.join(folder, "src/other/long.ts"), functionWithBodyLines("elsewhere", maxLines + 1));
    // Exits non-zero when it finds errors; the report is on stdout either way.
    const { stdout } = await promisify(execFile)(biome, ["lint", "--reporter=json", "."], { cwd: folder }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }),
    );
    const report = JSON.parse(stdout) as { diagnostics: Array<{ category: string; message: string; location: { path: string } }> };
    const tooLong = report.diagnostics.filter((diagnostic) => diagnostic.category === "lint/complexity/noExcessiveLinesPerFunction");
    expect(tooLong.map((diagnostic) => diagnostic.location.path).sort()).toEqual(["src/mcp/long.ts", "src/worker/long.ts"]);
    expect(tooLong[0]?.message).toContain(`Maximum allowed is ${maxLines}`);
  });
});
