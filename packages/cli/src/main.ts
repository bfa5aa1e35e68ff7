#!/usr/bin/env node
import { runCli } from "./run-cli.js";

// The only reader of `process`: everything below gets what it needs through CliContext.
const controller = new AbortController();
process.once("SIGINT", () => {
  controller.abort(new Error("interrupted"));
  // A second Ctrl-C does not wait for anything.
  process.once("SIGINT", () => process.exit(130));
});

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
