import type { ShellWord } from "../shell-syntax.js";

/**
 * Programs known to leave every existing file as it is (SPEC S11, X7). A background command
 * works on the workspace itself, where no layer records what it changes, so in Auto it runs
 * without asking only when each of its programs is one of these (and its redirections only
 * append). Anything not listed may change files: interpreters, build tools and servers
 * (`python`, `node`, `npm run`, `make`), in-place editors (`sed -i`, `perl -pi`), copiers and
 * movers. Making a file or a folder (`touch`, `mkdir`) loses nothing, so it is listed.
 */
const keepers: ReadonlySet<string> = new Set([
  // waiting, printing, asking the system
  ...[":", "true", "false", "echo", "printf", "yes", "seq", "sleep", "wait", "date", "pwd", "whoami", "id", "hostname", "uname"],
  ...["printenv", "tty", "nproc", "uptime", "free", "ps", "ping", "type", "which", "test", "[", "[[", "read"],
  // shell state and flow
  ...["cd", "pushd", "popd", "dirs", "export", "declare", "typeset", "local", "readonly", "set", "unset", "shift", "alias", "trap"],
  ...["exit", "return", "break", "continue", "jobs", "umask", "getopts", "let", "shopt"],
  // reading files
  ...["cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "wc", "ls", "stat", "file", "du", "df", "tree", "realpath"],
  ...["readlink", "basename", "dirname", "diff", "cmp", "comm", "cut", "tr", "nl", "tac", "rev", "fold", "column", "od"],
  ...["hexdump", "strings", "jq", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum"],
  // making what was not there
  ...["touch", "mkdir"],
]);

/** find's actions that write or run something. */
const findActions: ReadonlySet<string> = new Set([
  "-delete",
  "-exec",
  "-execdir",
  "-ok",
  "-okdir",
  "-fprint",
  "-fprint0",
  "-fprintf",
  "-fls",
]);

/** git sub-commands that only read (an `--output` file aside). */
const gitReads: ReadonlySet<string> = new Set(["status", "log", "diff", "show", "rev-parse", "describe", "ls-files", "ls-tree", "blame"]);

const operands = (args: readonly ShellWord[]) => args.filter((word) => !word.text.startsWith("-"));

/** Wrappers' options that name a file they write (`time -o FILE cmd`); the rest of a wrapper is its command's. */
const wrapperOutputs: ReadonlyMap<string, readonly string[]> = new Map([
  ["time", ["-o", "--output"]],
  ["strace", ["-o"]],
  ["ltrace", ["-o"]],
  ["xvfb-run", ["-e", "--error-file", "-f", "--auth-file"]],
]);

/** Why a wrapper's own options may change a file (`options`: its words before the command), or null. */
export function wrapperFileChangeReason(program: string, options: readonly ShellWord[]): string | null {
  const outputs = wrapperOutputs.get(program);
  const output =
    outputs &&
    options.find((word) =>
      outputs.some((name) => word.text === name || word.text.startsWith(`${name}=`) || (name.length === 2 && word.text.startsWith(name))),
    );
  return output ? `${program} ${output.text} writes the file it names` : null;
}

/**
 * Why `program` with these words may change an existing file, or null when it is known not
 * to. Wrappers are not judged here: the command they run is a sub-command of its own.
 */
export function fileChangeReason(program: string, args: readonly ShellWord[]): string | null {
  if (keepers.has(program)) return null;
  const mayChange = `${program} is not known to leave the files it may touch as they are`;
  switch (program) {
    case "sort":
      return args.some((word) => /^(?:-o|--output)/.test(word.text) || /^-[^-]*o/.test(word.text))
        ? "sort -o writes its output file"
        : null;
    case "tee":
      return operands(args).length > 0 && !args.some((word) => word.text === "-a" || word.text === "--append")
        ? "tee empties the files it names before writing them"
        : null;
    case "find": {
      const action = args.find((word) => findActions.has(word.text));
      return action ? `find ${action.text} changes or runs something on what it finds` : null;
    }
    case "uniq":
    case "xxd":
      return operands(args).length > 1 || args.some((word) => word.text === "-r") ? `${program} writes the output file it names` : null;
    case "git": {
      const subcommand = args.find((word) => !word.text.startsWith("-"));
      if (!subcommand || !gitReads.has(subcommand.text)) return `git ${subcommand?.text ?? ""} may change the working tree`.trimEnd();
      return args.some((word) => word.text.startsWith("--output")) ? `git ${subcommand.text} --output writes a file` : null;
    }
    default:
      return mayChange;
  }
}
