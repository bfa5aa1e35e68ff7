import type { Branch, NotUndoneCall } from "@foya/client";
import { exitCodes } from "../exit-codes.js";
import type { Output } from "../output.js";
import { pointText } from "../point-text.js";
import type { Command } from "./command.js";
import { branchPointOf, pointOptions, rewindPointOf } from "./branch-point-options.js";
import { argument } from "./option-values.js";

export const forkCommand: Command = {
  name: "fork",
  summary: "Fork a session at a point of its history into a new session, with the workspace as it stood there",
  details: [
    "No tool runs again. The new session is in a new project and becomes the default of `foya run`.",
    "Calls after the point whose effects no checkpoint takes back (network, MCP, background commands) are listed as not undone.",
  ],
  arguments: [{ name: "SESSION" }],
  options: pointOptions,
  async run(input) {
    const client = await input.client();
    const sessionId = argument(input, 0);
    const forked = await client.sessions.fork(sessionId, branchPointOf(input));
    await input.config.update({ sessionId: forked.session.id });
    const { output } = input;
    if (output.json) {
      output.document(forked);
      return exitCodes.ok;
    }
    output.line(`${output.style.bold(forked.session.id)} (project ${forked.projectId}), forked from ${sessionId}`);
    printNotUndone(output, forked.notUndone);
    return exitCodes.ok;
  },
};

export const rewindCommand: Command = {
  name: "rewind",
  summary: "Take an idle session back to a point of its history; what followed is kept as a branch",
  details: [
    "The workspace returns to the point before the next tool batch. A user message (--message) goes back to just",
    "before its run: start a new run after it to edit and resend. --branch brings back what an earlier rewind set aside.",
    "A session with an active run, or a point nothing follows, is refused (exit 1).",
  ],
  arguments: [{ name: "SESSION" }],
  options: {
    ...pointOptions,
    branch: { type: "string", valueName: "BRANCH", description: "back to the tip of this branch (see `foya branches`)" },
  },
  async run(input) {
    const client = await input.client();
    const sessionId = argument(input, 0);
    const rewound = await client.sessions.rewind(sessionId, rewindPointOf(input));
    const { output } = input;
    if (output.json) {
      output.document(rewound);
      return exitCodes.ok;
    }
    const { branch } = rewound;
    if (rewound.restoredBranchId) output.line(`brought back branch ${rewound.restoredBranchId}`);
    output.line(
      `rewound ${sessionId} to ${pointText(branch.at)}; what followed is branch ${output.style.bold(branch.id)} (${setAside(branch)})`,
    );
    printNotUndone(output, rewound.notUndone);
    return exitCodes.ok;
  },
};

export const branchesCommand: Command = {
  name: "branches",
  summary: "List what rewinds of a session set aside, newest first",
  details: ["`foya rewind SESSION --branch BRANCH` brings one back."],
  arguments: [{ name: "SESSION" }],
  options: {},
  async run(input) {
    const client = await input.client();
    const branches = await client.sessions.branches(argument(input, 0));
    const { output } = input;
    if (output.json) output.document(branches);
    else if (branches.length === 0) output.line(output.style.dim("no branches"));
    else
      for (const branch of branches) {
        const restored = branch.restoredAt ? output.style.dim("  (brought back)") : "";
        output.line(
          `${output.style.bold(branch.id)}  after ${pointText(branch.at)}: ${setAside(branch)}${restored}  ${output.style.dim(branch.createdAt)}`,
        );
      }
    return exitCodes.ok;
  },
};

function setAside(branch: Branch): string {
  const runs = branch.runIds.length;
  return `${runs} run${runs === 1 ? "" : "s"}, ${branch.messageCount} message${branch.messageCount === 1 ? "" : "s"}`;
}

function printNotUndone(output: Output, calls: NotUndoneCall[]): void {
  if (calls.length === 0) {
    output.line(output.style.dim("not undone: none"));
    return;
  }
  output.line(output.style.yellow(`not undone: ${calls.length} call${calls.length === 1 ? "" : "s"} with effects outside the workspace`));
  for (const call of calls) {
    const running = call.stillRunning ? " (still running)" : "";
    output.line(`  ${call.name} (${call.reason})${running}  run ${call.runId} step ${call.stepIndex}  ${output.style.dim(call.callId)}`);
  }
}
