import type { Approval, ApprovalListQuery } from "@foya/client";
import { exitCodes } from "../exit-codes.js";
import { oneLine } from "../one-line.js";
import type { Command } from "./command.js";
import { choiceOption, stringOption } from "./option-values.js";

const statuses = ["pending", "approved", "denied", "expired", "cancelled", "all"] as const;

export const approvalsCommand: Command = {
  name: "approvals",
  summary: "List tool calls waiting for a decision (newest first)",
  arguments: [],
  options: {
    session: { type: "string", valueName: "ID", description: "only this session's" },
    run: { type: "string", valueName: "ID", description: "only this run's" },
    status: { type: "string", valueName: "STATUS", description: "pending (default), approved, denied, expired, cancelled or all" },
  },
  async run(input) {
    const client = await input.client();
    const status = choiceOption(input, "status", statuses) ?? "pending";
    const sessionId = stringOption(input, "session");
    const runId = stringOption(input, "run");
    const query: ApprovalListQuery = {
      ...(status !== "all" ? { status } : {}),
      ...(sessionId ? { sessionId } : {}),
      ...(runId ? { runId } : {}),
    };
    const approvals = await client.approvals.list(query);
    const { output } = input;
    if (output.json) {
      output.document(approvals);
      return exitCodes.ok;
    }
    if (approvals.length === 0) output.line(output.style.dim(status === "all" ? "no approvals" : `no ${status} approvals`));
    for (const approval of approvals) printApproval(input.output, approval);
    return exitCodes.ok;
  },
};

function printApproval(output: Parameters<Command["run"]>[0]["output"], approval: Approval): void {
  const { style } = output;
  output.line(
    `${style.bold(approval.id)}  ${style.cyan(approval.call.tool)}  ${approval.status}  ${style.dim(`session ${approval.sessionId}, run ${approval.runId}`)}`,
  );
  output.line(`  ${style.dim("why")}        ${approval.requestReason}`);
  output.line(`  ${style.dim("arguments")}  ${oneLine(approval.call.arguments, 160)}`);
  if (approval.status === "pending") output.line(`  ${style.dim("expires")}    ${approval.expiresAt}`);
  else if (approval.reason) output.line(`  ${style.dim("reason")}     ${approval.reason}`);
}
