/**
 * Destructive shell forms as background commands (SPEC S11, X7, B1), as data. A background
 * command works on the workspace itself, so nothing records what it changes: each form here
 * would destroy `precious.txt` (or the work in the setup's repository, or its folders) for
 * good. In Auto each must be refused (`deny`, a permanent delete: F4) or asked (`ask`), never
 * run unasked. `since`: the forms Auto ran unasked in the background before background
 * commands were judged on their own, with what the foreground layer makes undoable.
 */
export interface BackgroundForm {
  command: string;
  expected: "deny" | "ask";
  why: string;
  /** Asked only since background commands must change no file unasked. */
  since?: true;
}

/** What every form runs against: files, folders, and a repository with uncommitted work. */
export const backgroundSetup = [
  "git -c user.email=t@example.com -c user.name=t init -q .",
  "printf 'tracked v1\\n' > tracked.txt",
  "git add tracked.txt",
  "git -c user.email=t@example.com -c user.name=t commit -qm one",
  "printf 'uncommitted work\\n' > tracked.txt",
  "printf 'precious\\n' > precious.txt",
  "printf 'other\\n' > other.txt",
  "mkdir -p d src dst",
  "printf 'one\\n' > d/one",
  "printf 'a\\n' > src/a",
  "printf 'kept\\n' > dst/kept",
].join(" && ");

export const backgroundForms: readonly BackgroundForm[] = [
  { command: "rm -f precious.txt", expected: "deny", why: "deletes permanently" },
  { command: "find . -name precious.txt -delete", expected: "deny", why: "find -delete" },
  { command: "git clean -fdx", expected: "deny", why: "deletes untracked files" },
  { command: "shred -u precious.txt", expected: "deny", why: "overwrites, then deletes" },
  { command: "rsync -a --delete src/ dst/", expected: "deny", why: "deletes what the source lacks" },
  { command: "tar --remove-files -cf d.tar d", expected: "deny", why: "deletes what it archives" },
  { command: "unlink precious.txt", expected: "deny", why: "deletes permanently" },
  { command: "zip -qm p.zip precious.txt", expected: "deny", why: "deletes what it adds" },
  { command: ": > precious.txt", expected: "ask", why: "empties the file" },
  { command: "truncate -s 0 precious.txt", expected: "ask", why: "cuts the file" },
  { command: "cp /dev/null precious.txt", expected: "ask", why: "copies nothing over the file" },
  { command: "git reset -q --hard", expected: "ask", why: "discards uncommitted work" },
  { command: "git checkout -- .", expected: "ask", why: "discards uncommitted work" },
  { command: "git restore .", expected: "ask", why: "discards uncommitted work" },
  { command: "echo gone > precious.txt", expected: "ask", why: "replaces the file's content", since: true },
  { command: "mv other.txt precious.txt", expected: "ask", why: "replaces the file", since: true },
  { command: "cp other.txt precious.txt", expected: "ask", why: "copies over the file", since: true },
  { command: "sed -i s/precious/gone/ precious.txt", expected: "ask", why: "edits in place", since: true },
  { command: "perl -pi -e 's/precious/gone/' precious.txt", expected: "ask", why: "edits in place", since: true },
  { command: `/usr/bin/python3 -c "open('precious.txt', 'w').write('gone')"`, expected: "ask", why: "code that writes", since: true },
  { command: "ln -sf other.txt precious.txt", expected: "ask", why: "replaces the file with a link", since: true },
  { command: "tee precious.txt < other.txt", expected: "ask", why: "empties, then writes the file", since: true },
  { command: "sort -o precious.txt other.txt", expected: "ask", why: "writes its output over the file", since: true },
  { command: `node -e "require('fs').writeFileSync('precious.txt', 'gone')"`, expected: "ask", why: "code that writes", since: true },
];

/** Background commands that change no existing file: they still run without a question in Auto. */
export const cleanBackgroundCommands: readonly string[] = [
  "sleep 30",
  "for i in 1 2 3; do echo tick $i; sleep 0.2; done",
  "tail -f app.log",
  "timeout 60 tail -F app.log | grep --line-buffered ERROR",
  "sleep 1 && echo ready >> app.log",
  "while true; do date >> clock.log; sleep 1; done",
  "git status && git log --oneline -3",
  "find . -name '*.ts' | wc -l",
  "touch started && mkdir -p out && echo started 2>&1 | tee -a app.log",
  "exit 4",
];
