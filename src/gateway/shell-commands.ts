/**
 * What the gateway knows about programs run from a shell (SPEC S2, F4): which
 * only wrap another command, which delete permanently, which reach the network,
 * which are dangerous. Names are compared after `path.basename`, so `/bin/rm`
 * is `rm`. Unknown programs are ordinary: only their path arguments are judged.
 */

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
  ["watch", { valueOptions: ["-n", "--interval", "-q", "--equexit"] }],
  ["unbuffer", { valueOptions: [] }],
  ["flock", { valueOptions: ["-w", "-E", "--timeout", "--conflict-exit-code"], positionals: 1 }],
  ["taskset", { valueOptions: [], positionals: 1 }],
  ["chroot", { valueOptions: ["--userspec", "--groups"], positionals: 1, dangerous: "runs a command in another root directory" }],
]);

/** Programs that run a command line given as text: shells with `-c`, `eval`, `su -c`. */
export const shells: ReadonlySet<string> = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"]);
/** Shell options that take the next word as their value. */
export const shellValueOptions: ReadonlySet<string> = new Set(["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]);

/** Programs that delete permanently (SPEC F4); `find -delete` and `git clean` are checked apart. */
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
