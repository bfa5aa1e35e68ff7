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
