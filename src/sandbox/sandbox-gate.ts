/**
 * The sandbox's gate, as bwrap runs it (see `sandbox-start.ts` for the worker's
 * side): a fixed prelude that reports on `readyFd` once bwrap has set the
 * sandbox up, waits for the go on `goFd`, closes both and replaces itself with
 * `bash -c command` (named `bash`, as an ungated command is). Without the go
 * (the worker stopped it, or died) it exits and the command never runs.
 */
export const gateGo = "go";

export function gatedCommand(command: string, fds: { readyFd: number; goFd: number }): string[] {
  const prelude =
    `printf r >&${fds.readyFd} && exec ${fds.readyFd}>&- && IFS= read -r go <&${fds.goFd} && [ "$go" = ${gateGo} ] && ` +
    `exec ${fds.goFd}<&- && exec -a bash "$BASH" -c "$1"; exit 125`;
  return ["bash", "-c", prelude, "foya-gate", command];
}
