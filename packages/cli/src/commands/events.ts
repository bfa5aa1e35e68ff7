import type { FoyaEvent } from "@foya/client";
import { describeEvent } from "../describe-event.js";
import { exitCodes } from "../exit-codes.js";
import type { Output } from "../output.js";
import type { Command } from "./command.js";
import { argument, booleanOption, countOption } from "./option-values.js";

/** The API's largest page. */
const pageSize = 1000;

export const eventsCommand: Command = {
  name: "events",
  summary: "Print a session's event log; --follow keeps tailing it live",
  details: [
    "One line per event: sequence number, time, type, details. With --json, one event per line (JSON lines).",
    "--follow reconnects by itself and resumes where it was, without gaps or repeats; Ctrl-C stops it.",
  ],
  arguments: [{ name: "SESSION" }],
  options: {
    follow: { type: "boolean", short: "f", description: "keep printing new events as they happen" },
    after: { type: "string", valueName: "SEQ", description: "only events after this sequence number (0)" },
  },
  async run(input) {
    const sessionId = argument(input, 0);
    const after = countOption(input, "after") ?? 0;
    const client = await input.client();
    const print = printer(input.output);

    if (booleanOption(input, "follow")) {
      for await (const event of client.events.stream(sessionId, { after, signal: input.context.signal })) print(event);
      return exitCodes.ok;
    }
    // The stored log, page after page, until a page is not full.
    for (let next = after; ; ) {
      const page = await client.events.list(sessionId, { after: next, limit: pageSize });
      for (const event of page.events) print(event);
      if (page.events.length < pageSize || page.next <= next) return exitCodes.ok;
      next = page.next;
    }
  },
};

function printer(output: Output): (event: FoyaEvent) => void {
  if (output.json) return (event) => output.jsonLine(event);
  const { style } = output;
  return (event) => {
    const time = event.at.slice(11, 19);
    output.line(
      `${style.dim(String(event.seq).padStart(5))} ${style.dim(time)} ${style.cyan(event.type.padEnd(17))} ${describeEvent(event)}`,
    );
  };
}
