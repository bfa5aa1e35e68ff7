/** A benchmark knob from the environment: a whole number in 1..max, or the fallback when unset. */
export function envInt(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number.parseInt(raw, 10);
  if (!Number.isFinite(value) || value < 1 || value > max) throw new Error(`${name} must be an integer in 1..${max}`);
  return value;
}
