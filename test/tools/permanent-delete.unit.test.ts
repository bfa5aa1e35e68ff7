import { describe, expect, it } from "vitest";
import { findPermanentDelete } from "../../src/tools/shell/permanent-delete.js";

describe("permanent deletes in shell commands", () => {
  const refused = [
    "rm file.txt",
    "rm -rf build",
    "/bin/rm -r x",
    "FOO=1 rm -rf x",
    "sudo rm -rf /tmp/x",
    "env -i rm x",
    "echo x && rm -r y",
    "ls; rm x",
    "true || rm x",
    "cat list | xargs rm",
    "cat list | xargs -n 1 rm -f",
    "sh -c 'rm -rf x'",
    'bash -lc "cd src && rm -r dist"',
    "echo $(rm x)",
    "find . -name '*.o' -delete",
    "find . -type f -exec rm {} +",
    "find . -execdir shred -u {} ;",
    "git clean -fdx",
    "shred -u secret.txt",
    "unlink a",
    "rm -- -rf",
    "timeout 5 rm -rf x",
    "nohup rm -rf x &",
    "eval 'rm -rf x'",
  ];
  const allowed = [
    "ls -la",
    "echo rm -rf x",
    "grep -r 'rm -rf' .",
    "git status && git diff",
    "npm test",
    "find . -name '*.ts'",
    "cat rm.txt",
    "mkdir -p build && cp a b",
    "echo 'sh -c rm' > notes.txt",
  ];

  it("F4: refuses permanent-delete commands and the usual ways of wrapping them", () => {
    for (const command of refused) expect(findPermanentDelete(command), command).not.toBeNull();
  });

  it("F4: lets ordinary commands through, even when they mention rm", () => {
    for (const command of allowed) expect(findPermanentDelete(command), command).toBeNull();
  });
});
