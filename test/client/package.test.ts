import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { FoyaEvent, FoyaEventBody, RunStatus, WebhookEventType } from "../../packages/client/src/index.js";
import type { EventBody, SessionEvent } from "../../src/core/events.js";
import type { Id, IdPrefix } from "../../src/ids.js";
import type { RunStatus as ServiceRunStatus } from "../../src/core/run-status.js";
import type { WebhookEventType as ServiceWebhookEventType } from "../../src/webhooks/webhook-event-types.js";
import { script } from "../helpers/api-client.js";
import { createTestEnv, repoRoot, type TestEnv } from "../helpers/test-env.js";

const packageDir = path.join(repoRoot, "packages/client");

/** Whether `T` is one of the service's prefixed id types (`run_${string}`), not a literal that merely starts like one ("run_start"). */
type IsIdType<T> = true extends { [P in IdPrefix]: Id<P> extends T ? true : false }[IdPrefix] ? true : false;

/** The service's type with its prefixed ids as plain strings: the client package does not know the service's id types. */
type WireIds<T> = T extends string
  ? IsIdType<T> extends true
    ? string
    : T
  : T extends readonly (infer E)[]
    ? WireIds<E>[]
    : T extends object
      ? { [K in keyof T]: WireIds<T[K]> }
      : T;

describe("@foya/client as a package", () => {
  it("E1: generated types are current (npm run client:generate was run after the API last changed)", async () => {
    const folder = await mkdtemp(path.join(tmpdir(), "foya-client-types-"));
    try {
      const fresh = path.join(folder, "openapi.ts");
      await execa(process.execPath, ["--import", "tsx", "scripts/generate-client-types.ts", "--out", fresh], { cwd: repoRoot });
      const checkedIn = await readFile(path.join(packageDir, "src/generated/openapi.ts"), "utf8");
      expect(await readFile(fresh, "utf8"), "packages/client/src/generated/openapi.ts is stale: run npm run client:generate").toBe(
        checkedIn,
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("E1: the hand-written event union is the service's, its ids the plain strings the wire carries (checked by the type checker)", () => {
    expectTypeOf<FoyaEventBody>().toEqualTypeOf<WireIds<EventBody>>();
    expectTypeOf<FoyaEvent>().toExtend<WireIds<SessionEvent>>();
    expectTypeOf<FoyaEvent["type"]>().toEqualTypeOf<SessionEvent["type"]>();
    expectTypeOf<RunStatus>().toEqualTypeOf<ServiceRunStatus>();
    expectTypeOf<WebhookEventType>().toEqualTypeOf<ServiceWebhookEventType>();
  });

  describe("built", () => {
    let env: TestEnv;
    let built: string;
    beforeAll(async () => {
      // Inside the package, so the built files resolve its dependencies as an installed copy would (.tmp-* is ignored by git).
      built = await mkdtemp(path.join(packageDir, ".tmp-build-"));
      await execa(
        process.execPath,
        [path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", built],
        { cwd: packageDir },
      );
      env = await createTestEnv();
      await env.startWorker();
    }, 120_000);
    afterAll(async () => {
      await env?.close();
      await rm(built, { recursive: true, force: true });
    });

    it("E1: the build is JavaScript and declarations that Node runs without TypeScript, with no Node-only import", async () => {
      const files = await readdir(built, { recursive: true });
      expect(files).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "event-stream.js", "generated/openapi.d.ts"]));
      for (const file of files.filter((name) => name.endsWith(".js"))) {
        const source = await readFile(path.join(built, file), "utf8");
        const imports = [...source.matchAll(/^(?:import|export) .* from "([^"]+)";$/gm)].map((match) => match[1]!);
        for (const specifier of imports)
          expect(specifier, `${file} imports ${specifier}`).toMatch(/^(\.\/|\.\.\/|openapi-fetch$|eventsource-parser$|standardwebhooks$)/);
        expect(source, file).not.toMatch(/\bprocess\.|\bBuffer\b|\brequire\(/);
      }

      const { url } = await env.startServer();
      const tenant = await env.newTenant();
      const { sessionId } = await tenant.newSession();
      // Plain Node, nothing preloaded: start a run and stream it to its end with the built client.
      const program = `
        import { createFoyaClient } from ${JSON.stringify(path.join(built, "index.js"))};
        const client = createFoyaClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY });
        const { events } = await client.runs.stream(process.env.SESSION_ID, process.env.INPUT);
        for await (const event of events) console.log(event.seq, event.type);
      `;
      const result = await execa(process.execPath, ["--input-type=module", "-e", program], {
        cwd: packageDir,
        env: { BASE_URL: url, API_KEY: tenant.key, SESSION_ID: sessionId, INPUT: script([[{ text: "built" }]]) },
      });
      const lines = result.stdout.trim().split("\n");
      expect(lines[0]).toBe("1 run_start");
      expect(lines.at(-1)).toMatch(/^\d+ run_end$/);
    });
  });
});
