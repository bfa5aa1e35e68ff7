import { isFoyaApiError } from "@foya/client";
import type { CliContext } from "./cli-context.js";
import { exitCodes, type ExitCode } from "./exit-codes.js";
import { colorsEnabled, createTerminalStyle } from "./terminal-style.js";

interface Described {
  exitCode: ExitCode;
  code: string;
  message: string;
  status?: number;
}

/**
 * Every failure ends here: its message on stderr (a JSON document with --json) and the exit
 * code that says what kind it was. Codes are compared, not classes (STYLE: one error type per
 * package may exist twice in a process).
 */
export function reportError(error: unknown, context: CliContext, options: { json: boolean; command?: string }): ExitCode {
  const described = describe(error, context);
  if (options.json) {
    const { exitCode: _exitCode, ...body } = described;
    context.stderr.write(`${JSON.stringify({ error: body })}\n`);
  } else {
    const style = createTerminalStyle(colorsEnabled(context.stderr, context.env));
    context.stderr.write(`${style.red("foya:")} ${described.message}\n`);
    if (described.exitCode === exitCodes.usage)
      context.stderr.write(`See \`foya ${options.command ? `${options.command} ` : ""}--help\`.\n`);
  }
  return described.exitCode;
}

function describe(error: unknown, context: CliContext): Described {
  if (context.signal.aborted) return { exitCode: exitCodes.interrupted, code: "interrupted", message: "interrupted" };
  if (isFoyaApiError(error)) {
    const exitCode = error.status === 404 ? exitCodes.notFound : exitCodes.error;
    return { exitCode, code: error.code, status: error.status, message: `${error.message} (${error.code}, HTTP ${error.status})` };
  }
  const code = codeOf(error);
  if (code === "usage" || code?.startsWith("ERR_PARSE_ARGS_"))
    return { exitCode: exitCodes.usage, code: "usage", message: (error as Error).message };
  // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, ...) is its cause.
  if (error instanceof TypeError && error.message === "fetch failed") {
    const cause = (error as { cause?: unknown }).cause;
    return {
      exitCode: exitCodes.error,
      code: "unreachable",
      message: `cannot reach the API: ${cause instanceof Error ? cause.message : String(cause)}`,
    };
  }
  if (error instanceof Error) return { exitCode: exitCodes.error, code: code ?? "error", message: error.message };
  return { exitCode: exitCodes.error, code: "error", message: String(error) };
}

function codeOf(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}
