import type { OptionGrammar } from "./read-arguments.js";

/** Programs whose options delete what they copy, or run a command (SPEC F4, S11). */
export interface CopierRules {
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

export const copiers: ReadonlyMap<string, CopierRules> = new Map<string, CopierRules>([
  [
    "tar",
    {
      grammar: {
        shortValues: "bCfFgHIKLNTVX",
        longValues: [
          ...tarLongRuns,
          "--file",
          "--directory",
          "--exclude",
          "--exclude-from",
          "--files-from",
          "--label",
          "--listed-incremental",
          "--newer",
          "--after-date",
          "--newer-mtime",
          "--owner",
          "--group",
          "--mode",
          "--mtime",
          "--format",
          "--blocking-factor",
          "--record-size",
          "--tape-length",
          "--transform",
          "--xform",
          "--strip-components",
          "--suffix",
          "--index-file",
          "--volno-file",
          "--starting-file",
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
          "--rsh",
          "--rsync-path",
          "--filter",
          "--exclude",
          "--include",
          "--exclude-from",
          "--include-from",
          "--files-from",
          "--backup-dir",
          "--suffix",
          "--temp-dir",
          "--compare-dest",
          "--copy-dest",
          "--link-dest",
          "--log-file",
          "--log-file-format",
          "--out-format",
          "--password-file",
          "--partial-dir",
          "--chmod",
          "--chown",
          "--usermap",
          "--groupmap",
          "--timeout",
          "--contimeout",
          "--bwlimit",
          "--max-size",
          "--min-size",
          "--max-delete",
          "--block-size",
          "--modify-window",
          "--remote-option",
          "--iconv",
          "--info",
          "--debug",
          "--skip-compress",
          "--write-batch",
          "--read-batch",
          "--only-write-batch",
          "--compress-choice",
          "--checksum-choice",
          "--address",
          "--port",
        ],
      },
      deletes: new Map([
        ...[
          "--delete",
          "--del",
          "--delete-before",
          "--delete-during",
          "--delete-delay",
          "--delete-after",
          "--delete-excluded",
          "--delete-missing-args",
        ].map((name) => [name, rsyncDestinationDeletes] as const),
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
        longValues: [
          "--unzip-command",
          "--output-file",
          "--temp-path",
          "--password",
          "--suffixes",
          "--split-size",
          "--compression-method",
          "--from-date",
          "--before-date",
        ],
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
  ...["7z", "7za", "7zr"].map(
    (name) => [name, { grammar: { wordSwitches: true }, deletes: new Map([["-sdel", archivedDeletes]]), runs: new Map() }] as const,
  ),
]);
