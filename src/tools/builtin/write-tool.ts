import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { displayDiff, recordFileChange, snapshotFile } from "../file-change.js";
import { defineTool, errorResult } from "../tool.js";
import { resolveToolPath } from "./tool-path.js";

interface WriteArgs {
  path: string;
  content: string;
}

/** Creates or replaces a text file; the change is recorded with both contents (F1) and a display diff (F2). */
export const writeTool = defineTool<WriteArgs>({
  name: "write",
  description: "Write a text file in the project workspace, creating parent folders; replaces the file if it exists.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "Path relative to the workspace root.", minLength: 1 },
      content: { type: "string", description: "The complete new content of the file." },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "write",
  approvalSubject: (args) => ({ kind: "path", path: args.path }),
  async previewDiff(context, args) {
    const resolved = await resolveToolPath(context, args.path);
    if (!resolved.ok || resolved.relative === ".") return null;
    const before = await snapshotFile(resolved.absolute).catch(() => null);
    if (!before) return null;
    return displayDiff(resolved.relative, before, { kind: "file", content: Buffer.from(args.content), mode: before.kind === "file" ? before.mode : 0o644 });
  },
  async run(context, args) {
    const resolved = await resolveToolPath(context, args.path);
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    if (resolved.relative === ".") return errorResult("is_directory", "Cannot write to the workspace root.");
    let before;
    try {
      before = await snapshotFile(resolved.absolute);
      await mkdir(path.dirname(resolved.absolute), { recursive: true });
      await writeFile(resolved.absolute, args.content, { signal: context.signal });
      if (before.kind === "file") await chmod(resolved.absolute, before.mode);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EISDIR" || code === "ENOTFILE") return errorResult("is_directory", `"${args.path}" is not a regular file.`);
      return errorResult("write_failed", `Could not write "${args.path}": ${code ?? (error as Error).message}`);
    }
    const change = await recordFileChange(context, resolved.relative, before, await snapshotFile(resolved.absolute));
    const verb = before.kind === "file" ? "Updated" : "Created";
    return {
      content: [{ type: "text", text: `${verb} ${resolved.relative} (${Buffer.byteLength(args.content)} bytes).` }],
      displayDiff: change.diff,
      fileChanges: [change],
    };
  },
});
