import type { ResultPart } from "../core/history.js";

/** Characters of text a call row keeps; the tool message in canonical history keeps the whole result. */
const previewChars = 4096;

/**
 * The bounded copy of a result that `tool_calls.result` keeps for state queries
 * and operators. The whole result is written once, as the tool message (SPEC
 * O2: history keeps all of it); storing it twice would double the bytes written
 * per byte of tool output.
 */
export function resultPreview(content: readonly ResultPart[]): ResultPart[] {
  let budget = previewChars;
  return content.map((part) => {
    if (part.type !== "text") return part;
    if (part.text.length <= budget) {
      budget -= part.text.length;
      return part;
    }
    // A cut inside a surrogate pair would leave half a character, which Postgres refuses.
    const kept = part.text.slice(0, /[\uD800-\uDBFF]/.test(part.text[budget - 1] ?? "") ? budget - 1 : budget);
    budget = 0;
    return { type: "text", text: `${kept}[... ${part.text.length - kept.length} more characters in the session's messages]` };
  });
}
