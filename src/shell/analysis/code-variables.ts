/** Their value is a command line something runs later (bash, git, pagers): judged as that command line. */
export const commandVariables: ReadonlySet<string> = new Set([
  "PROMPT_COMMAND",
  "PAGER",
  "MANPAGER",
  "EDITOR",
  "VISUAL",
  "SUDO_ASKPASS",
  "SSH_ASKPASS",
  "GIT_PAGER",
  "GIT_EDITOR",
  "GIT_SEQUENCE_EDITOR",
  "GIT_SSH_COMMAND",
  "GIT_SSH",
  "GIT_EXTERNAL_DIFF",
  "GIT_ASKPASS",
  "GIT_PROXY_COMMAND",
]);

/** Make bash, git or every program load code the gateway cannot read; the value says what. */
export const codeVariables: ReadonlyMap<string, string> = new Map([
  ...["BASH_ENV", "ENV"].map((name) => [name, "makes the shell run the file it names first"] as const),
  ...["LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"].map((name) => [name, "loads libraries it names into every program"] as const),
  ...["SHELLOPTS", "BASHOPTS"].map((name) => [name, "changes how every bash started from here runs"] as const),
  ...["LESSOPEN", "LESSCLOSE"].map((name) => [name, "makes less run a command on each file"] as const),
  ["GIT_EXEC_PATH", "makes git run its commands from another folder"],
  ["GIT_TEMPLATE_DIR", "gives new repositories hooks from another folder"],
]);
/** Name prefixes of such variables: bash's exported functions, git's configuration from the environment. */
export const codeVariablePrefixes: ReadonlyArray<readonly [string, string]> = [
  ["BASH_FUNC_", "defines a function that bash runs in place of a command"],
  ["GIT_CONFIG", "gives git configuration, which can make it run commands"],
];
