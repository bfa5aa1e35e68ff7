import type { ShellFinding } from "./shell-finding.js";

/** Folders of installed programs: `/usr/bin/git` is git; a program named by any other path is a file the gateway cannot read. */
const systemProgramFolders: readonly string[] = ["/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"];

/** `./s.sh`, `bin/tool`, `~/x`: a program run from a file the gateway cannot read; installed programs are judged by name. */
export function programFileFinding(text: string): ShellFinding | null {
  if (!text.includes("/")) return null;
  if (systemProgramFolders.some((folder) => text.startsWith(folder) && !text.includes("/", folder.length))) return null;
  return { kind: "unknown", reason: `"${text}" runs a file whose commands cannot be judged` };
}
