/**
 * A metric label whose values come from tenants or models (tenant ids, MCP tool names) would
 * grow a series per value without end. The first `max` distinct values keep their own series;
 * every later one is counted as `other`, so a scrape stays bounded whatever tenants do.
 */
export type BoundedLabel = (value: string) => string;

const otherLabel = "other";

export function boundedLabel(max: number): BoundedLabel {
  const seen = new Set<string>();
  return (value) => {
    if (seen.has(value)) return value;
    if (seen.size >= max) return otherLabel;
    seen.add(value);
    return value;
  };
}
