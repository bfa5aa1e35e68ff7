import { expect } from "vitest";
import type { ProviderStreamPart } from "../../src/providers/provider.js";

/** Every part a provider streams, in order. */
export async function collect(stream: AsyncIterable<ProviderStreamPart>): Promise<ProviderStreamPart[]> {
  const parts: ProviderStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** Concatenated argument deltas per call index: what T2 says must equal the model's string. */
export function argumentsByIndex(parts: ProviderStreamPart[]): Map<number, string> {
  const result = new Map<number, string>();
  for (const part of parts) {
    if (part.type === "tool-call-delta") result.set(part.index, (result.get(part.index) ?? "") + part.argumentsDelta);
  }
  return result;
}

/** Each call's start comes before any of its argument deltas. */
export function expectStartBeforeDeltas(parts: ProviderStreamPart[]): void {
  const started = new Set<number>();
  for (const part of parts) {
    if (part.type === "tool-call-start") started.add(part.index);
    if (part.type === "tool-call-delta") expect(started.has(part.index), `delta before start of call ${part.index}`).toBe(true);
  }
}
