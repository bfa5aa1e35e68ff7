import type { FoyaEvent, Run } from "@foya/client";
import { UsageError } from "../cli-errors.js";
import { exitCodes } from "../exit-codes.js";
import { RunView } from "../run-view.js";
import type { Command } from "./command.js";
import { argument, booleanOption, choiceOption, stringOption } from "./option-values.js";

export const runCommand: Command = {
  name: "run",
  summary: "Start a turn with your input; --follow streams it to its end",
  details: [
    "Without --session, the session `foya session new` made last.",
    "With --follow: the model's text as it streams and each tool call as it starts and ends;",
    "exits 3 if the run ends failed, cancelled or interrupted. With --json, one event per line.",
  ],
  arguments: [{ name: "INPUT" }],
  options: {
    session: { type: "string", valueName: "ID", description: "the session to run in" },
    follow: { type: "boolean", short: "f", description: "stream the run's events until it ends" },
    "if-active": { type: "string", valueName: "WHAT", description: "when a run is active: reject (default), enqueue or interrupt" },
  },
  async run(input) {
    const text = argument(input, 0);
    const ifActive = choiceOption(input, "if-active", ["reject", "enqueue", "interrupt"] as const);
    const sessionId = stringOption(input, "session") ?? (await input.config.read()).sessionId;
    if (!sessionId) throw new UsageError("no session: pass --session ID, or create one with `foya session new`");
    const client = await input.client();
    const { output } = input;
    const startOptions = ifActive ? { ifActive } : {};

    if (!booleanOption(input, "follow")) {
      const run = await client.runs.start(sessionId, text, startOptions);
      if (output.json) output.document(run);
      else output.line(`${output.style.bold(run.id)} ${run.status} ${output.style.dim(`(follow: foya events ${sessionId} --follow)`)}`);
      return exitCodes.ok;
    }

    const { run, events } = await client.runs.stream(sessionId, text, { ...startOptions, signal: input.context.signal });
    if (!output.json) output.notice(output.style.dim(`run ${run.id} in session ${sessionId}`));
    const view = new RunView(output);
    let ended: FoyaEvent | undefined;
    for await (const event of events) {
      if (output.json) output.jsonLine(event);
      else view.show(event);
      if (event.type === "run_end") ended = event;
    }
    const status: Run["status"] = ended?.type === "run_end" ? ended.data.status : (await client.runs.get(run.id)).status;
    return status === "completed" ? exitCodes.ok : exitCodes.runNotCompleted;
  },
};
