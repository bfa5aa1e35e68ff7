import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { build, type Plugin } from "esbuild";

/**
 * The entries test files start as processes of their own, compiled once per run (by the global
 * setup, in well under a second) into one ESM bundle with shared chunks. A process started from
 * it loads its code in about a second of CPU; through `node --import tsx` the same start costs
 * more than two, every start, since tsx resolves and loads each of ~300 modules through its hooks.
 * The code is the same: esbuild only strips types and joins modules; packages stay in
 * node_modules, loaded as they are, except this repository's own (`@foya/*`), taken from their
 * sources as the CLI's `foya-source` condition says.
 */
export const bundledEntries = [
  "src/api/main.ts",
  "src/worker/main.ts",
  "src/db/migrate-cli.ts",
  "src/health/worker-healthcheck.ts",
  "packages/cli/src/main.ts",
  "test/chaos/warm-worker-main.ts",
  // Tool modules (FOYA_TOOL_MODULES): a compiled process cannot import TypeScript.
  "test/fixtures/test-tools.ts",
  "test/fixtures/context-tools.ts",
] as const;

export type BundledEntry = (typeof bundledEntries)[number];

/**
 * Builds the entries into a new folder directly under the repository: one level down, like src/,
 * so what the code finds beside itself (package.json and drizzle/ by `findServiceDir`, the
 * console's build at `../packages/console/dist`) is found the same. Chunks are `.mjs`, so no
 * package.json is needed there (one would stop `findServiceDir`). Answers the folder.
 */
export async function buildEntries(repoRoot: string): Promise<string> {
  const outdir = await mkdtemp(path.join(repoRoot, ".tmp-test-entries-"));
  try {
    await build({
      entryPoints: bundledEntries.map((entry) => path.join(repoRoot, entry)),
      outbase: repoRoot,
      outdir,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      plugins: [packagesExceptOurs],
      // As `npm run foya` runs the CLI: @foya/client from its src/.
      conditions: ["foya-source"],
      logLevel: "warning",
    });
  } catch (error) {
    await rm(outdir, { recursive: true, force: true });
    throw error;
  }
  return outdir;
}

/** Every package import stays an import, resolved by Node at run time, except `@foya/*`. */
const packagesExceptOurs: Plugin = {
  name: "packages-except-ours",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@foya/") ? undefined : { path: args.path, external: true }));
  },
};

/** Where `entry` (a path relative to the repository) is in a build made by `buildEntries`. */
export function builtEntry(buildDir: string, entry: BundledEntry): string {
  return path.join(buildDir, entry.replace(/\.ts$/, ".mjs"));
}

/**
 * `env` for a process started from the build: tool modules (FOYA_TOOL_MODULES) that are entries
 * of the build are named by their compiled files; others stay as they are.
 */
export function envForBuild(buildDir: string, repoRoot: string, env: Record<string, string>): Record<string, string> {
  const modules = env.FOYA_TOOL_MODULES;
  if (!modules) return env;
  const compiled = modules.split(",").map((module) => {
    const entry = path.relative(repoRoot, module);
    return (bundledEntries as readonly string[]).includes(entry) ? builtEntry(buildDir, entry as BundledEntry) : module;
  });
  return { ...env, FOYA_TOOL_MODULES: compiled.join(",") };
}
