import { createHash } from "node:crypto";
import { defineTool, textResult, type AnyTool } from "../../src/tools/tool.js";

/**
 * Bench-only tools, loaded through FOYA_TOOL_MODULES by bench/context-bench.ts.
 *
 * `big_output` answers exactly `bytes` bytes of ASCII text (so characters ==
 * bytes), either compressible (log-like lines) or incompressible (base64 of
 * pseudo-random bytes), deterministic in `seed`. Postgres TOAST compresses
 * large values, so both kinds are measured.
 *
 * Before answering, a call reports itself to a hook on `globalThis` (the bench
 * runs the worker in-process), so the bench can mark the WAL position at the
 * start of each call and attribute WAL to steps.
 */
export const callHookKey = Symbol.for("foya.bench.bigOutput.onCall");

export type CallHook = (info: { callId: string; bytes: number; kind: string }) => Promise<void>;

const words = [
  "request",
  "handled",
  "user",
  "cache",
  "miss",
  "hit",
  "shard",
  "upstream",
  "latency",
  "retry",
  "commit",
  "flush",
  "index",
  "queue",
];

/** Deterministic pseudo-random bytes: SHA-256 in counter mode (fast enough for tens of MiB). */
function pseudoRandomBytes(seed: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length + 32);
  let offset = 0;
  for (let counter = 0; offset < length; counter++) {
    createHash("sha256").update(`${seed}:${counter}`).digest().copy(out, offset);
    offset += 32;
  }
  return out.subarray(0, length);
}

/** `bytes` characters of base64: incompressible (6 bits of entropy per byte). */
export function randomText(bytes: number, seed: number): string {
  return pseudoRandomBytes(seed, Math.ceil((bytes * 3) / 4) + 3)
    .toString("base64")
    .slice(0, bytes);
}

/** `bytes` characters of log-like lines: compressible, but not a single repeated line. */
export function logText(bytes: number, seed: number): string {
  const lines: string[] = [];
  let length = 0;
  let state = seed >>> 0 || 1;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  for (let i = 0; length < bytes; i++) {
    const line = `2024-05-01T12:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}.${String(next() % 1000).padStart(3, "0")}Z INFO ${words[next() % words.length]} ${words[next() % words.length]} id=${next() % 100000} took=${next() % 500}ms status=${[200, 200, 200, 404, 500][next() % 5]}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join("\n").slice(0, bytes);
}

export const tools: AnyTool[] = [
  defineTool<{ bytes: number; kind: "text" | "random"; seed?: number }>({
    name: "big_output",
    description: "Bench tool: answers exactly `bytes` bytes of text, compressible log lines or incompressible base64.",
    parameters: {
      type: "object",
      properties: {
        bytes: { type: "integer", minimum: 0, maximum: 20_000_000 },
        kind: { type: "string", enum: ["text", "random"] },
        seed: { type: "integer" },
      },
      required: ["bytes", "kind"],
      additionalProperties: false,
    },
    exposure: "direct",
    sideEffect: "read",
    async run(_context, args, call) {
      const hook = (globalThis as Record<symbol, unknown>)[callHookKey] as CallHook | undefined;
      if (hook) await hook({ callId: call.callId, bytes: args.bytes, kind: args.kind });
      const seed = args.seed ?? 1;
      return textResult(args.kind === "random" ? randomText(args.bytes, seed) : logText(args.bytes, seed));
    },
  }),
];
