/**
 * Media types of artifacts (SPEC I1). Images are recognised by their bytes,
 * never by a file name or a tool's claim: a model provider rejects an image
 * whose declared type does not match its content, and a browser must not be
 * led to render something else than what is stored.
 */

/** The image formats models take (and `read` returns as images). */
export type ImageMediaType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

const imageMediaTypes: readonly ImageMediaType[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

export function isImageMediaType(mediaType: string): mediaType is ImageMediaType {
  return (imageMediaTypes as readonly string[]).includes(mediaType);
}

/** The image format of the bytes by their magic numbers, or undefined when they are not one of `imageMediaTypes`. */
export function sniffImageMediaType(bytes: Uint8Array): ImageMediaType | undefined {
  const starts = (signature: readonly number[], at = 0) =>
    bytes.length >= at + signature.length && signature.every((byte, i) => bytes[at + i] === byte);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (starts([0x47, 0x49, 0x46, 0x38, 0x37, 0x61]) || starts([0x47, 0x49, 0x46, 0x38, 0x39, 0x61])) return "image/gif";
  // RIFF....WEBP
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  return undefined;
}

/** `type/subtype` without parameters, as RFC 6838 restricts names; lower case so equal types compare equal. */
const mediaTypePattern = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,62}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}$/;

/** A tool's declared media type, normalised, or undefined when it is not a plain media type. */
export function normalizeMediaType(mediaType: string): string | undefined {
  const normalized = mediaType.trim().toLowerCase();
  return mediaTypePattern.test(normalized) ? normalized : undefined;
}
