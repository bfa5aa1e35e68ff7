import { existsSync } from "node:fs";
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
export type JournaledRecord = FileChangeRecord & { id: FileChangeId };

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
