/**
 * The programs tenants may run as stdio MCP servers, chosen by the operator
 * (`FOYA_MCP_STDIO_COMMANDS`), each with the environment variable names a tenant may give it
 * (SPEC M1, S7). An environment is code too: `NODE_OPTIONS=--require <file>`, `LD_PRELOAD` or
 * `BASH_ENV` make any allowed program run a file of the tenant's. So a tenant's server may set
 * only the names the operator admitted for its command (none unless listed), and the names below
 * are refused whatever the operator lists: they make a program load or run other code, or choose
 * which program runs.
 */
export type McpStdioCommands = ReadonlyMap<string, ReadonlySet<string>>;

/** The shape of an environment variable name a tenant may write (the API checks it too). */
export const environmentNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface ForbiddenNames {
  why: string;
  names: readonly string[];
  /** Names starting with one of these. */
  prefixes?: readonly string[];
  /** Names of a prefix above that stay allowed. */
  except?: readonly string[];
}

const forbidden: readonly ForbiddenNames[] = [
  {
    // glibc's own list of variables it drops for setuid programs (sysdeps/generic/unsecvars.h), and macOS's loader.
    why: "it makes the dynamic loader or the C library load other code or files",
    names: [
      "GCONV_PATH",
      "GETCONF_DIR",
      "GLIBC_TUNABLES",
      "HOSTALIASES",
      "LOCALDOMAIN",
      "LOCPATH",
      "NIS_PATH",
      "NLSPATH",
      "RESOLV_HOST_CONF",
      "RES_OPTIONS",
    ],
    prefixes: ["LD_", "DYLD_", "MALLOC_"],
  },
  {
    why: "an interpreter runs or loads code it names when it starts",
    names: [
      "NODE_OPTIONS",
      "NODE_PATH",
      "NODE_REPL_EXTERNAL_MODULE",
      "PYTHONSTARTUP",
      "PYTHONPATH",
      "PYTHONHOME",
      "PYTHONUSERBASE",
      "PYTHONINSPECT",
      "PYTHONEXECUTABLE",
      "PYTHONWARNINGS",
      "PYTHONBREAKPOINT",
      "PYTHONPLATLIBDIR",
      "PYTHONPYCACHEPREFIX",
      "PERL5OPT",
      "PERL5LIB",
      "PERLLIB",
      "PERL5DB",
      "PERLIO",
      "RUBYOPT",
      "RUBYLIB",
      "RUBYSHELL",
      "GEM_HOME",
      "GEM_PATH",
      "BUNDLE_GEMFILE",
      "JAVA_TOOL_OPTIONS",
      "_JAVA_OPTIONS",
      "JDK_JAVA_OPTIONS",
      "CLASSPATH",
      "PHPRC",
      "PHP_INI_SCAN_DIR",
      "TCLLIBPATH",
      "R_PROFILE",
      "R_PROFILE_USER",
      "R_ENVIRON",
      "R_ENVIRON_USER",
      "GOFLAGS",
    ],
    // npm reads its configuration (node-options, script-shell, userconfig...) from npm_config_* in any case.
    prefixes: ["NPM_CONFIG_", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "R_LIBS"],
  },
  {
    why: "a shell reads it when it starts",
    names: [
      "BASH_ENV",
      "ENV",
      "SHELLOPTS",
      "BASHOPTS",
      "PROMPT_COMMAND",
      "PS4",
      "IFS",
      "CDPATH",
      "GLOBIGNORE",
      "EXECIGNORE",
      "BASH_XTRACEFD",
      "BASH_LOADABLES_PATH",
      "ZDOTDIR",
      "INPUTRC",
    ],
    prefixes: ["BASH_FUNC_"],
  },
  {
    why: "it names a program to run (the service sets PATH)",
    names: ["PATH", "SHELL", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS"],
  },
  {
    // GIT_CONFIG_COUNT/KEY/VALUE, GIT_CONFIG_PARAMETERS, GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_DIR (hooks)...
    why: "it changes what git runs or which configuration it reads",
    names: [],
    prefixes: ["GIT_"],
    except: ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"],
  },
];

/** Why no tenant may set this variable for a stdio server, whatever the operator admits; undefined if it is not one of those. */
export function forbiddenEnvironmentName(name: string): string | undefined {
  // Compared in upper case: npm reads npm_config_* in either case, and no legitimate name needs the difference.
  const upper = name.toUpperCase();
  for (const group of forbidden) {
    if (group.except?.includes(upper)) continue;
    if (group.names.includes(upper) || group.prefixes?.some((prefix) => upper.startsWith(prefix))) return group.why;
  }
  return undefined;
}

/**
 * Why this stdio server may not be configured or started, or undefined: its command is not on
 * the operator's list, or it sets a variable not admitted for that command.
 */
export function refusedStdioServer(
  commands: McpStdioCommands,
  server: { command: string; env: Record<string, string> },
): string | undefined {
  const admitted = commands.get(server.command);
  if (!admitted) {
    return `stdio MCP servers run programs on the service's hosts; "${server.command}" is not one an operator allowed (FOYA_MCP_STDIO_COMMANDS)`;
  }
  for (const name of Object.keys(server.env).sort()) {
    const why = forbiddenEnvironmentName(name);
    if (why) return `the environment variable ${name} is never accepted for a stdio MCP server: ${why}`;
    if (!admitted.has(name)) {
      const names = [...admitted].sort();
      const allowed = names.length > 0 ? `it admits only ${names.join(", ")}` : "it admits none";
      return `the environment variable ${name} is not one an operator admitted for "${server.command}" (FOYA_MCP_STDIO_COMMANDS: ${allowed})`;
    }
  }
  return undefined;
}
