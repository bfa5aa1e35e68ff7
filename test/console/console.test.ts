import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { script, type ApiClient } from "../helpers/api-client.js";
import { createTestEnv, repoRoot, type TestEnv } from "../helpers/test-env.js";

/**
 * The web console (SPEC E3) in a real browser: Debian's Chromium driven by playwright-core
 * against the real service (API, worker, Postgres, Redis), with the console built fresh for
 * this file. `npm run console:screenshots` also saves the main screens to docs/screenshots.
 */
const chromiumPath = "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);
const screenshotsDir = process.env.FOYA_CONSOLE_SCREENSHOTS ? path.resolve(repoRoot, process.env.FOYA_CONSOLE_SCREENSHOTS) : undefined;
if (!hasChromium) console.warn(`web console browser tests skipped: ${chromiumPath} is missing (apt-get install chromium)`);

let env: TestEnv;
let baseUrl: string;
let tenant: ApiClient;
let browser: Browser;
let built: string;
let page: Page;
/** Every URL the browser asked for: the API key must be in none (SPEC E3). */
let requested: string[];

describe.skipIf(!hasChromium)("web console in Chromium", () => {
  beforeAll(async () => {
    built = await mkdtemp(path.join(tmpdir(), "foya-console-"));
    await execa(
      process.execPath,
      [path.join(repoRoot, "node_modules/vite/bin/vite.js"), "build", "packages/console", "--outDir", built, "--logLevel", "warn"],
      { cwd: repoRoot },
    );
    env = await createTestEnv({ FOYA_CONSOLE_DIR: built });
    await env.startWorker();
    baseUrl = (await env.startServer()).url;
    tenant = await env.newTenant("console");
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
    if (screenshotsDir) await mkdir(screenshotsDir, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await env?.close();
    if (built) await rm(built, { recursive: true, force: true });
  });

  beforeEach(async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    requested = [];
    page.on("request", (request) => requested.push(request.url()));
  });
  afterEach(async () => {
    expect(requested.filter((url) => url.includes(tenant.key))).toEqual([]);
    await page.context().close();
  });

  const screenshot = async (name: string) => {
    if (screenshotsDir) await page.screenshot({ path: path.join(screenshotsDir, `${name}.png`) });
  };

  async function signIn(): Promise<void> {
    await page.goto(`${baseUrl}/console/`);
    await page.getByLabel("API key").fill(tenant.key);
    await screenshot("sign-in");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sessions" }).waitFor();
  }

  it("E3: approving a pending call in the console lets the run finish", async () => {
    await signIn();
    // A session made in the console (manual mode: the write asks), and a run started there.
    await page.getByLabel("Approval mode").selectOption("manual");
    await page.getByRole("button", { name: "Create session" }).click();
    await page.waitForURL(/\/console\/sessions\/ses_/);
    const sessionId = new URL(page.url()).pathname.split("/").at(-1)!;
    const input = script([
      [{ tool: "write", args: { path: "notes.md", content: "approved in the console\n" } }],
      [{ text: "The note is written." }],
    ]);
    await page.getByLabel("Message").fill(input);
    await page.getByRole("button", { name: "Start run" }).click();
    const call = page.locator(".tool-call", { hasText: "write" });
    await call.locator('[data-status="awaiting_approval"]').waitFor();
    await screenshot("run-view-waiting");

    await page.getByRole("link", { name: "Approvals" }).first().click();
    const approval = page.locator(".approval", { hasText: "write" });
    await approval.waitFor();
    await expect(approval.locator(".why").textContent()).resolves.toMatch(/\S/);
    await expect(approval.locator("pre.diff").textContent()).resolves.toContain("+approved in the console");
    await screenshot("approvals");
    await approval.getByRole("button", { name: "Approve", exact: true }).click();
    await approval.waitFor({ state: "detached" });

    await page.getByRole("link", { name: "Sessions" }).click();
    await page.locator(`[data-session-id="${sessionId}"]`).waitFor();
    await screenshot("sessions");
    await page.getByRole("link", { name: sessionId }).click();
    const run = page.locator(".run").first();
    await run.locator('header [data-status="completed"]').waitFor({ timeout: 30_000 });
    await run.locator(".assistant-text").getByText("The note is written.").waitFor();
    await expect(run.locator('.tool-call [data-status="succeeded"]').count()).resolves.toBe(1);
    await screenshot("run-view");

    const runId = (await run.getAttribute("data-run-id"))!;
    expect((await tenant.get(`/v1/runs/${runId}`)).body.status).toBe("completed");
    expect((await tenant.get(`/v1/approvals?runId=${runId}`)).body.approvals).toMatchObject([{ status: "approved" }]);
    expect(await readFile(path.join(await env.workspaceOf(sessionId), "notes.md"), "utf8")).toBe("approved in the console\n");
    // The event stream was opened with a stream token, never the key (checked after each test).
    expect(requested.some((url) => url.includes(`/v1/sessions/${sessionId}/events?`) && url.includes("token="))).toBe(true);
  });

  it("E3: reverting a change in the console restores the file", async () => {
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const writes = [
      [{ tool: "write", args: { path: "draft.txt", content: "old text\n" } }],
      [{ tool: "write", args: { path: "draft.txt", content: "new text\n" } }],
      [{ text: "rewritten" }],
    ];
    const started = await tenant.startRun(sessionId, script(writes));
    expect((await tenant.waitForRun(started.body.id)).status).toBe("completed");
    const workspace = await env.workspaceOf(sessionId);
    expect(await readFile(path.join(workspace, "draft.txt"), "utf8")).toBe("new text\n");
    const [, rewrite] = (await tenant.get(`/v1/sessions/${sessionId}/file-changes`)).body.fileChanges as Array<{ id: string }>;

    await signIn();
    await page.getByRole("link", { name: sessionId }).click();
    const row = page.locator(`[data-change-id="${rewrite!.id}"]`);
    await row.waitFor();
    await row.getByRole("button", { name: "Diff" }).click();
    await expect(row.locator("pre.diff").textContent()).resolves.toMatch(/-old text[\s\S]*\+new text/);
    await screenshot("file-changes");
    await row.getByRole("button", { name: "Revert", exact: true }).click();
    await row.getByText("reverted").waitFor();

    expect(await readFile(path.join(workspace, "draft.txt"), "utf8")).toBe("old text\n");
    expect((await tenant.get(`/v1/file-changes/${rewrite!.id}`)).body.revertedAt).not.toBeNull();
  });

  it("E3: the run view shows an image a tool returned, fetched by its artifact id with the key in a header", async () => {
    const { sessionId } = await tenant.newSession();
    const started = await tenant.startRun(sessionId, script([[{ tool: "make_image", args: {} }], [{ text: "drawn" }]]));
    expect((await tenant.waitForRun(started.body.id)).status).toBe("completed");
    await signIn();
    await page.getByRole("link", { name: sessionId }).click();
    const image = page.locator(".tool-call img.artifact-image").first();
    await image.waitFor({ timeout: 20_000 });
    // Decoded by the browser: the 1x1 PNG the tool made.
    await expect(
      image.evaluate(async (element: { decode(): Promise<void>; naturalWidth: number }) => {
        await element.decode();
        return element.naturalWidth;
      }),
    ).resolves.toBe(1);
    expect(requested.some((url) => /\/v1\/artifacts\/art_/.test(url))).toBe(true);
  });
  it('E3, W2: "Fork from here" on a step opens the new session, which shows the history up to that step and where it came from', async () => {
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const steps = [
      [{ tool: "write", args: { path: "a.txt", content: "one\n" } }],
      [{ tool: "write", args: { path: "b.txt", content: "two\n" } }],
      [{ text: "both written" }],
    ];
    const started = await tenant.startRun(sessionId, script(steps));
    expect((await tenant.waitForRun(started.body.id)).status).toBe("completed");

    await signIn();
    await page.getByRole("link", { name: sessionId }).click();
    const source = page.locator(`[data-run-id="${started.body.id}"]`);
    await source.locator(".assistant-text").getByText("both written").waitFor();
    await source.locator('.step[data-step-index="0"]').getByRole("button", { name: "Fork from here" }).click();
    await page.waitForURL((url) => /\/console\/sessions\/ses_/.test(url.pathname) && !url.pathname.endsWith(sessionId));
    const forkId = new URL(page.url()).pathname.split("/").at(-1)!;

    await expect(page.locator(".notice.forked").textContent()).resolves.toContain(`Forked from ${sessionId} at step 0 of run 1`);
    // The copied run up to step 0: its input, the write of a.txt; it ends there (cancelled: the rest stays in the source).
    const copied = page.locator(".run");
    await copied.locator('header [data-status="cancelled"]').waitFor();
    await expect(copied.count()).resolves.toBe(1);
    await expect(copied.locator(".user-text").textContent()).resolves.toBe(script(steps));
    await expect(copied.locator(".tool-call").count()).resolves.toBe(1);
    await expect(copied.locator(".tool-call pre.diff").textContent()).resolves.toContain("+one");
    await expect(copied.locator('.step[data-step-index="1"]').count()).resolves.toBe(0);
    await screenshot("forked-session");

    expect((await tenant.messages(forkId)).map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect((await tenant.messages(sessionId)).length).toBe(6);
  });

  it('E3, W2: "Edit and resend" on a user message sets its run aside and a new run with the edited text takes its place; Bring back restores it', async () => {
    const { sessionId } = await tenant.newSession({ approvalMode: "auto" });
    const first = await tenant.startRun(
      sessionId,
      script([[{ tool: "write", args: { path: "keep.txt", content: "keep\n" } }], [{ text: "one" }]]),
    );
    expect((await tenant.waitForRun(first.body.id)).status).toBe("completed");
    const second = await tenant.startRun(
      sessionId,
      script([[{ tool: "write", args: { path: "drop.txt", content: "drop\n" } }], [{ text: "two" }]]),
    );
    expect((await tenant.waitForRun(second.body.id)).status).toBe("completed");

    await signIn();
    await page.getByRole("link", { name: sessionId }).click();
    const old = page.locator(`[data-run-id="${second.body.id}"]`);
    await old.locator(".assistant-text").getByText("two", { exact: true }).waitFor();
    await old.getByRole("button", { name: "Edit and resend" }).click();
    const edited = script([[{ text: "the edited answer" }]]);
    await old.getByLabel("Edited message").fill(edited);
    await screenshot("edit-and-resend");
    await old.getByRole("button", { name: "Resend" }).click();

    // The old run leaves the history; the new one follows the first run.
    await old.waitFor({ state: "detached" });
    const fresh = page.locator(".run").first();
    await fresh.locator(".assistant-text").getByText("the edited answer").waitFor();
    await fresh.locator('header [data-status="completed"]').waitFor();
    const freshId = (await fresh.getAttribute("data-run-id"))!;
    expect([first.body.id, second.body.id]).not.toContain(freshId);
    await expect(fresh.locator(".user-text").textContent()).resolves.toBe(edited);
    await expect(page.locator(".run").count()).resolves.toBe(2);
    await expect(page.locator(".notice.rewound").textContent()).resolves.toMatch(
      /^Rewound to the end of run 1: .* is branch brn_\S+; no call after that point had effects outside the workspace\.$/,
    );
    const [branch] = (await tenant.get(`/v1/sessions/${sessionId}/branches`)).body.branches;
    expect(branch).toMatchObject({ runIds: [second.body.id], restoredAt: null });
    const listed = page.locator(`[data-branch-id="${branch.id}"]`);
    await expect(listed.textContent()).resolves.toContain("1 run, 4 messages set aside");
    expect([...new Set((await tenant.messages(sessionId)).map((message) => message.runId))]).toEqual([first.body.id, freshId]);
    // The set-aside run's change is no longer in the workspace: nothing to revert.
    const dropped = page.locator(".file-changes li", { hasText: "drop.txt" });
    await dropped.getByText("set aside").waitFor();
    await expect(dropped.getByRole("button", { name: "Revert", exact: true }).count()).resolves.toBe(0);
    await screenshot("rewound-session");

    // Bring back: the old run returns, the resent one is set aside in turn.
    await listed.getByRole("button", { name: "Bring back" }).click();
    await page.locator(`[data-run-id="${second.body.id}"]`).waitFor();
    await page.locator(`[data-run-id="${freshId}"]`).waitFor({ state: "detached" });
    await listed.getByText("brought back").waitFor();
    await expect(page.locator("[data-branch-id]").count()).resolves.toBe(2);
    expect([...new Set((await tenant.messages(sessionId)).map((message) => message.runId))]).toEqual([first.body.id, second.body.id]);
  });
});
