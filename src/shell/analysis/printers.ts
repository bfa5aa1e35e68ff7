/** These print their arguments; the arguments are not paths they touch. */
export const printers: ReadonlySet<string> = new Set(["echo", "printf", "true", "false", ":"]);

/** Print nothing, so `: > f` only empties `f`. */
export const silentPrograms: ReadonlySet<string> = new Set([":", "true", "false"]);
