import { FoyaApiError } from "@foya/client";
import { exitCodes } from "../exit-codes.js";
import { pointText } from "../point-text.js";
import type { Command } from "./command.js";
import { argument } from "./option-values.js";

export const sessionShowCommand: Command = {
  name: "session show",
  summary: "Show a session: project, approval mode, active run, latest event",
  arguments: [{ name: "SESSION" }],
  options: {},
  async run(input) {
    const client = await input.client();
    const found = await client.api.GET("/v1/sessions/{id}", { params: { path: { id: argument(input, 0) } } });
    if (!found.data) throw FoyaApiError.fromBody(found.response, found.error);
    const session = found.data;
    if (input.output.json) {
      input.output.document(session);
      return exitCodes.ok;
    }
    const { style } = input.output;
    input.output.line(style.bold(session.id));
    const rows: Array<[string, string]> = [
      ["project", session.projectId],
      ["approval mode", session.approvalMode],
      ["run mode", session.runMode],
      ["provider", session.model ? `${session.providerProfile} (${session.model})` : session.providerProfile],
      ["active run", session.activeRunId ?? "none"],
      ["last event", String(session.lastEventSeq)],
    ];
    if (session.forkedFrom) rows.push(["forked from", `${session.forkedFrom.sessionId} at ${pointText(session.forkedFrom.at)}`]);
    for (const [label, value] of rows) input.output.line(`  ${style.dim(label.padEnd(14))}${value}`);
    return exitCodes.ok;
  },
};
