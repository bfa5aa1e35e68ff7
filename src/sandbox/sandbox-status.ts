import { constants } from "node:os";

/**
 * What bwrap wrote on its `--json-status-fd`: one JSON document when the
 * sandboxed child started (`child-pid`), another when it ended (`exit-code`).
 * No `child-pid` means bwrap failed while setting the sandbox up; no
 * `exit-code` after a start means the command never ran (exec failed) or
 * bwrap itself was killed. The fd is not passed into the sandbox, so the
 * command cannot forge these lines.
 */
export function readSandboxStatus(text: string): { started: boolean; exitCode: number | undefined } {
  const exit = /"exit-code"\s*:\s*(\d+)/.exec(text);
  return { started: /"child-pid"\s*:\s*\d+/.test(text), exitCode: exit ? Number(exit[1]) : undefined };
}

/** The host pid of the sandbox's init, from bwrap's first status document once it is complete; undefined until then. */
export function readSandboxStart(text: string): number | undefined {
  const first = /\{[^}]*\}/.exec(text);
  const pid = first ? /"child-pid"\s*:\s*(\d+)/.exec(first[0]) : null;
  return pid ? Number(pid[1]) : undefined;
}

const signalNames = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/**
 * bwrap's init reports a command killed by signal n as exit status 128 + n,
 * as a shell does; answers that signal's name, if it is one. (A command that
 * itself calls exit(137) cannot be told apart; such a status reads as SIGKILL.)
 */
export function signalOfExitStatus(exitCode: number): string | undefined {
  return exitCode > 128 ? signalNames.get(exitCode - 128) : undefined;
}
