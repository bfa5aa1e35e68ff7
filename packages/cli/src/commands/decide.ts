import type { Approval } from "@foya/client";
import { UsageError } from "../cli-errors.js";
import { exitCodes } from "../exit-codes.js";
import type { Command, CommandInput } from "./command.js";
import { argument, stringOption } from "./option-values.js";

export const approveCommand: Command = {
  name: "approve",
  summary: "Approve a pending tool call, optionally with edited arguments",
  details: ["--arguments runs the call with these arguments instead of the model's; the service validates and judges them again."],
  arguments: [{ name: "APPROVAL" }],
  options: {
    reason: { type: "string", valueName: "TEXT", description: "why, recorded with the decision" },
    arguments: { type: "string", valueName: "JSON", description: "edited arguments, a JSON object" },
  },
  async run(input) {
    const editedArguments = parseArguments(stringOption(input, "arguments"));
    const reason = stringOption(input, "reason");
    const client = await input.client();
    const approval = await client.approvals.approve(argument(input, 0), {
      ...(reason !== undefined ? { reason } : {}),
      ...(editedArguments ? { editedArguments } : {}),
    });
    return report(input, approval);
  },
};

export const denyCommand: Command = {
  name: "deny",
  summary: "Deny a pending tool call; the model is told, with your reason",
  arguments: [{ name: "APPROVAL" }],
  options: {
    reason: { type: "string", valueName: "TEXT", description: "why, recorded and given to the model" },
  },
  async run(input) {
    const reason = stringOption(input, "reason");
    const client = await input.client();
    const approval = await client.approvals.deny(argument(input, 0), reason !== undefined ? { reason } : {});
    return report(input, approval);
  },
};

function parseArguments(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--arguments is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new UsageError("--arguments must be a JSON object");
  return parsed as Record<string, unknown>;
}

function report(input: CommandInput, approval: Approval): number {
  const { output } = input;
  if (output.json) output.document(approval);
  else
    output.line(
      `${approval.status === "approved" ? output.style.green("approved") : output.style.red(approval.status)} ${approval.id} (${approval.call.tool})`,
    );
  return exitCodes.ok;
}
