import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { build, type Plugin } from "esbuild";

/**
 * The entries test files start as processes of their own, compiled once per run (by the global
 * setup, in about two seconds, while the template database migrates) into one ESM bundle with
 * shared chunks. A worker started from it loads its code in about 0.8 s of CPU; through
 * `node --import tsx` the same start costs more than two, every start, since tsx resolves and
 * loads each of ~300 modules through its hooks. The code is the same: esbuild only strips types
 * and joins modules, the packages' too (this repository's own, `@foya/*`, from their sources as
 * the CLI's `foya-source` condition says). With the packages left in node_modules, Node's loader
 * resolved, read and scanned their files at every start: 1.2-1.4 s of CPU for the same worker.
 * `loadedAsTheyAre` names the few that stay there.
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
      plugins: [packagesLoadedAsTheyAre],
      // As `npm run foya` runs the CLI: @foya/client from its src/.
      conditions: ["foya-source"],
      // Joined CommonJS packages call `require` for Node's own modules; an ES module has none.
      banner: { js: 'import { createRequire as __entryRequire } from "node:module"; const require = __entryRequire(import.meta.url);' },
      logLevel: "warning",
    });
  } catch (error) {
    await rm(outdir, { recursive: true, force: true });
    throw error;
  }
  return outdir;
}

/**
 * Packages that stay imports, resolved and loaded by Node at run time: a native addon
 * (`@napi-rs/xattr`); packages that find files beside their own through `__dirname`, which a
 * joined ES module does not have (ioredis, in its error stacks; BullMQ, for sandboxed processors
 * and msgpackr's optional native part; pino, for its transports' worker files); and trash,
 * which the service resolves and runs in a child process.
 */
const loadedAsTheyAre = new Set(["@napi-rs/xattr", "bullmq", "ioredis", "pino", "trash"]);

/** The name of the package an import names (`@scope/name` or `name`), or undefined for Node's own modules. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith("node:")) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

const packagesLoadedAsTheyAre: Plugin = {
  name: "packages-loaded-as-they-are",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => {
      const name = packageOf(args.path);
      return name === undefined || loadedAsTheyAre.has(name) ? { path: args.path, external: true } : undefined;
    });
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
