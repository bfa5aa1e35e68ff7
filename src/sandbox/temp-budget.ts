import { mkdirSync, openSync, closeSync, readdirSync, renameSync, unlinkSync } from "node:fs";
import { processStart } from "../processes/process-start.js";
import { hostname } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";

/**
 * A tenant's temporary space on one host (SPEC S7). Each sandbox's
 * `/tmp`, `/var/tmp` and `/dev/shm` are tmpfs: host memory that no rlimit
 * counts. Each is sized for its call, and together the sandboxes of one tenant
 * (its foreground calls, background commands and stdio MCP servers, on every
 * worker process of this host) hold at most the tenant's budget: a sandbox
 * takes its share before it starts and gives it back when it ended.
 *
 * The ledger is a folder per tenant uid, `<root>/<host>/<uid>/`, with one empty
 * file per running sandbox named `<bytes>.<pid>.<start>.<random>` (the worker
 * process holding the share, with its start time so a reused pid is not taken
 * for it). A share whose worker is gone (it crashed; its sandboxes died with it)
 * no longer counts and is removed by the next reservation.
 *
 * No lock: a reservation writes its file first, then sums the others and trims
 * its own to what is left (renaming it), never growing it. So whichever share
 * was written last saw every other one at its size then or larger, and the sum
 * of the final shares never passes the budget; two racing reservations may both
 * take less than they could, never more.
 */
export interface TempBudget {
  /**
   * Takes up to `wantedBytes` of the tenant's `budgetBytes` on this host: the
   * bytes granted (at least `minimumBytes`, or all that was wanted when that is
   * less), or why not.
   */
  reserve(request: { uid: number; wantedBytes: number; minimumBytes: number; budgetBytes: number }): TempShare | { refused: string };
}

export interface TempShare {
  bytes: number;
  /** Gives the share back; safe to call more than once. */
  release(): void;
}

const sharePattern = /^(\d+)\.(\d+)\.(\d+)\.[0-9a-f]+$/;

export function createTempBudget(root: string): TempBudget {
  const self = { pid: process.pid, start: processStart(process.pid) ?? "0" };
  const hostFolder = path.join(root, hostname());
  return {
    reserve({ uid, wantedBytes, minimumBytes, budgetBytes }) {
      const folder = path.join(hostFolder, String(uid));
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      const tag = `${self.pid}.${self.start}.${randomBytes(6).toString("hex")}`;
      let mine = path.join(folder, `${wantedBytes}.${tag}`);
      closeSync(openSync(mine, "wx", 0o600));
      const alive = new Map<string, boolean>([[`${self.pid}.${self.start}`, true]]);
      let others = 0;
      let running = 0;
      for (const name of readdirSync(folder)) {
        const share = sharePattern.exec(name);
        if (!share || name === path.basename(mine)) continue;
        const owner = `${share[2]}.${share[3]}`;
        let living = alive.get(owner);
        if (living === undefined) {
          living = processStart(Number(share[2])) === share[3];
          alive.set(owner, living);
        }
        if (!living) {
          unlinkQuietly(path.join(folder, name));
          continue;
        }
        others += Number(share[1]);
        running++;
      }
      const left = Math.max(0, budgetBytes - others);
      const granted = Math.min(wantedBytes, left);
      if (granted < Math.min(minimumBytes, wantedBytes)) {
        unlinkQuietly(mine);
        return {
          refused:
            `this tenant's temporary space on this host is taken: its ${running} running sandbox${running === 1 ? "" : "es"} (foreground calls, background commands, MCP servers) ` +
            `hold ${others} of its ${budgetBytes} bytes (FOYA_TOOL_TMP_BUDGET_BYTES, or the tenant's limits), and a sandbox needs at least ${Math.min(minimumBytes, wantedBytes)}; ` +
            "wait for a call to end, or cancel a background command",
        };
      }
      if (granted < wantedBytes) {
        const trimmed = path.join(folder, `${granted}.${tag}`);
        renameSync(mine, trimmed);
        mine = trimmed;
      }
      let released = false;
      return {
        bytes: granted,
        release() {
          if (released) return;
          released = true;
          unlinkQuietly(mine);
        },
      };
    },
  };
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // removed already (by the next reservation, once this worker was gone)
  }
}
