/**
 * Where validated request data holds a string Postgres cannot store (SPEC S10): a NUL
 * character, or an unpaired UTF-16 surrogate (which JSON's `\ud800` escapes can produce).
 * Checked for every path parameter, query parameter and JSON body, object keys included,
 * so such input is refused with 400 instead of failing a query with 500. Iterative, so a
 * deeply nested body cannot exhaust the stack.
 */
export function findUnstorableString(value: unknown): string | undefined {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: "" }];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const { value: current, path } = item;
    if (typeof current === "string") {
      if (!isStorable(current)) return path;
    } else if (Array.isArray(current)) {
      for (const [index, element] of current.entries()) pending.push({ value: element, path: `${path}.${index}` });
    } else if (typeof current === "object" && current !== null) {
      for (const [key, element] of Object.entries(current)) {
        if (!isStorable(key)) return `${path}.(a key)`;
        pending.push({ value: element, path: `${path}.${key}` });
      }
    }
  }
  return undefined;
}

function isStorable(text: string): boolean {
  return text.isWellFormed() && !text.includes("\u0000");
}
