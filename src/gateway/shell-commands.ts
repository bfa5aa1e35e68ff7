import type { ShellWord } from "./shell-syntax.js";

/**
 * What the gateway knows about programs run from a shell (SPEC S2, S11, F4):
 * which only wrap another command, which delete permanently, which reach the
 * network, which are dangerous, and which variables make the shell or git run
 * code later. Names are compared after `path.basename`, so `/bin/rm` is `rm`.
 * Unknown programs are ordinary: only their path arguments are judged.
 * `programEffects` reads the options of programs that hide deletes, discarded
 * work or other commands in them (git, tar, rsync, zip, truncate, …).
 */

/**
 * What a sub-command was found to do. The gateway denies `permanent_delete`
 * outside Full Access (F4) and asks for the rest: `destructive` loses data no
 * trash keeps (discarded git work, an emptied file), `unknown` runs or reads
 * something only known at run time (a variable, a script file), `unparsed`
 * could not be read.
 */
export type FindingKind = "permanent_delete" | "destructive" | "network" | "dangerous" | "outside" | "unknown" | "unparsed";

export interface ShellFinding {
  kind: FindingKind;
  /** Says why, naming the program or path. */
  reason: string;
}

export const deleteTool = "use the delete tool, which moves files to the trash";

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

const asAnotherUser = "runs commands as another user";

export const wrappers: ReadonlyMap<string, WrapperSpec> = new Map<string, WrapperSpec>([
  ["env", { valueOptions: ["-u", "--unset", "-C", "--chdir"], assignments: true, scriptOptions: ["-S", "--split-string"] }],
  ["sudo", { valueOptions: ["-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t", "-T", "--user", "--group", "--chdir", "--host", "--prompt", "--other-user", "--role", "--type", "--close-from", "--command-timeout"], dangerous: asAnotherUser }],
  ["doas", { valueOptions: ["-u", "-C"], dangerous: asAnotherUser }],
  ["pkexec", { valueOptions: ["--user"], dangerous: asAnotherUser }],
  ["nohup", { valueOptions: [] }],
  ["time", { valueOptions: ["-f", "--format", "-o", "--output"] }],
  ["nice", { valueOptions: ["-n", "--adjustment"] }],
  ["ionice", { valueOptions: ["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"] }],
  ["timeout", { valueOptions: ["-s", "--signal", "-k", "--kill-after"], positionals: 1 }],
  ["stdbuf", { valueOptions: ["-i", "-o", "-e", "--input", "--output", "--error"] }],
  ["xargs", { valueOptions: ["-I", "-n", "-P", "-L", "-d", "-a", "-E", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--eof", "--max-chars", "--process-slot-var"] }],
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
  ["xvfb-run", { valueOptions: ["-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e", "--error-file", "-p", "--xauth-protocol", "-w", "--wait"] }],
  ["runuser", { valueOptions: ["-u", "-g", "-G", "--user", "--group", "--supp-group"], scriptOptions: ["-c", "--command"], dangerous: asAnotherUser }],
  ["gosu", { valueOptions: [], positionals: 1, dangerous: asAnotherUser }],
]);

/** Programs that run a command line given as text: shells with `-c`, `eval`, `su -c`. */
export const shells: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"]);
/** Shell options that take the next word as their value. */
export const shellValueOptions: ReadonlySet<string> = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

/** Programs that delete permanently (SPEC F4); `find -delete`, `git clean` and copiers' options are checked apart. */
export const permanentDeleters: ReadonlySet<string> = new Set(["rm", "unlink", "shred", "srm", "wipe"]);

/** Reach the network whatever their arguments. */
export const networkPrograms: ReadonlySet<string> = new Set([
  "curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet", "ftp", "tftp", "lftp", "ncftp",
  "ping", "ping6", "dig", "nslookup", "host", "whois", "traceroute", "tracepath", "mtr", "nmap",
  "http", "https", "xh", "httpie", "aria2c", "axel", "websocat", "grpcurl", "rclone", "s3cmd", "gsutil", "ngrok",
  "gh", "aws", "gcloud", "az", "kubectl", "helm", "heroku", "vercel", "netlify", "firebase",
  "npx", "pnpx", "bunx", "uvx",
  "apt", "apt-get", "aptitude", "dnf", "yum", "apk", "brew", "pacman", "zypper", "snap", "flatpak", "port",
]);

/** Reach the network with these sub-commands (the first word after the program's options). */
export const networkSubcommands: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  Object.entries({
    git: ["clone", "fetch", "pull", "push", "ls-remote", "remote", "submodule"],
    npm: ["install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isntal", "isntall", "add", "ci", "publish", "update", "up", "upgrade", "exec", "x", "create", "init", "audit", "view", "info", "show", "search", "login", "adduser", "outdated", "dist-tag", "deprecate", "unpublish", "owner"],
    pnpm: ["install", "i", "add", "update", "up", "upgrade", "publish", "dlx", "create", "fetch", "audit", "outdated", "exec"],
    yarn: ["install", "add", "upgrade", "up", "publish", "dlx", "create", "npm", "audit", "outdated", "info"],
    bun: ["install", "i", "add", "update", "upgrade", "publish", "x", "create"],
    pip: ["install", "download", "search", "index"],
    pip3: ["install", "download", "search", "index"],
    pipx: ["install", "run", "upgrade", "inject"],
    uv: ["pip", "add", "sync", "lock", "run", "tool", "python"],
    poetry: ["install", "add", "update", "lock", "publish", "self"],
    cargo: ["install", "fetch", "update", "publish", "search", "add"],
    go: ["get", "install", "mod"],
    gem: ["install", "update", "push", "fetch"],
    bundle: ["install", "update", "add"],
    composer: ["install", "require", "update", "create-project"],
    conda: ["install", "create", "update"],
    mamba: ["install", "create", "update"],
    docker: ["pull", "push", "login", "search", "build", "run"],
    podman: ["pull", "push", "login", "search", "build", "run"],
  }).map(([program, subcommands]) => [program, new Set(subcommands)]),
);
/** A bare `yarn` installs. */
export const networkWithoutSubcommand: ReadonlySet<string> = new Set(["yarn"]);
/** Global options of these programs that take a value, skipped to find the sub-command. */
export const subcommandValueOptions: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ["git", new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"])],
  ["npm", new Set(["--prefix", "-w", "--workspace"])],
  ["pnpm", new Set(["-C", "--dir", "--filter", "-F"])],
  ["yarn", new Set(["--cwd"])],
  ["docker", new Set(["-H", "--host", "--context", "-c", "--config", "-l", "--log-level"])],
]);

const disks = "changes disks or file systems";
const processes = "stops processes";
const machine = "stops or restarts the machine";
const services = "controls system services";
const firewall = "changes the firewall";
const schedule = "schedules commands to run later";
const system = "changes the system configuration";
const accounts = "changes user accounts";
const containers = "controls containers, with root-equivalent access";

/** Dangerous whatever their arguments; the value says why. */
export const dangerousPrograms: ReadonlyMap<string, string> = new Map([
  ["su", asAnotherUser],
  ["dd", "writes raw devices and files"],
  ...["fdisk", "sfdisk", "parted", "gdisk", "wipefs", "mkswap", "swapon", "swapoff", "losetup", "cryptsetup", "mount", "umount", "fsck", "tune2fs", "debugfs"].map((name) => [name, disks] as const),
  ...["kill", "pkill", "killall", "skill", "xkill"].map((name) => [name, processes] as const),
  ...["reboot", "shutdown", "halt", "poweroff", "init", "telinit"].map((name) => [name, machine] as const),
  ...["systemctl", "service", "launchctl", "initctl", "rc-service"].map((name) => [name, services] as const),
  ...["iptables", "ip6tables", "nft", "ufw", "firewall-cmd"].map((name) => [name, firewall] as const),
  ...["crontab", "at", "batch"].map((name) => [name, schedule] as const),
  ...["insmod", "rmmod", "modprobe", "sysctl", "setcap", "chattr", "nsenter", "update-alternatives"].map((name) => [name, system] as const),
  ...["useradd", "userdel", "usermod", "groupadd", "groupdel", "passwd", "chpasswd", "visudo"].map((name) => [name, accounts] as const),
  ...["docker", "podman"].map((name) => [name, containers] as const),
]);
/** Name prefixes of dangerous program families (`mkfs.ext4`). */
export const dangerousPrefixes: ReadonlyArray<readonly [string, string]> = [["mkfs", disks]];

/** These print their arguments; the arguments are not paths they touch. */
export const printers: ReadonlySet<string> = new Set(["echo", "printf", "true", "false", ":"]);

/** Their first positional argument is a pattern or a script (`grep /api/ src`), not a path. */
export const patternFirst: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  Object.entries({
    grep: ["-A", "-B", "-C", "-m", "-d", "-D", "--max-count", "--context", "--after-context", "--before-context"],
    egrep: ["-A", "-B", "-C", "-m"],
    fgrep: ["-A", "-B", "-C", "-m"],
    rg: ["-A", "-B", "-C", "-m", "-g", "--glob", "-t", "--type", "-T", "--type-not", "-M", "--max-columns", "-j", "--threads"],
    ag: ["-A", "-B", "-C", "-m", "-G"],
    ack: ["-A", "-B", "-C", "-m"],
    sed: ["-l", "--line-length"],
    awk: ["-v", "-F"],
    gawk: ["-v", "-F"],
    mawk: ["-v", "-F"],
    jq: ["--arg", "--argjson", "--slurpfile", "--rawfile", "--indent"],
  }).map(([program, valueOptions]) => [program, new Set(valueOptions)]),
);
/** With one of these options the pattern or script is given by option, so every positional is a path. */
export const patternOptions: ReadonlySet<string> = new Set(["-e", "-f", "--regexp", "--file", "--expression", "--from-file"]);

/** Shell reserved words that may start a command; dropped to reach the command itself. */
export const reservedWords: ReadonlySet<string> = new Set(["{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "coproc"]);

/** Paths outside the workspace that are harmless to read or write. */
export const harmlessDevices: ReadonlySet<string> = new Set(["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty"]);

/** Builtins whose `NAME=value` arguments set variables, like leading assignments. */
export const declarers: ReadonlySet<string> = new Set(["export", "declare", "typeset", "local", "readonly"]);

/** Folders of installed programs: `/usr/bin/git` is git; a program named by any other path is a file the gateway cannot read. */
export const systemProgramFolders: readonly string[] = ["/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"];

/** Print nothing, so `: > f` only empties `f`. */
export const silentPrograms: ReadonlySet<string> = new Set([":", "true", "false"]);

/** Programs that run commands the gateway cannot see, whatever their arguments. */
export const unseenCommands: ReadonlyMap<string, string> = new Map([
  ["parallel", "builds the commands it runs from its input"],
  ["run-parts", "runs every program in a folder"],
]);

/** Builtins whose option (the letter) makes a later command run code the gateway cannot see. */
export const codeLoadingOptions: ReadonlyMap<string, readonly [string, string]> = new Map([
  ["hash", ["p", "makes a command name run the file it names"]],
  ["enable", ["f", "loads a builtin from a shared library"]],
  ["mapfile", ["C", "runs a callback command"]],
  ["readarray", ["C", "runs a callback command"]],
]);

// ---------------------------------------------------------------- variables that run code later

/** Their value is a command line something runs later (bash, git, pagers): judged as that command line. */
export const commandVariables: ReadonlySet<string> = new Set([
  "PROMPT_COMMAND", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "SUDO_ASKPASS", "SSH_ASKPASS",
  "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "GIT_PROXY_COMMAND",
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

// ---------------------------------------------------------------- what programs do through their options

/** What a program's own words reveal, beyond its paths, the network and danger (SPEC F4, S11). */
export interface ProgramEffects {
  findings: ShellFinding[];
  /** Command lines it runs (`tar --to-command='…'`, a `git -c alias.x='!…'`): judged as sub-commands. */
  scripts: Array<{ text: string; via: string }>;
  /** Commands it runs from its own words (`git bisect run make test`): judged as sub-commands. */
  commands: ShellWord[][];
}

/** What `program` does through its own words (SPEC F4, S11): deletes, discarded work, emptied files, commands it runs. */
export function programEffects(program: string, args: readonly ShellWord[]): ProgramEffects {
  const effects: ProgramEffects = { findings: [], scripts: [], commands: [] };
  const copier = copiers.get(program);
  if (copier) copierEffects(program, copier, args, effects);
  else if (program === "git") gitEffects(args, effects);
  else if (program === "truncate") discards(effects, "truncate cuts files to a size, losing their content");
  else if ((program === "cp" || program === "install") && copiesNothingOver(args)) discards(effects, `${program} /dev/null empties the file it copies over`);
  else if (program === "script") scriptEffects(args, effects);
  const unseen = unseenCommands.get(program);
  if (unseen) effects.findings.push({ kind: "unknown", reason: `${program} ${unseen}, which cannot be judged` });
  const loading = codeLoadingOptions.get(program);
  if (loading && args.some((arg) => /^-[A-Za-z]+$/.test(arg.text) && arg.text.includes(loading[0]))) {
    effects.findings.push({ kind: "unknown", reason: `${program} -${loading[0]} ${loading[1]}, which cannot be judged` });
  }
  return effects;
}

function discards(effects: ProgramEffects, what: string): void {
  effects.findings.push({ kind: "destructive", reason: `${what}, which no trash keeps` });
}

function runsCommandLine(effects: ProgramEffects, word: ShellWord | null | undefined, via: string): void {
  if (!word) return;
  if (word.literal) effects.scripts.push({ text: word.text, via });
  else effects.findings.push({ kind: "unknown", reason: `${via} runs a command line only known at run time` });
}

function optionsUnknown(program: string, word: ShellWord): ShellFinding {
  return { kind: "unknown", reason: `${program} is given options only known at run time ("${word.text}")` };
}

/** `cp /dev/null f`: an empty source, not the destination (the last word). */
function copiesNothingOver(args: readonly ShellWord[]): boolean {
  for (let index = 0; index < args.length - 1; index++) {
    const text = (args[index] as ShellWord).text;
    if (text === "/dev/null" || text === "/dev/zero") return true;
  }
  return false;
}

/** util-linux `script -c CMD` runs CMD; without it, an interactive shell that reads its input. */
function scriptEffects(args: readonly ShellWord[], effects: ProgramEffects): void {
  const read = readArguments(args, { shortValues: "cEoTBIOm", longValues: ["--command", "--echo", "--output-limit", "--log-timing", "--log-io", "--log-in", "--log-out", "--logging-format"], completes: ["--command"] });
  const command = read.options.find((option) => option.name === "-c" || option.name === "--command");
  if (command) runsCommandLine(effects, command.value, "script -c");
  else effects.findings.push({ kind: "unknown", reason: "script runs a shell that reads commands from its input, which cannot be judged" });
}

// ---------------------------------------------------------------- reading options

/** How a program reads its options: enough to tell options, their values and positionals apart. */
interface OptionGrammar {
  /** Short options that take a value, glued (`-Izstd`) or as the next word. */
  shortValues?: string;
  /** Long options that take the next word as their value unless written `--name=value`. */
  longValues?: readonly string[];
  /** Long names an unambiguous prefix stands for: getopt_long, git and zip complete `--rem` to `--remove-files`. Most dangerous first. */
  completes?: readonly string[];
  /** Options of their own that are prefixes of a completed name (tar's `--checkpoint`). */
  exact?: readonly string[];
  /** tar's old style: a first word without a dash is a cluster of short options whose values follow in order. */
  oldStyle?: boolean;
  /** Single-dash options of several letters that take a value (zip's `-TT`). */
  multiLetter?: readonly string[];
  /** Single-dash words are whole switches, not letter clusters (7-Zip's `-sdel`). */
  wordSwitches?: boolean;
}

interface ReadOption {
  /** `-x` for a short option, the completed `--name` for a long one. */
  name: string;
  value: ShellWord | null;
}

interface ReadArguments {
  options: ReadOption[];
  positionals: ShellWord[];
  /** A `--` ended the options. */
  dashes: boolean;
  /** The first word only known at run time that could expand to options (`tar $FLAGS …`). */
  dynamic: ShellWord | null;
}

/** Reads a program's words as its option parser would, in one pass. */
function readArguments(args: readonly ShellWord[], grammar: OptionGrammar): ReadArguments {
  const read: ReadArguments = { options: [], positionals: [], dashes: false, dynamic: null };
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const text = word.text;
    if (read.dashes) {
      read.positionals.push(word);
      continue;
    }
    if (mayBeOptions(word)) read.dynamic ??= word;
    if (text === "--") read.dashes = true;
    else if (index === 0 && grammar.oldStyle && word.literal && /^[A-Za-z]+$/.test(text)) index = readCluster(args, index, 0, grammar, read);
    else if (!text.startsWith("-") || text === "-") read.positionals.push(word);
    else if (text.startsWith("--")) index = readLong(args, index, grammar, read);
    else if (grammar.wordSwitches) read.options.push({ name: text, value: null });
    else index = readShort(args, index, grammar, read);
  }
  return read;
}

/** A word only known at run time that could become options: `$FLAGS`, `"$X"`, `-$Y`; `--name=$X` still names its option. */
function mayBeOptions(word: ShellWord): boolean {
  if (word.literal) return false;
  if (!/[$`]/.test(word.text)) return /^[-{]/.test(word.text); // only brace expansion: `src/{a,b}` stays paths
  const equals = word.text.indexOf("=");
  const name = equals === -1 ? word.text : word.text.slice(0, equals);
  return !word.text.startsWith("-") || /[$`{]/.test(name);
}

function readLong(args: readonly ShellWord[], index: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  const equals = word.text.indexOf("=");
  const name = completeName(equals === -1 ? word.text : word.text.slice(0, equals), grammar);
  if (equals !== -1) read.options.push({ name, value: { ...word, text: word.text.slice(equals + 1) } });
  else if (grammar.longValues?.includes(name)) read.options.push({ name, value: args[++index] ?? null });
  else read.options.push({ name, value: null });
  return index;
}

function completeName(written: string, grammar: OptionGrammar): string {
  if (written.length <= 2 || grammar.exact?.includes(written)) return written;
  return grammar.completes?.find((name) => name.startsWith(written)) ?? written;
}

function readShort(args: readonly ShellWord[], index: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  const multi = grammar.multiLetter?.find((name) => word.text.startsWith(name));
  if (!multi) return readCluster(args, index, 1, grammar, read);
  const rest = word.text.slice(multi.length);
  if (rest === "") read.options.push({ name: multi, value: args[++index] ?? null });
  else read.options.push({ name: multi, value: { ...word, text: rest.startsWith("=") ? rest.slice(1) : rest } });
  return index;
}

/** `-czf out.tgz`: letters from `start`; a value-taking letter takes the rest of the word, or the next word (tar's old style: each in turn). */
function readCluster(args: readonly ShellWord[], index: number, start: number, grammar: OptionGrammar, read: ReadArguments): number {
  const word = args[index] as ShellWord;
  let next = index + 1;
  for (let at = start; at < word.text.length; at++) {
    const letter = word.text[at] as string;
    if (!grammar.shortValues?.includes(letter)) {
      read.options.push({ name: `-${letter}`, value: null });
      continue;
    }
    const glued = start === 0 ? "" : word.text.slice(at + 1);
    read.options.push({ name: `-${letter}`, value: glued === "" ? (args[next++] ?? null) : { ...word, text: glued } });
    if (start !== 0) break;
  }
  return next - 1;
}

function has(read: ReadArguments, ...names: string[]): boolean {
  return read.options.some((option) => names.includes(option.name));
}

// ---------------------------------------------------------------- copiers: tar, rsync, zip, 7-Zip

/** Programs whose options delete what they copy, or run a command (SPEC F4, S11). */
interface CopierRules {
  grammar: OptionGrammar;
  /** Options that delete files, and which. Permanent: where the copy went (a pipe, /dev/null, another host) cannot be checked. */
  deletes: ReadonlyMap<string, string>;
  /** Options whose value is a command line it runs; the value's prefix that says so (`exec=`), or "". */
  runs: ReadonlyMap<string, string>;
  /** Options under which nothing is deleted (`rsync -n`). */
  dryRun?: readonly string[];
}

const tarRuns = new Map([
  ["--checkpoint-action", "exec="],
  ["--to-command", ""],
  ["--use-compress-program", ""],
  ["-I", ""],
  ["--info-script", ""],
  ["--new-volume-script", ""],
  ["-F", ""],
  ["--rsh-command", ""],
  ["--rmt-command", ""],
]);
const tarLongRuns = [...tarRuns.keys()].filter((name) => name.startsWith("--"));
const rsyncDestinationDeletes = "deletes destination files missing from the source";
const rsyncSourceDeletes = "deletes the source files it copied";
const archivedDeletes = "deletes the files it archives";

const copiers: ReadonlyMap<string, CopierRules> = new Map<string, CopierRules>([
  [
    "tar",
    {
      grammar: {
        shortValues: "bCfFgHIKLNTVX",
        longValues: [
          ...tarLongRuns, "--file", "--directory", "--exclude", "--exclude-from", "--files-from", "--label", "--listed-incremental", "--newer",
          "--after-date", "--newer-mtime", "--owner", "--group", "--mode", "--mtime", "--format", "--blocking-factor", "--record-size",
          "--tape-length", "--transform", "--xform", "--strip-components", "--suffix", "--index-file", "--volno-file", "--starting-file",
        ],
        completes: ["--remove-files", ...tarLongRuns],
        exact: ["--checkpoint"],
        oldStyle: true,
      },
      deletes: new Map([["--remove-files", archivedDeletes]]),
      runs: tarRuns,
    },
  ],
  [
    "rsync",
    {
      // rsync's popt reads whole names only: `--dele` is an error, not `--delete`.
      grammar: {
        shortValues: "eBfMT@",
        longValues: [
          "--rsh", "--rsync-path", "--filter", "--exclude", "--include", "--exclude-from", "--include-from", "--files-from", "--backup-dir",
          "--suffix", "--temp-dir", "--compare-dest", "--copy-dest", "--link-dest", "--log-file", "--log-file-format", "--out-format",
          "--password-file", "--partial-dir", "--chmod", "--chown", "--usermap", "--groupmap", "--timeout", "--contimeout", "--bwlimit",
          "--max-size", "--min-size", "--max-delete", "--block-size", "--modify-window", "--remote-option", "--iconv", "--info", "--debug",
          "--skip-compress", "--write-batch", "--read-batch", "--only-write-batch", "--compress-choice", "--checksum-choice", "--address", "--port",
        ],
      },
      deletes: new Map([
        ...["--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after", "--delete-excluded", "--delete-missing-args"].map(
          (name) => [name, rsyncDestinationDeletes] as const,
        ),
        ...["--remove-source-files", "--remove-sent-files"].map((name) => [name, rsyncSourceDeletes] as const),
      ]),
      runs: new Map([
        ["-e", ""],
        ["--rsh", ""],
        ["--rsync-path", ""],
      ]),
      dryRun: ["-n", "--dry-run"],
    },
  ],
  [
    "zip",
    {
      grammar: {
        shortValues: "bnPtOZs",
        longValues: ["--unzip-command", "--output-file", "--temp-path", "--password", "--suffixes", "--split-size", "--compression-method", "--from-date", "--before-date"],
        completes: ["--move", "--unzip-command"],
        multiLetter: ["-TT", "-tt"],
      },
      deletes: new Map([
        ["-m", "deletes the files it adds"],
        ["--move", "deletes the files it adds"],
      ]),
      runs: new Map([
        ["-TT", ""],
        ["--unzip-command", ""],
      ]),
    },
  ],
  ...["7z", "7za", "7zr"].map((name) => [name, { grammar: { wordSwitches: true }, deletes: new Map([["-sdel", archivedDeletes]]), runs: new Map() }] as const),
]);

function copierEffects(program: string, rules: CopierRules, args: readonly ShellWord[], effects: ProgramEffects): void {
  const read = readArguments(args, rules.grammar);
  const dryRun = rules.dryRun !== undefined && has(read, ...rules.dryRun);
  for (const option of read.options) {
    const deleted = rules.deletes.get(option.name);
    if (deleted && !dryRun) effects.findings.push({ kind: "permanent_delete", reason: `${program} ${option.name} permanently ${deleted}; ${deleteTool}` });
    const prefix = rules.runs.get(option.name);
    if (prefix === undefined || !option.value?.text.startsWith(prefix)) continue; // `--checkpoint-action=dot` runs nothing
    runsCommandLine(effects, { ...option.value, text: option.value.text.slice(prefix.length) }, `${program} ${option.name}`);
  }
  if (read.dynamic) effects.findings.push(optionsUnknown(program, read.dynamic));
}

// ---------------------------------------------------------------- git

/** git's own sub-commands (2.39+): an alias cannot shadow them, and any other name may be an alias. */
const gitSubcommands: ReadonlySet<string> = new Set([
  "add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch", "bugreport", "bundle", "cat-file", "check-attr",
  "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "citool", "clean", "clone",
  "column", "commit", "commit-graph", "commit-tree", "config", "count-objects", "credential", "describe", "diagnose", "diff", "diff-files",
  "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch", "fmt-merge-msg",
  "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help", "hook",
  "index-pack", "init", "init-db", "instaweb", "interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit",
  "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv",
  "name-rev", "notes", "pack-objects", "pack-refs", "prune", "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "reflog",
  "refs", "remote", "repack", "replace", "replay", "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
  "send-email", "shortlog", "show", "show-branch", "show-index", "show-ref", "sparse-checkout", "stash", "status", "stripspace",
  "submodule", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "var",
  "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree",
]);

/** git's global options that take the next word as their value. */
const gitGlobalValues: ReadonlySet<string> = new Set(["-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"]);
/** Configuration keys (lower case) that make git run nothing and read nothing from elsewhere. */
const gitHarmlessConfig: ReadonlySet<string> = new Set([
  "user.name", "user.email", "core.quotepath", "core.autocrlf", "core.safecrlf", "core.filemode", "core.ignorecase", "core.abbrev",
  "init.defaultbranch", "commit.gpgsign", "tag.gpgsign", "pull.rebase", "pull.ff", "merge.ff", "rebase.autostash", "push.default",
  "push.autosetupremote", "gc.auto", "maintenance.auto", "diff.renames", "diff.algorithm", "diff.noprefix", "log.showsignature",
  "fetch.prune", "status.showuntrackedfiles", "protocol.version",
]);
const gitHarmlessSections = ["color.", "advice.", "i18n.", "column."];
/** Keys whose value is a command line git runs: judged as that command line (`git -c core.pager=cat log`). */
const gitCommandConfig: ReadonlySet<string> = new Set(["core.pager", "core.editor", "sequence.editor", "core.sshcommand", "core.askpass", "diff.external"]);
/** `git push` options that overwrite or delete remote history. */
const gitPushForce = ["--force", "--force-with-lease", "--force-if-includes", "--delete", "--mirror", "--prune"];

/**
 * How the sub-commands with something to judge read their options. git
 * completes unambiguous prefixes of long options (`--har` is `--hard`), so the
 * names that matter are completed.
 */
const gitGrammars: ReadonlyMap<string, OptionGrammar> = new Map<string, OptionGrammar>([
  ["clean", { shortValues: "e", longValues: ["--exclude"], completes: ["--dry-run"] }],
  ["reset", { longValues: ["--pathspec-from-file"], completes: ["--hard", "--merge"] }],
  ["checkout", { shortValues: "bB", longValues: ["--orphan", "--pathspec-from-file"], completes: ["--force", "--ours", "--theirs", "--patch", "--merge", "--pathspec-from-file"] }],
  ["restore", { shortValues: "s", longValues: ["--source", "--pathspec-from-file"], completes: ["--staged", "--worktree", "--source"] }],
  ["switch", { shortValues: "cC", longValues: ["--create", "--force-create", "--orphan"], completes: ["--force", "--discard-changes"] }],
  ["stash", { shortValues: "m", longValues: ["--message", "--pathspec-from-file"] }],
  ["branch", { shortValues: "u", longValues: ["--set-upstream-to", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"], completes: ["--force"] }],
  ["push", { shortValues: "o", longValues: ["--push-option", "--repo", "--receive-pack", "--exec"], completes: gitPushForce }],
  ["rm", { longValues: ["--pathspec-from-file"], completes: ["--force"] }],
  ["checkout-index", { completes: ["--force"] }],
  ["read-tree", { completes: ["--reset"] }],
  ["worktree", { shortValues: "b", completes: ["--force"] }],
  ["reflog", {}],
  ["gc", { completes: ["--prune"] }],
  ["prune", {}],
  ["update-ref", {}],
  ["filter-branch", {}],
  ["rebase", { shortValues: "xsX", longValues: ["--exec", "--onto", "--strategy", "--strategy-option"], completes: ["--exec"] }],
  ["difftool", { shortValues: "xt", longValues: ["--extcmd", "--tool"], completes: ["--extcmd"] }],
  ["grep", { shortValues: "efABCm", longValues: ["--max-count", "--context", "--after-context", "--before-context"], completes: ["--open-files-in-pager"] }],
  ["bisect", {}],
  ["submodule", {}],
  ["config", { shortValues: "f", longValues: ["--file", "--blob", "--type", "--default", "--comment", "--value"] }],
]);

/** `git [global options] SUB …`: `-c` configuration, the aliases it defines, and what the sub-command does. */
function gitEffects(args: readonly ShellWord[], effects: ProgramEffects): void {
  const aliases = new Map<string, string>();
  let index = 0;
  for (; index < args.length; index++) {
    const text = (args[index] as ShellWord).text;
    if (!text.startsWith("-")) break;
    if (text === "-c") gitConfigOption(args[++index], aliases, effects);
    else if (text === "--config-env" || text.startsWith("--config-env=") || text.startsWith("--exec-path=")) {
      effects.findings.push({ kind: "unknown", reason: `git ${text.split("=")[0]} takes configuration or commands from elsewhere, which cannot be judged` });
      if (text === "--config-env") index++;
    } else if (gitGlobalValues.has(text)) index++;
  }
  const sub = args[index];
  if (!sub) return;
  const rest = args.slice(index + 1);
  const grammar = sub.literal ? gitGrammars.get(sub.text) : undefined;
  if (grammar) {
    const read = readArguments(rest, grammar);
    if (read.dynamic) effects.findings.push(optionsUnknown(`git ${sub.text}`, read.dynamic));
    gitSubcommandEffects(sub.text, read, rest, effects);
  } else if (!sub.literal) {
    effects.findings.push({ kind: "unknown", reason: `git runs a sub-command only known at run time ("${sub.text}")` });
  } else if (!gitSubcommands.has(sub.text)) {
    const alias = aliases.get(sub.text.toLowerCase());
    if (alias === undefined) effects.findings.push({ kind: "unknown", reason: `git ${sub.text} is not a git command: an alias or a git-${sub.text} program, whose commands cannot be judged` });
    else effects.scripts.push({ text: expandGitAlias(alias, args.slice(0, index), rest), via: `the git alias ${sub.text}` });
  }
}

/** Deletes, discarded work and commands of one sub-command; `read` is `args` read with its grammar. */
function gitSubcommandEffects(sub: string, read: ReadArguments, args: readonly ShellWord[], effects: ProgramEffects): void {
  const first = read.positionals[0];
  switch (sub) {
    case "clean":
      if (!has(read, "-n", "--dry-run")) effects.findings.push({ kind: "permanent_delete", reason: `git clean deletes untracked files permanently; ${deleteTool}` });
      return;
    case "reset":
      if (has(read, "--hard", "--merge")) discards(effects, "git reset --hard discards uncommitted changes");
      return;
    case "checkout":
      if (checksOutPaths(read) || has(read, "-f", "--force", "--ours", "--theirs", "-p", "--patch", "-m", "--merge", "--pathspec-from-file")) {
        discards(effects, "git checkout of paths, or forced, discards uncommitted changes");
      }
      return;
    case "restore":
      // `git restore --staged f` only unstages: the working tree holds the unsaved work
      if (!has(read, "-S", "--staged") || has(read, "-W", "--worktree")) discards(effects, "git restore discards uncommitted changes in the working tree");
      return;
    case "switch":
      if (has(read, "-f", "--force", "--discard-changes")) discards(effects, "git switch --discard-changes discards uncommitted changes");
      return;
    case "stash":
      if (first?.text === "drop" || first?.text === "clear") discards(effects, `git stash ${first.text} deletes stashed changes`);
      return;
    case "reflog":
      if (first?.text === "expire" || first?.text === "delete") discards(effects, `git reflog ${first.text} deletes the record that recovers lost commits`);
      return;
    case "branch":
      if (has(read, "-D", "-M", "-C", "-f", "--force")) discards(effects, "git branch -D deletes or overwrites a branch, with commits no other branch has");
      return;
    case "push":
      // `+main` forces, `:old` deletes
      if (read.positionals.slice(1).some((refspec) => /^[+:]/.test(refspec.text)) || has(read, "-f", "-d", ...gitPushForce)) {
        discards(effects, "git push --force overwrites or deletes history on the remote");
      }
      return;
    case "rm":
    case "checkout-index":
      if (has(read, "-f", "--force")) discards(effects, `git ${sub} -f overwrites or deletes files with uncommitted changes`);
      return;
    case "read-tree":
      // `-u` writes the working tree; with `--reset` or `-m` it overwrites what differs
      if (has(read, "-u") && has(read, "--reset", "-m")) discards(effects, "git read-tree -u --reset discards uncommitted changes");
      return;
    case "worktree":
      if (first?.text === "remove" && has(read, "-f", "--force")) discards(effects, "git worktree remove --force deletes a working tree with its uncommitted changes");
      return;
    case "gc":
      if (read.options.some((option) => option.name === "--prune" && option.value !== null)) discards(effects, "git gc --prune=now deletes unreachable commits at once");
      return;
    case "prune":
    case "update-ref":
    case "filter-branch":
      discards(effects, `git ${sub} rewrites or deletes history past git's safety checks`);
      return;
    case "rebase":
    case "difftool":
      for (const option of read.options) if (["-x", "--exec", "--extcmd"].includes(option.name)) runsCommandLine(effects, option.value, `git ${sub} ${option.name}`);
      return;
    case "grep":
      if (has(read, "-O", "--open-files-in-pager")) effects.findings.push({ kind: "unknown", reason: "git grep -O opens the files in a program that cannot be judged" });
      return;
    case "bisect":
      if (first?.text === "run") effects.commands.push(args.slice(args.indexOf(first) + 1));
      return;
    case "submodule":
      if (first?.text === "foreach") submoduleForeach(args.slice(args.indexOf(first) + 1), effects);
      return;
    case "config":
      gitConfigWrite(read, effects);
      return;
  }
}

/** `git checkout -- f`, `git checkout HEAD f`, `git checkout .`; a single name may be a branch, unless it looks like a path. */
function checksOutPaths(read: ReadArguments): boolean {
  const [target, ...more] = read.positionals;
  return read.dashes || more.length > 0 || (target !== undefined && looksLikePath(target.text));
}

/** `.`, `./x`, `src/a.ts`, `*.ts`: a path rather than a branch. Without `--`, a file with no extension reads as a branch. */
function looksLikePath(text: string): boolean {
  if (text === "." || text === ".." || /^(?:\.\.?\/|\/|:)/.test(text) || text.endsWith("/") || /[*?[]/.test(text)) return true;
  return /\.[A-Za-z]/.test(text.slice(text.lastIndexOf("/") + 1));
}

/** `git submodule foreach [--recursive] CMD…`: the words are joined into one command line for the shell. */
function submoduleForeach(words: readonly ShellWord[], effects: ProgramEffects): void {
  let start = 0;
  while (words[start]?.text.startsWith("-")) start++;
  if (start < words.length) effects.scripts.push({ text: words.slice(start).map((word) => word.text).join(" "), via: "git submodule foreach" });
}

/** `git config KEY VALUE` (or `git config set`) of a key that can make git run commands later. */
function gitConfigWrite(read: ReadArguments, effects: ProgramEffects): void {
  const [first, second] = read.positionals.map((word) => word.text);
  if (has(read, "-e", "--edit", "--rename-section") || first === "edit" || first === "rename-section") {
    effects.findings.push({ kind: "dangerous", reason: "git config edits or renames configuration, which can make git run commands later" });
    return;
  }
  const reads = read.options.some((option) => option.name.startsWith("--get") || option.name.startsWith("--unset") || ["-l", "--list", "--remove-section"].includes(option.name));
  const key = first === "set" ? second : reads || second === undefined || ["get", "unset", "list", "remove-section"].includes(first ?? "") ? undefined : first;
  if (key !== undefined && !gitConfigIsHarmless(key.toLowerCase())) {
    effects.findings.push({ kind: "dangerous", reason: `git config sets ${key}, which can make git run commands later` });
  }
}

function gitConfigIsHarmless(key: string): boolean {
  return gitHarmlessConfig.has(key) || gitHarmlessSections.some((section) => key.startsWith(section));
}

/** One `git -c KEY=VALUE`: an alias is kept for the sub-command, a command is judged, anything else but harmless keys asks. */
function gitConfigOption(word: ShellWord | undefined, aliases: Map<string, string>, effects: ProgramEffects): void {
  if (!word) return;
  if (!word.literal) {
    effects.findings.push({ kind: "unknown", reason: `git -c sets configuration only known at run time ("${word.text}")` });
    return;
  }
  const equals = word.text.indexOf("=");
  // Section and key names are case-insensitive: `alias.X` defines `git x`.
  const key = (equals === -1 ? word.text : word.text.slice(0, equals)).toLowerCase();
  const value = equals === -1 ? "" : word.text.slice(equals + 1);
  if (key.startsWith("alias.")) aliases.set(key.slice("alias.".length), value);
  else if (gitCommandConfig.has(key) || key.startsWith("pager.")) effects.scripts.push({ text: value, via: `git -c ${key}` });
  else if (!gitConfigIsHarmless(key)) effects.findings.push({ kind: "unknown", reason: `git -c ${key} can make git run commands or read other files, which cannot be judged` });
}

/**
 * The command line an alias runs: `!…` through the shell with the arguments
 * appended; otherwise git again with the alias's words and the same global
 * options, so chained aliases resolve too (a loop ends at the analysis's
 * nesting limit, and asks).
 */
function expandGitAlias(alias: string, globals: readonly ShellWord[], rest: readonly ShellWord[]): string {
  const args = rest.map(quoteWord).join(" ");
  if (alias.startsWith("!")) return `${alias.slice(1)} ${args}`;
  return `git ${globals.map(quoteWord).join(" ")} ${alias} ${args}`;
}

/** Quotes a literal word for a command line we build; a word only known at run time stays an expansion, so it is judged unknown again. */
function quoteWord(word: ShellWord): string {
  return word.literal ? `'${word.text.replaceAll("'", "'\\''")}'` : word.text;
}
