import { describe, expect, it } from "vitest";
import { judgeCall } from "../../src/gateway/judge-call.js";
import { findPermanentDelete } from "../../src/tools/shell/permanent-delete.js";
import type { Verdict } from "../../src/gateway/verdict.js";
import type { ApprovalMode } from "../../src/core/session.js";

function judgeBash(mode: ApprovalMode, command: string): Verdict {
  return judgeCall({
    mode,
    tool: { name: "bash", sideEffect: "exec" },
    subject: { kind: "command", command },
    workspaceDir: "/work/ws",
    policies: [],
  });
}

/** Permanent deletes, plain and in every wrapping shape we know of. */
const refused = [
  "rm -rf x",
  "rm x",
  "FOO=1 rm -rf x",
  "sh -c 'rm -rf x'",
  'bash -lc "rm x"',
  'bash -o pipefail -c "cd src && rm -r dist"',
  "find . -delete",
  "find . -name '*.o' -delete",
  "find . -exec rm {} \\;",
  "find . -type f -execdir shred -u {} +",
  "xargs rm",
  "ls | xargs -0 rm -f",
  "cat list | xargs -n 1 -I{} rm {}",
  "$(rm x)",
  "echo $(rm x)",
  'echo "$(rm x)"',
  "`rm x`",
  "echo ${x:-$(rm y)}",
  "diff <(ls) <(rm x)",
  "echo x; rm -- -rf",
  "rm -- x",
  "\\rm x",
  "r\\m x",
  '"rm" x',
  "'r'm x",
  "$'\\x72m' x",
  "{rm,-rf,x}",
  "command rm x",
  "builtin rm x",
  "env -i rm x",
  "env -S 'rm x'",
  "sudo -u root rm x",
  "sudo -Eu root rm x",
  "doas rm x",
  "/bin/rm x",
  "./rm x",
  "busybox rm x",
  "git clean -fdx",
  "git -C sub clean -fd",
  "unlink x",
  "shred x",
  'eval "rm x"',
  "eval rm x",
  "timeout 5 rm x",
  "timeout -s KILL 5 rm x",
  "nice -n 5 rm x",
  "nohup rm -rf x &",
  "time rm x",
  "stdbuf -oL rm x",
  "watch -n 1 rm x",
  "exec rm x",
  "true && rm x",
  "false || rm x",
  "ls\nrm x",
  "ls # fine\nrm x",
  "(rm x)",
  "( cd src; rm x )",
  "{ rm x; }",
  "if true; then rm x; fi",
  'while read f; do rm "$f"; done < list',
  "for f in *.tmp; do rm $f; done",
  "f() { rm x; }; f",
  "case $x in a) rm x;; esac",
  "cat <<EOF\n$(rm x)\nEOF",
  "ls | tee >(rm x)",
  "su -c 'rm x'",
  "sh -c \"sh -c 'rm x'\"",
];

/** Commands that mention rm or deletes but delete nothing: never refused. */
const lookAlikes = [
  "echo rm -rf x",
  "printf '%s\\n' 'rm x'",
  "grep rm file",
  "grep -r 'rm -rf' .",
  "npm run rm-cache",
  "cat rm.txt",
  "ls ./rm-me",
  "man rm",
  "command -v rm",
  "which rm",
  "echo 'rm -rf x' > notes.txt",
  "echo x # rm y",
  "# rm -rf x",
  "cat <<'EOF'\nrm -rf x\nEOF",
  "case $x in rm) echo matched;; esac",
  "git clean -n",
  "git clean --dry-run -d",
  "rmdir empty-dir",
  "find . -name '*.ts'",
];

describe("F4: permanent deletes in shell commands", () => {
  it.each(refused)("F4: refuses %j in Manual and Auto, allows it in Full Access", (command) => {
    for (const mode of ["manual", "auto"] as const) {
      const verdict = judgeBash(mode, command);
      expect(verdict.decision, `${mode}: ${command}`).toBe("deny");
      if (verdict.decision === "deny") expect(verdict.reason).toContain("use the delete tool, which moves files to the trash");
    }
    expect(judgeBash("full_access", command)).toEqual({ decision: "allow", network: true });
    expect(findPermanentDelete(command), command).not.toBeNull();
  });

  it.each(lookAlikes)("F4: does not refuse the look-alike %j", (command) => {
    for (const mode of ["manual", "auto"] as const) expect(judgeBash(mode, command).decision, `${mode}: ${command}`).not.toBe("deny");
    expect(findPermanentDelete(command), command).toBeNull();
  });

  it("F4: a program only known at run time asks rather than passing silently", () => {
    for (const command of [
      "$RM -rf x",
      "rm$IFS-rf x",
      "${CMD:-rm} x",
      "echo 'rm x' | sh",
      ". <(echo rm x)",
      'eval "$SCRIPT"',
      'bash -c "$SCRIPT"',
    ]) {
      expect(judgeBash("auto", command).decision, command).toBe("ask");
    }
  });
});
