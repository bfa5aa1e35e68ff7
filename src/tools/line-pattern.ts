import { RE2JS } from "re2js";

/**
 * A model-written regular expression, run in time linear in the input (RE2 semantics, pure
 * JS): a pattern like `(a+)+$` cannot stall the worker's event loop, and with it the lease
 * renewals of every job the worker holds. RE2 has no backreferences and no lookaround; such
 * a pattern is refused with a message saying so.
 */
export function compileLinePattern(
  pattern: string,
  ignoreCase: boolean,
): { ok: true; test(line: string): boolean } | { ok: false; message: string } {
  try {
    const compiled = RE2JS.compile(pattern, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
    return { ok: true, test: (line) => compiled.test(line) };
  } catch (error) {
    return {
      ok: false,
      message: `${(error as Error).message}. Patterns use RE2 syntax (like JavaScript's, without backreferences or lookaround).`,
    };
  }
}
