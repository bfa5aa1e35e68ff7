import { existsSync, lstatSync } from "node:fs";
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { FileChangeRecord } from "../../core/file-change-record.js";
import type { FileChangeId } from "../../ids.js";

/**
 * What a layer's folder says about its apply (SPEC X7, D3): `records.json` holds the call's file
 * changes, written before the workspace changes; `applied` is written once every change was
 * placed. A worker killed anywhere in between leaves both behind with the layer, so its
 * roll-forward stores the records the call would have sent (under the same ids: a result that
 * was stored meanwhile is not stored twice), and finishes an apply that was cut short.
 */
export type LayerJournal =
  | { kind: "none" }
  | { kind: "recorded"; records: JournaledRecord[] }
  | { kind: "applied"; records: JournaledRecord[] };

/** A file change with the id it is stored under, fixed before the workspace changes. */
export type JournaledRecord = FileChangeRecord & {
  id: FileChangeId;
  /** A door write's staged version, by name in the folder (`door-journal.ts`): whether it was placed is read from it. */
  staged?: string;
};

const recordsFile = "records.json";
const appliedFile = "applied";

export async function writeRecords(dir: string, records: readonly JournaledRecord[]): Promise<void> {
  const file = path.join(dir, recordsFile);
  // Renamed into place: a reader finds every record or none.
  await writeFile(`${file}.partial`, JSON.stringify(records));
  await rename(`${file}.partial`, file);
}

export async function markApplied(dir: string): Promise<void> {
  await writeFile(path.join(dir, appliedFile), "");
}

export async function readJournal(dir: string): Promise<LayerJournal> {
  let text: string;
  try {
    text = await readFile(path.join(dir, recordsFile), "utf8");
  } catch {
    return { kind: "none" };
  }
  const records = JSON.parse(text) as JournaledRecord[];
  return existsSync(path.join(dir, appliedFile)) ? { kind: "applied", records } : { kind: "recorded", records };
}

/** Whether a call's folder is a door write's journal (`door-journal.ts`): it has no upper. */
export function isDoorJournal(dir: string): boolean {
  return !existsSync(path.join(dir, "upper"));
}

/**
 * A door journal's records whose versions were placed, without their staged names (what its
 * roll-forward stores). Read from the staged file: a rename moved it into the workspace (it is
 * gone), a new file's link gave it a second name; still there with one name, it was not placed.
 */
export function placedRecords(dir: string, records: readonly JournaledRecord[]): JournaledRecord[] {
  return records.filter((record) => record.staged === undefined || wasPlaced(path.join(dir, record.staged))).map(withoutStaged);
}

function wasPlaced(staged: string): boolean {
  try {
    return lstatSync(staged).nlink > 1;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
}

function withoutStaged({ staged: _staged, ...record }: JournaledRecord): JournaledRecord {
  return record;
}
