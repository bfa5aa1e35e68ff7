import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listTrashPage, timeOrderedId, trashPlacer, type TrashPage } from "../../src/workspace/project-trash.js";

/** A project's trash listed in pages (SPEC F4): every entry once, newest first, each page reading at most its own entries. */
let base: string;
let workspace: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "foya-trash-pages-"));
  workspace = path.join(base, "workspace");
  mkdirSync(workspace);
});
afterEach(async () => rm(base, { recursive: true, force: true }));

/** Trashes `count` files into a trash of its own, as a removal does; answers the trash's root. */
function trashWith(name: string, count: number, prefix = "f"): string {
  const root = path.join(base, name);
  for (let i = 0; i < count; i++) {
    const file = path.join(workspace, `${prefix}${i}.txt`);
    writeFileSync(file, `${i}\n`);
    trashPlacer(root).place(file, file);
  }
  return root;
}

async function allPages(root: string, limit: number): Promise<TrashPage[]> {
  const pages: TrashPage[] = [];
  let after: string | undefined;
  do {
    const page = await listTrashPage(root, workspace, { limit, after });
    pages.push(page);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return pages;
}

describe("trash pages", () => {
  it("F4: 1,500 entries page through completely, each once, newest first; no page reads more entries than its limit", async () => {
    trashWith("big", 1000, "old");
    // Ids order by the millisecond: the newer ones are trashed once the clock has moved on.
    const moved = Date.now() + 2;
    while (Date.now() < moved);
    const root = trashWith("big", 500, "new");
    const pages = await allPages(root, 100);
    expect(pages).toHaveLength(15);
    const ids = pages.flatMap((page) => page.entries.map((entry) => entry.id));
    expect(new Set(ids).size).toBe(1500);
    expect(ids).toEqual([...ids].sort().reverse());
    const paths = pages.flatMap((page) => page.entries.map((entry) => entry.path));
    expect(paths.slice(0, 500).every((where) => where.startsWith("new"))).toBe(true);
    expect(paths.slice(500).every((where) => where.startsWith("old"))).toBe(true);
    for (const page of pages) expect(page.read).toBeLessThanOrEqual(100);
    expect(pages.at(-1)?.next).toBeNull();
  });

  it("F4: a page reads as many entries whatever the trash holds", async () => {
    const small = await listTrashPage(trashWith("small", 60), workspace, { limit: 50 });
    const large = await listTrashPage(trashWith("large", 3000), workspace, { limit: 50 });
    expect(small.read).toBe(50);
    expect(large.read).toBe(50);
    expect(large.entries).toHaveLength(50);
  });

  it("F4: entries named before ids were time-ordered are listed too, once, and entries half gone are skipped", async () => {
    const root = trashWith("mixed", 30);
    // An entry of the random-id era, and a record whose content is gone.
    const old = randomUUID();
    writeFileSync(path.join(root, "Trash", "files", old), "old\n");
    writeFileSync(path.join(root, "Trash", "info", `${old}.trashinfo`), `[Trash Info]\nPath=${path.join(workspace, "old.txt")}\n`);
    writeFileSync(path.join(root, "Trash", "info", `${timeOrderedId()}.trashinfo`), "[Trash Info]\nPath=/gone\n");
    const pages = await allPages(root, 7);
    const ids = pages.flatMap((page) => page.entries.map((entry) => entry.id));
    expect(ids).toHaveLength(31);
    expect(new Set(ids).size).toBe(31);
    expect(ids).toContain(old);
  });

  it("F4: time-ordered ids sort by the time they were made and keep the UUID form the API accepts", () => {
    const earlier = timeOrderedId(1_700_000_000_000);
    const later = timeOrderedId(1_700_000_000_001);
    expect(earlier < later).toBe(true);
    expect(later).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("F4: a missing trash is one empty page", async () => {
    expect(await listTrashPage(path.join(base, "none"), workspace, { limit: 10 })).toEqual({ entries: [], next: null, read: 0 });
  });
});
