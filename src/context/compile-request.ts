import type { HistoryMessage, ResultPart } from "../core/history.js";
import type { RequestMessage, RequestResultPart } from "../providers/provider.js";

/**
 * The context compiler (SPEC O2, I3): the one place that turns canonical
 * history into the messages of a provider request. Canonical history is never
 * changed by it; the same history compiles to the same request, so prompt
 * caches keep working.
 */
export function compileMessages(history: readonly HistoryMessage[]): RequestMessage[] {
  return history.map((message): RequestMessage => {
    if (message.role !== "tool") return message;
    return { role: "tool", callId: message.callId, name: message.name, isError: message.isError, content: message.content.map(compilePart) };
  });
}

function compilePart(part: ResultPart): RequestResultPart {
  switch (part.type) {
    case "text":
      return part;
    case "image":
      return { type: "text", text: `[image omitted: artifact ${part.artifactId} (${part.mediaType}); this model does not take images]` };
    case "artifact": {
      const name = part.name ? ` "${part.name}"` : "";
      return { type: "text", text: `[artifact omitted: artifact ${part.artifactId}${name} (${part.mediaType})]` };
    }
  }
}
