import { inArray, sql } from "drizzle-orm";
import type { Database } from "../db/client.js";
import { runs } from "../db/schema.js";

/**
 * Renews the leases this process holds, in one statement per tick, while their
 * jobs run. A process that stops renewing (killed, frozen) loses its leases
 * after `leaseMs`; the work is then classified by the sweeper or redelivered.
 */
export interface LeaseKeeper {
  hold(owner: string): void;
  release(owner: string): void;
  stop(): void;
}

export function startLeaseKeeper(db: Database, leaseMs: number, onError: (error: unknown) => void): LeaseKeeper {
  const owners = new Set<string>();
  const timer = setInterval(() => {
    if (owners.size === 0) return;
    db.update(runs)
      .set({ leaseUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
      .where(inArray(runs.leaseOwner, [...owners]))
      .catch(onError);
  }, Math.max(100, Math.floor(leaseMs / 3)));
  timer.unref();
  return {
    hold: (owner) => void owners.add(owner),
    release: (owner) => void owners.delete(owner),
    stop: () => clearInterval(timer),
  };
}
