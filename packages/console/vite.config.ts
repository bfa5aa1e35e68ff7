import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The console is served by the API at /console (src/api/console-routes.ts). JSX goes through
 * Vite's own transform with Preact's runtime: a build needs no Babel plugin. `@foya/client` is
 * bundled from its sources, so no client build is needed first.
 */
export default defineConfig({
  root: here,
  base: "/console/",
  resolve: { alias: { "@foya/client": path.join(here, "../client/src/index.ts") } },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: true },
});
