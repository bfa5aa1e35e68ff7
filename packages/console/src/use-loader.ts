import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { describeError } from "./console-client.js";

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  reload: () => Promise<void>;
}

/** Loads once, then on `reload` (and every `pollMs`, if given); keeps the last data while reloading. */
export function useLoader<T>(load: () => Promise<T>, pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The latest loader, so a reload started by the timer reads what the screen reads now.
  const current = useRef(load);
  current.current = load;
  const reload = useCallback(async () => {
    try {
      setData(await current.current());
      setError(null);
    } catch (failure) {
      setError(describeError(failure));
    }
  }, []);
  useEffect(() => {
    void reload();
    if (!pollMs) return undefined;
    const timer = setInterval(() => void reload(), pollMs);
    return () => clearInterval(timer);
  }, [reload, pollMs]);
  return { data, error, reload };
}
