import type { Store } from "../store/store.js";

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

export function startLeaseKeeper(store: Pick<Store, "runs">, leaseMs: number, onError: (error: unknown) => void): LeaseKeeper {
  const owners = new Set<string>();
  // One renewal at a time: ticks that come while one is still on its way add nothing but pool connections.
  let renewing = false;
  const timer = setInterval(
    () => {
      if (owners.size === 0 || renewing) return;
      renewing = true;
      store.runs
        .renewLeases([...owners], leaseMs)
        .catch(onError)
        .finally(() => {
          renewing = false;
        });
    },
    // FOYA_LEASE_MS is at least 500 (src/config.ts), so renewals are at least 166 ms apart.
    Math.floor(leaseMs / 3),
  );
  timer.unref();
  return {
    hold: (owner) => void owners.add(owner),
    release: (owner) => void owners.delete(owner),
    stop: () => clearInterval(timer),
  };
}
