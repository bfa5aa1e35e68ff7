/** Small numeric helpers for the benchmark report. */

export interface Distribution {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending-sorted list (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((total, value) => total + value, 0);
  return {
    count: sorted.length,
    mean: sorted.length > 0 ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : Number.NaN,
  };
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((total, value) => total + value, 0) / values.length;
}

/** Rounds for display and JSON: 2 decimals below 100, 1 below 10,000, integers above. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const abs = Math.abs(value);
  const factor = abs < 100 ? 100 : abs < 10_000 ? 10 : 1;
  return Math.round(value * factor) / factor;
}

export function roundDistribution(d: Distribution): Distribution {
  return { count: d.count, mean: round(d.mean), p50: round(d.p50), p90: round(d.p90), p99: round(d.p99), max: round(d.max) };
}

export function ratio(numerator: number, denominator: number): number {
  return denominator === 0 || !Number.isFinite(denominator) ? Number.NaN : numerator / denominator;
}
