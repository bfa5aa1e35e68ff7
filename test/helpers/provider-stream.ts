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

/** A streamed response reduced to what a step keeps: text, calls in order, and the finish. */
export interface StreamOutcome {
  text: string;
  toolCalls: Array<{ index: number; id: string; name: string; arguments: string }>;
  finish: Extract<ProviderStreamPart, { type: "finish" }> | undefined;
}

export function outcomeOf(parts: ProviderStreamPart[]): StreamOutcome {
  const args = argumentsByIndex(parts);
  return {
    text: parts.map((part) => (part.type === "text-delta" ? part.text : "")).join(""),
    toolCalls: parts.flatMap((part) =>
      part.type === "tool-call-start" ? [{ index: part.index, id: part.id, name: part.name, arguments: args.get(part.index) ?? "" }] : [],
    ),
    finish: parts.find((part) => part.type === "finish"),
  };
}

/** The reasoning a stream carried (SPEC PR5): its streamed text, and the blocks to keep, in order. */
export function reasoningOf(parts: ProviderStreamPart[]): {
  text: string;
  blocks: Array<Extract<ProviderStreamPart, { type: "reasoning-block" }>>;
} {
  return {
    text: parts.map((part) => (part.type === "reasoning-delta" ? part.text : "")).join(""),
    blocks: parts.filter((part) => part.type === "reasoning-block"),
  };
}
