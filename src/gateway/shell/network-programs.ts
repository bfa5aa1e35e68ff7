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
