import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { defineTool, errorResult, textResult } from "../tool.js";
import { resolveWorkspacePath } from "../workspace-path.js";

interface WriteArgs {
  path: string;
  content: string;
}

/** Creates or replaces a text file in the workspace. File change records arrive with the full file tools. */
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
  async run(context, args) {
    const resolved = await resolveWorkspacePath(context.workspaceDir, args.path);
    if (!resolved.ok) return errorResult("path_outside_workspace", resolved.message);
    if (resolved.relative === ".") return errorResult("is_directory", "Cannot write to the workspace root.");
    try {
      await mkdir(path.dirname(resolved.absolute), { recursive: true });
      await writeFile(resolved.absolute, args.content, { signal: context.signal });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EISDIR") return errorResult("is_directory", `"${args.path}" is a directory.`);
      return errorResult("write_failed", `Could not write "${args.path}": ${code ?? (error as Error).message}`);
    }
    return textResult(`Wrote ${Buffer.byteLength(args.content)} bytes to ${resolved.relative}.`);
  },
});
