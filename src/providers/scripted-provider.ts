import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { RequestMessage } from "./provider.js";
import { FoyaError } from "../errors.js";
import type { ModelProvider, ProviderStreamPart } from "./provider.js";

/**
 * A deterministic model for the demo and for tests. It is stateless: which
 * response to give is derived from the history, so retries and restarts give
 * the same answer.
 *
 * If the latest user message is JSON `{ "script": [step, ...] }`, step N of the
 * turn (N = assistant messages since that user message) plays `script[N]`, a list of
 * actions; past the end it answers "Done.". Otherwise it plays the demo: write a
 * note, read it back, then summarize.
 */
const actionSchema = z.union([
  z.object({ text: z.string(), chunks: z.number().int().positive().optional() }),
  z.object({
    tool: z.string(),
    args: z.unknown().optional(),
    argsRaw: z.string().optional(),
    id: z.string().optional(),
    chunks: z.number().int().positive().optional(),
  }),
  z.object({ delayMs: z.number().int().nonnegative() }),
  z.object({ fail: z.string() }),
]);
const scriptSchema = z.object({
  script: z.array(z.array(actionSchema)),
  /** Pause between streamed chunks, to let tests observe streaming. */
  chunkDelayMs: z.number().int().nonnegative().optional(),
});
type Action = z.infer<typeof actionSchema>;

export function createScriptedProvider(options: { profile: string; model: string }): ModelProvider {
  return {
    profile: options.profile,
    defaultModel: options.model,
    stream(request, signal) {
      return play(request.messages, signal);
    },
  };
}

async function* play(history: RequestMessage[], signal: AbortSignal): AsyncGenerator<ProviderStreamPart> {
  const lastUser = findLastIndex(history, (m) => m.role === "user");
  const userMessage = history[lastUser];
  const stepInTurn = history.slice(lastUser + 1).filter((m) => m.role === "assistant").length;
  const script = userMessage?.role === "user" ? parseScript(userMessage.text) : null;
  const actions: Action[] = script ? (script.script[stepInTurn] ?? [{ text: "Done." }]) : demoStep(stepInTurn, history);
  const delay = script?.chunkDelayMs ?? 0;
  let toolIndex = 0;
  for (const action of actions) {
    signal.throwIfAborted();
    if ("delayMs" in action) {
      await sleep(action.delayMs, undefined, { signal });
    } else if ("fail" in action) {
      throw new FoyaError("provider_error", action.fail);
    } else if ("text" in action) {
      for (const piece of split(action.text, action.chunks ?? 1)) {
        yield { type: "text-delta", text: piece };
        if (delay) await sleep(delay, undefined, { signal });
      }
    } else {
      const index = toolIndex++;
      yield { type: "tool-call-start", index, id: action.id ?? `call_${stepInTurn}_${index}`, name: action.tool };
      const raw = action.argsRaw ?? JSON.stringify(action.args ?? {});
      for (const piece of split(raw, action.chunks ?? 1)) {
        if (delay) await sleep(delay, undefined, { signal });
        yield { type: "tool-call-delta", index, argumentsDelta: piece };
      }
    }
  }
  yield { type: "finish", reason: toolIndex > 0 ? "tool_calls" : "stop", usage: { inputTokens: 0, outputTokens: 0 } };
}

function parseScript(text: string): z.infer<typeof scriptSchema> | null {
  if (!text.trimStart().startsWith("{")) return null;
  try {
    const parsed = scriptSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const demoPath = "notes/hello.md";

function demoStep(stepInTurn: number, history: RequestMessage[]): Action[] {
  const lastUser = [...history].reverse().find((m) => m.role === "user");
  const input = lastUser?.role === "user" ? lastUser.text : "";
  if (stepInTurn === 0) {
    return [
      { text: "I'll write a note and read it back." },
      { tool: "write", args: { path: demoPath, content: `# Hello from Foya\n\n${input}\n` } },
    ];
  }
  if (stepInTurn === 1) return [{ tool: "read", args: { path: demoPath } }];
  const lastTool = [...history].reverse().find((m) => m.role === "tool");
  const lines =
    lastTool?.role === "tool"
      ? lastTool.content
          .map((p) => (p.type === "text" ? p.text : ""))
          .join("")
          .split("\n").length
      : 0;
  return [{ text: `Done: I wrote ${demoPath} and read it back (${lines} lines).` }];
}

function split(text: string, parts: number): string[] {
  if (parts <= 1 || text.length <= 1) return [text];
  const chars = Array.from(text);
  const size = Math.ceil(chars.length / parts);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(""));
  return pieces;
}

function findLastIndex<T>(items: T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i] as T)) return i;
  return -1;
}
