import type { HistoryMessage, ResultPart } from "../core/history.js";
import type { HistoryEntry } from "../store/messages.js";
import { projectResult, referenceOf, resultText } from "./project-results.js";
import type { ArtifactReader } from "../store/artifacts.js";
import { isImageMediaType } from "../artifacts/media-types.js";
import type { RequestMessage, RequestResultPart } from "../providers/provider.js";
import type { ArtifactId } from "../ids.js";

/**
 * The context compiler (SPEC O2, I3): the one place that turns canonical
 * history into the messages of a provider request. Canonical history is never
 * changed by it; the same history compiles to the same request, so prompt
 * caches keep working.
 */

/** What compiling for one model needs to know besides the history. */
export interface CompileContext {
  /** Whether the profile's models take images (`capabilities.imageInput`). */
  imageInput: boolean;
  /** The session's artifact store; read only when images are sent. */
  artifacts: ArtifactReader;
  /**
   * At most this many images are sent, the most recent ones; older ones get a note.
   * Bounds the request size of a long session full of screenshots.
   */
  maxImages?: number;
  /** Tool results longer than this (characters of text) are projected to head and tail with a reference (O2). */
  resultLimit: number;
}

const defaultMaxImages = 20;

interface LoadedImages {
  /** Artifact ids the request may carry as images: the most recent ones. */
  chosen: ReadonlySet<string>;
  found: ReadonlyMap<string, { mediaType: string; bytes: Buffer }>;
}

export async function compileMessages(entries: readonly HistoryEntry[], context: CompileContext): Promise<RequestMessage[]> {
  const history = entries.map((entry) => entry.message);
  const images: LoadedImages = context.imageInput ? await loadImages(history, context) : { chosen: new Set(), found: new Map() };
  return entries.map(({ message, position }): RequestMessage => {
    if (message.role !== "tool") return message;
    const compiled = message.content.map((part) => compilePart(part, context.imageInput, images));
    const text = resultText(message.content);
    const content =
      text.length > context.resultLimit
        ? [
            { type: "text" as const, text: projectResult(text, referenceOf(position), message.name, context.resultLimit).text },
            ...compiled.filter((part) => part.type === "image"),
          ]
        : compiled;
    return { role: "tool", callId: message.callId, name: message.name, isError: message.isError, content };
  });
}

/** All images the request will carry, in one query: the most recent `maxImages` references of the history. */
async function loadImages(history: readonly HistoryMessage[], context: CompileContext): Promise<LoadedImages> {
  const referenced: ArtifactId[] = [];
  for (const message of history) {
    if (message.role !== "tool") continue;
    for (const part of message.content) if (part.type === "image") referenced.push(part.artifactId);
  }
  const recent = [...new Set(referenced.reverse())].slice(0, context.maxImages ?? defaultMaxImages);
  return { chosen: new Set(recent), found: await context.artifacts.load(recent) };
}

function compilePart(part: ResultPart, imageInput: boolean, images: LoadedImages): RequestResultPart {
  switch (part.type) {
    case "text":
      return part;
    case "image": {
      if (!imageInput) {
        return { type: "text", text: `[image omitted: artifact ${part.artifactId} (${part.mediaType}); this model does not take images]` };
      }
      const image = images.found.get(part.artifactId);
      // The stored type is trusted over the reference: it was checked against the bytes when stored.
      if (image && isImageMediaType(image.mediaType))
        return { type: "image", mediaType: image.mediaType, dataBase64: image.bytes.toString("base64") };
      const why = !images.chosen.has(part.artifactId)
        ? "only the most recent images are sent"
        : image
          ? `stored as ${image.mediaType}, not an image type models take`
          : "not in this session's artifact store";
      return { type: "text", text: `[image omitted: artifact ${part.artifactId} (${part.mediaType}); ${why}]` };
    }
    case "artifact": {
      const name = part.name ? ` "${part.name}"` : "";
      return { type: "text", text: `[artifact omitted: artifact ${part.artifactId}${name} (${part.mediaType})]` };
    }
  }
}
