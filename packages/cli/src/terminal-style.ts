import { styleText } from "node:util";
import type { CliContext, OutputStream } from "./cli-context.js";

type Format = Parameters<typeof styleText>[0];

/** Colours for one stream; each is the identity when colours are off. */
export interface TerminalStyle {
  readonly enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/** Colours only on a terminal, and never with NO_COLOR set (https://no-color.org) or TERM=dumb. */
export function colorsEnabled(stream: OutputStream, env: CliContext["env"]): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== "dumb";
}

export function createTerminalStyle(enabled: boolean): TerminalStyle {
  // Node 20's styleText colours whatever it is given: the terminal check is ours.
  const format = (style: Format) => (text: string) => (enabled ? styleText(style, text) : text);
  return {
    enabled,
    bold: format("bold"),
    dim: format("dim"),
    red: format("red"),
    green: format("green"),
    yellow: format("yellow"),
    cyan: format("cyan"),
  };
}
