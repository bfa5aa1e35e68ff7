/** How to skip a wrapper's own options to reach the command it runs. */
export interface WrapperSpec {
  /** Options that take the next word as their value (`sudo -u root`, `timeout -s KILL`). */
  valueOptions: readonly string[];
  /** Positional words before the command (`timeout`'s duration, `chroot`'s directory). */
  positionals?: number;
  /** `NAME=value` words before the command (`env`). */
  assignments?: boolean;
  /** Options after which nothing runs (`command -v rm` only prints where rm is). */
  lookupOptions?: readonly string[];
  /** Options whose value is itself a command line (`env -S 'rm x'`). */
  scriptOptions?: readonly string[];
  /** Set when the wrapper is dangerous by itself. */
  dangerous?: string;
  /** Runs its words joined by spaces as one `sh -c` line (`watch 'rm x'`), so they are judged as that line. */
  shellJoined?: boolean;
  /** After the positionals, one of these takes the next word as a command line (`flock FILE -c '…'`). */
  commandOptions?: readonly string[];
}

export const asAnotherUser = "runs commands as another user";

export const wrappers: ReadonlyMap<string, WrapperSpec> = new Map<string, WrapperSpec>([
  ["env", { valueOptions: ["-u", "--unset", "-C", "--chdir"], assignments: true, scriptOptions: ["-S", "--split-string"] }],
  [
    "sudo",
    {
      valueOptions: [
        "-u",
        "-g",
        "-C",
        "-D",
        "-h",
        "-p",
        "-U",
        "-r",
        "-t",
        "-T",
        "--user",
        "--group",
        "--chdir",
        "--host",
        "--prompt",
        "--other-user",
        "--role",
        "--type",
        "--close-from",
        "--command-timeout",
      ],
      dangerous: asAnotherUser,
    },
  ],
  ["doas", { valueOptions: ["-u", "-C"], dangerous: asAnotherUser }],
  ["pkexec", { valueOptions: ["--user"], dangerous: asAnotherUser }],
  ["nohup", { valueOptions: [] }],
  ["time", { valueOptions: ["-f", "--format", "-o", "--output"] }],
  ["nice", { valueOptions: ["-n", "--adjustment"] }],
  ["ionice", { valueOptions: ["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"] }],
  ["timeout", { valueOptions: ["-s", "--signal", "-k", "--kill-after"], positionals: 1 }],
  ["stdbuf", { valueOptions: ["-i", "-o", "-e", "--input", "--output", "--error"] }],
  [
    "xargs",
    {
      valueOptions: [
        "-I",
        "-n",
        "-P",
        "-L",
        "-d",
        "-a",
        "-E",
        "-s",
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-lines",
        "--eof",
        "--max-chars",
        "--process-slot-var",
      ],
    },
  ],
  ["exec", { valueOptions: ["-a"] }],
  ["command", { valueOptions: [], lookupOptions: ["-v", "-V"] }],
  ["builtin", { valueOptions: [] }],
  ["busybox", { valueOptions: [] }],
  ["setsid", { valueOptions: [] }],
  ["watch", { valueOptions: ["-n", "--interval", "-q", "--equexit"], shellJoined: true }],
  ["unbuffer", { valueOptions: [] }],
  ["flock", { valueOptions: ["-w", "-E", "--timeout", "--conflict-exit-code"], positionals: 1, commandOptions: ["-c", "--command"] }],
  ["taskset", { valueOptions: [], positionals: 1 }],
  ["chroot", { valueOptions: ["--userspec", "--groups"], positionals: 1, dangerous: "runs a command in another root directory" }],
  // Tracers, namespaces and helpers that run their words, so `strace rm x` is rm
  ["strace", { valueOptions: ["-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X", "-U"] }],
  ["ltrace", { valueOptions: ["-e", "-o", "-p", "-s", "-u", "-a", "-A", "-D", "-F", "-l", "-n", "-w", "-x", "-L"] }],
  ["valgrind", { valueOptions: [] }],
  ["catchsegv", { valueOptions: [] }],
  ["unshare", { valueOptions: ["-S", "-G", "-R", "-w", "--setuid", "--setgid", "--root", "--wd"] }],
  ["fakeroot", { valueOptions: ["-l", "--lib", "--faked", "-s", "-i", "-b"] }],
  ["eatmydata", { valueOptions: [] }],
  ["chronic", { valueOptions: [] }],
  [
    "xvfb-run",
    {
      valueOptions: [
        "-n",
        "--server-num",
        "-s",
        "--server-args",
        "-f",
        "--auth-file",
        "-e",
        "--error-file",
        "-p",
        "--xauth-protocol",
        "-w",
        "--wait",
      ],
    },
  ],
  [
    "runuser",
    { valueOptions: ["-u", "-g", "-G", "--user", "--group", "--supp-group"], scriptOptions: ["-c", "--command"], dangerous: asAnotherUser },
  ],
  ["gosu", { valueOptions: [], positionals: 1, dangerous: asAnotherUser }],
]);
