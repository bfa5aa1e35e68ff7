import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/**
 * Fields that hold secrets wherever they appear one level down in a log object (SPEC X8: no
 * secret is ever logged). Code never logs them on purpose; this catches an object logged whole.
 */
const redactedPaths = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "apiKey",
  "*.apiKey",
  "secret",
  "*.secret",
  "token",
  "*.token",
  "password",
  "*.password",
];

export function createLogger(level: string, bindings: Record<string, unknown> = {}, destination?: DestinationStream): Logger {
  const options = { level, base: { service: "foya", ...bindings }, redact: { paths: redactedPaths, censor: "[redacted]" } };
  return destination ? pino(options, destination) : pino(options);
}
