import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { OpenAPIHono } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/api/app-env.js";
import { registerConsoleRoutes } from "../../src/api/console-routes.js";

let built: string;

beforeAll(async () => {
  built = await mkdtemp(path.join(tmpdir(), "foya-console-files-"));
  await mkdir(path.join(built, "assets"));
  await writeFile(path.join(built, "index.html"), "<!doctype html><title>console</title>");
  await writeFile(path.join(built, "assets", "app.js"), "export {};");
});
afterAll(async () => rm(built, { recursive: true, force: true }));

describe("the console's static files (SPEC E3)", () => {
  it("E3: /console serves the build, index.html for the console's own routes, 404 for a missing asset", async () => {
    const app = new OpenAPIHono<AppEnv>();
    registerConsoleRoutes(app, built);
    const redirect = await app.request("/console");
    expect([redirect.status, redirect.headers.get("location")]).toEqual([301, "/console/"]);
    for (const page of ["/console/", "/console/sessions/ses_abc", "/console/approvals"]) {
      const response = await app.request(page);
      expect(response.status, page).toBe(200);
      expect(await response.text()).toContain("<title>console</title>");
      expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
    }
    const script = await app.request("/console/assets/app.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toContain("javascript");
    expect((await app.request("/console/assets/missing.js")).status).toBe(404);
    // A path out of the build is refused by serveStatic; what answers is the console's page, not the file.
    const escaping = await app.request("/console/..%2f..%2f..%2fetc/passwd");
    expect(await escaping.text()).not.toContain("root:");
  });

  it("E3: without a build there is no /console route", async () => {
    const app = new OpenAPIHono<AppEnv>();
    registerConsoleRoutes(app, path.join(built, "absent"));
    expect((await app.request("/console/")).status).toBe(404);
  });
});
