import { approvalsCommand } from "./approvals.js";
import { branchesCommand, forkCommand, rewindCommand } from "./branches.js";
import type { Command } from "./command.js";
import { approveCommand, denyCommand } from "./decide.js";
import { eventsCommand } from "./events.js";
import { changesCommand, diffCommand, revertCommand } from "./file-changes.js";
import { loginCommand } from "./login.js";
import { runCommand } from "./run.js";
import { sessionNewCommand } from "./session-new.js";
import { sessionShowCommand } from "./session-show.js";

/** Every command, in the order `foya --help` lists them. */
export const commands: readonly Command[] = [
  loginCommand,
  sessionNewCommand,
  sessionShowCommand,
  runCommand,
  approvalsCommand,
  approveCommand,
  denyCommand,
  changesCommand,
  diffCommand,
  revertCommand,
  eventsCommand,
  forkCommand,
  rewindCommand,
  branchesCommand,
];
