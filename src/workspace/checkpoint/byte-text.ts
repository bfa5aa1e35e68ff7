/**
 * Bytes as a string that round-trips exactly (SPEC W1): file names and symlink
 * targets on Linux are any bytes, not necessarily UTF-8, and a checkpoint must
 * rebuild them as they were while storing them as JSON and Postgres text.
 *
 * - Valid UTF-8 without NUL is kept as its text (`src/a.ts`, `café`), the
 *   common case, readable where it is stored.
 * - Anything else is `%bytes:` followed by the bytes percent-encoded: printable
 *   ASCII but `%` as itself, every other byte as `%XX` (upper-case hex), so
 *   `caf\xe9` is `%bytes:caf%E9`.
 * - A valid text that itself starts with `%bytes:` is escaped too, so the two
 *   forms never meet: every byte string has one text and every text one byte
 *   string.
 */
const marker = "%bytes:";
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function encodeByteText(bytes: Uint8Array): string {
  if (!bytes.includes(0)) {
    let text: string | null = null;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      // not UTF-8: escaped below
    }
    if (text !== null && !text.startsWith(marker)) return text;
  }
  let escaped = marker;
  for (const byte of bytes) {
    escaped +=
      byte > 0x20 && byte < 0x7f && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return escaped;
}

/** Whether a byte text is the escaped form (its bytes are not plain UTF-8 text). */
export function isEscapedText(text: string): boolean {
  return text.startsWith(marker);
}

/** The bytes a byte text stands for; null when it is not one `encodeByteText` makes. */
export function decodeByteText(text: string): Buffer | null {
  const decoded = text.startsWith(marker) ? unescapeBytes(text) : Buffer.from(text, "utf8");
  // Only the one spelling encodeByteText makes: `%bytes:abc` for plain `abc`, or a lone surrogate
  // (which UTF-8 cannot carry), would give one path two texts.
  return decoded !== null && encodeByteText(decoded) === text ? decoded : null;
}

function unescapeBytes(text: string): Buffer | null {
  const bytes: number[] = [];
  for (let index = marker.length; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x25) {
      const hex = text.slice(index + 1, index + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return null;
      bytes.push(Number.parseInt(hex, 16));
      index += 2;
    } else if (code > 0x20 && code < 0x7f) {
      bytes.push(code);
    } else {
      return null;
    }
  }
  return Buffer.from(bytes);
}
