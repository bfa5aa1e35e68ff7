import type { BranchPoint, RewindPoint } from "@foya/client";
import { UsageError } from "../cli-errors.js";
import type { CommandInput, OptionSpec } from "./command.js";
import { countOption, stringOption } from "./option-values.js";

/** The options that name a point of a session's history, shared by `fork` and `rewind`. */
export const pointOptions: Record<string, OptionSpec> = {
  run: { type: "string", valueName: "RUN", description: "after this run (with --step: after that step of it)" },
  step: { type: "string", valueName: "N", description: "after step N of --run, or of the session's latest run" },
  message: { type: "string", valueName: "MESSAGE", description: "a message: a user message goes back to just before its run" },
};

/** `fork`'s point: --run [--step], --step, or --message, exactly one way. */
export function branchPointOf(input: CommandInput): BranchPoint {
  const runId = stringOption(input, "run");
  const stepIndex = countOption(input, "step");
  const messageId = stringOption(input, "message");
  if (messageId !== undefined) {
    if (runId !== undefined || stepIndex !== undefined) throw new UsageError("--message goes alone, without --run or --step");
    return { messageId };
  }
  if (runId !== undefined) return stepIndex === undefined ? { runId } : { runId, stepIndex };
  if (stepIndex !== undefined) return { stepIndex };
  throw new UsageError("say where: --run RUN [--step N], --step N or --message MESSAGE");
}

/** `rewind`'s point: a fork's, or --branch alone (back to the tip of a branch set aside). */
export function rewindPointOf(input: CommandInput): RewindPoint {
  const branchId = stringOption(input, "branch");
  if (branchId === undefined) return branchPointOf(input);
  if (["run", "step", "message"].some((name) => input.options[name] !== undefined))
    throw new UsageError("--branch goes alone, without --run, --step or --message");
  return { branchId };
}
