import { createHash } from "node:crypto";
import { appendFileSync } from "node:fs";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import path from "node:path";
import { expect, inject } from "vitest";

/**
 * The escape suite's bookkeeping (SPEC S6-S8). Each attack is an `attempt`:
 * it runs, its own assertions say the attack was refused (and nothing secret
 * came back), and the canary trees (places outside the workspace the attack
 * aims at) must be exactly as they were. Every attempt is written to the
 * ledger the global setup provides, under its class (the test file's name,
 * or the one given); at the end of the run it prints
 * `escape suite: N attempts in K classes, B breaches`, then the attempts per class.
 */
export interface Canary {
  /** Fingerprint of every entry below the watched roots: names, kinds, modes, owners, link counts, contents, link targets. */
  fingerprint(): Promise<string>;
}

export function watch(roots: readonly string[]): Canary {
  return {
    async fingerprint() {
      const hash = createHash("sha256");
      const visit = async (entry: string): Promise<void> => {
        const stats = await lstat(entry).catch(() => null);
        if (!stats) return void hash.update(`${entry}:absent\n`);
        hash.update(`${entry}:${stats.mode}:${stats.uid}:${stats.gid}:${stats.nlink}\n`);
        if (stats.isSymbolicLink()) hash.update(await readlink(entry));
        else if (stats.isFile()) hash.update(await readFile(entry));
        else if (stats.isDirectory()) for (const name of (await readdir(entry)).sort()) await visit(path.join(entry, name));
      };
      for (const root of roots) await visit(root);
      return hash.digest("hex");
    },
  };
}

/**
 * Runs one attack. `attack` asserts that it was refused; the canary must not
 * have changed. Either failing is a breach: recorded, then thrown so the test
 * fails.
 */
export async function attempt(
  name: string,
  canary: Canary,
  attack: () => Promise<void>,
  options: { escapeClass?: string } = {},
): Promise<void> {
  const escapeClass = options.escapeClass ?? path.basename(expect.getState().testPath ?? "unknown").replace(/\.test\.ts$/, "");
  const before = await canary.fingerprint();
  let failure: unknown;
  try {
    await attack();
  } catch (error) {
    failure = error;
  }
  if (failure === undefined && (await canary.fingerprint()) !== before)
    failure = new Error(`${name}: something outside the workspace changed`);
  appendFileSync(
    path.join(inject("escapeLedger"), `${process.pid}.jsonl`),
    `${JSON.stringify({ name, escapeClass, breached: failure !== undefined })}\n`,
  );
  if (failure !== undefined) throw failure;
}
