import type { ResultPart } from "../core/history.js";
import { storableText } from "../core/storable-text.js";
import type { BinaryResultPart, StoredToolResult, ToolResult } from "../core/tool-contract.js";
import { maxArtifactBytes, type ArtifactScope } from "../store/artifacts.js";
import type { Store } from "../store/store.js";
import { normalizeMediaType, sniffImageMediaType } from "./media-types.js";

/** A tool answering more binary parts than this gets an is_error result: a result is read by a model, not a file dump. */
const maxBinaryPartsPerResult = 16;
const maxNameLength = 255;

/**
 * The one place where bytes in a tool result become artifact references
 * (SPEC I1, I2, T3): each image or binary part is stored in the session's
 * artifact store and replaced by its `image` / `artifact` part, so the tool
 * message, the `tool_end` event and everything after them hold references only.
 * A part that cannot be stored (too large, not a recognised image, no valid
 * media type) is replaced by a note and the result becomes is_error, so the
 * model learns why instead of the call failing.
 */
export async function storeResultArtifacts(
  store: Pick<Store, "artifacts">,
  scope: ArtifactScope,
  result: ToolResult,
): Promise<StoredToolResult> {
  const binaryCount = result.content.filter(isBinaryPart).length;
  if (binaryCount === 0) return result as StoredToolResult;
  const rejected: string[] = [];
  const content: ResultPart[] = [];
  for (const part of result.content) {
    if (!isBinaryPart(part)) {
      content.push(part);
      continue;
    }
    const checked =
      binaryCount > maxBinaryPartsPerResult
        ? { ok: false as const, reason: `more than ${maxBinaryPartsPerResult} binary parts in one result` }
        : check(part);
    if (!checked.ok) {
      rejected.push(checked.reason);
      content.push({ type: "text", text: `[${part.type === "image-data" ? "image" : "binary content"} not stored: ${checked.reason}]` });
      continue;
    }
    const stored = await store.artifacts.putArtifact(scope, { mediaType: checked.mediaType, data: checked.data });
    content.push(
      part.type === "image-data"
        ? { type: "image", artifactId: stored.id, mediaType: checked.mediaType }
        : {
            type: "artifact",
            artifactId: stored.id,
            mediaType: checked.mediaType,
            ...(checked.name !== undefined ? { name: checked.name } : {}),
          },
    );
  }
  if (rejected.length === 0) return { ...result, content };
  return { ...result, content, isError: true, errorCode: result.isError && result.errorCode ? result.errorCode : "artifact_rejected" };
}

function isBinaryPart(part: ToolResult["content"][number]): part is BinaryResultPart {
  return part.type === "image-data" || part.type === "binary";
}

type Checked = { ok: true; mediaType: string; data: Buffer; name?: string } | { ok: false; reason: string };

function check(part: BinaryResultPart): Checked {
  // Tools are plain JavaScript too; a part without real bytes is the tool's bug, told to the model, not a crash.
  if (!(part.data instanceof Uint8Array)) return { ok: false, reason: "the tool returned no bytes" };
  const data = Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data);
  if (data.length > maxArtifactBytes) return { ok: false, reason: `${data.length} bytes exceed the limit of ${maxArtifactBytes} bytes` };
  if (part.type === "image-data") {
    // The bytes decide the type: a provider refuses an image whose declared type does not match.
    const mediaType = sniffImageMediaType(data);
    if (!mediaType) return { ok: false, reason: `not a PNG, JPEG, GIF or WebP image (declared ${String(part.mediaType).slice(0, 80)})` };
    return { ok: true, mediaType, data };
  }
  const mediaType = typeof part.mediaType === "string" ? normalizeMediaType(part.mediaType) : undefined;
  if (!mediaType) return { ok: false, reason: `invalid media type ${JSON.stringify(String(part.mediaType).slice(0, 80))}` };
  const name = typeof part.name === "string" && part.name.length > 0 ? storableText(part.name).slice(0, maxNameLength) : undefined;
  return { ok: true, mediaType, data, ...(name !== undefined ? { name } : {}) };
}
