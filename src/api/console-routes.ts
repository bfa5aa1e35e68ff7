import { existsSync } from "node:fs";
import path from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import type { App } from "./app-env.js";

/**
 * The web console (SPEC E3): the static build of packages/console under /console, when it
 * exists (`npm run console:build`; a build made later is served after a restart). Paths that
 * are no file get index.html, so the console's own routes load on refresh. The files need no
 * key: the console asks for one and sends it as a header, never in a URL.
 */
export function registerConsoleRoutes(app: App, consoleDir: string): void {
  if (!existsSync(path.join(consoleDir, "index.html"))) return;
  app.get("/console", (c) => c.redirect("/console/", 301));
  app.use("/console/*", async (c, next) => {
    await next();
    // Only the console's own scripts and styles, and calls to this origin.
    c.header(
      "Content-Security-Policy",
      "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    );
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "no-referrer");
  });
  app.use("/console/*", serveStatic({ root: consoleDir, rewriteRequestPath: (requestPath) => requestPath.slice("/console".length) }));
  const indexHtml = serveStatic({ root: consoleDir, path: "index.html" });
  // A missing asset is a 404, not the page.
  app.get("/console/*", async (c, next) => {
    if (/\.[a-z0-9]+$/i.test(c.req.path)) return c.notFound();
    return (await indexHtml(c, next)) ?? c.notFound();
  });
}
