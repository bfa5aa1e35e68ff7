import type { CliContext, OutputStream } from "./cli-context.js";
import { colorsEnabled, createTerminalStyle, type TerminalStyle } from "./terminal-style.js";

/**
 * How a command writes. With `--json`, stdout carries only JSON: one document, or one event
 * per line for streams; people's text goes to stdout otherwise, and errors always to stderr.
 */
export interface Output {
  readonly json: boolean;
  /** Colours for stdout (off with --json, off a terminal, off with NO_COLOR). */
  readonly style: TerminalStyle;
  /** stdout is a terminal, and not JSON: transient progress lines are welcome. */
  readonly live: boolean;
  /** Characters per line of the terminal, when known. */
  readonly columns: number | undefined;
  /** Raw text to stdout, no newline added. */
  write(text: string): void;
  line(text?: string): void;
  /** One JSON document (the whole answer of a command). */
  document(value: unknown): void;
  /** One JSON value on a line of its own (one item of a stream). */
  jsonLine(value: unknown): void;
  /** A line on stderr: notices and errors, never data. */
  notice(text: string): void;
}

export function createOutput(context: CliContext, json: boolean): Output {
  const { stdout, stderr } = context;
  const style = createTerminalStyle(!json && colorsEnabled(stdout, context.env));
  return {
    json,
    style,
    live: !json && stdout.isTTY === true,
    columns: columnsOf(stdout),
    write: (text) => void stdout.write(text),
    line: (text = "") => void stdout.write(`${text}\n`),
    document: (value) => void stdout.write(`${JSON.stringify(value, null, 2)}\n`),
    jsonLine: (value) => void stdout.write(`${JSON.stringify(value)}\n`),
    notice: (text) => void stderr.write(`${text}\n`),
  };
}

function columnsOf(stream: OutputStream): number | undefined {
  const columns = (stream as { columns?: unknown }).columns;
  return typeof columns === "number" && columns > 0 ? columns : undefined;
}
