import { lstatSync, readdirSync, unlinkSync } from "node:fs";
import path from "node:path";
import { childPath, rootPath, viaDescriptorBytes, type EntryPath } from "../../workspace/entry-path.js";
import { openFolderHandles } from "../../workspace/folder-handles.js";
import { projectTrashRoot, trashPlacer } from "../../workspace/project-trash.js";
import { removeLayerFolder, type CallLayerMeta } from "./call-layers.js";

/**
 * The last resort for a layer that could not be settled again and again (SPEC
 * X7): its upper folder goes whole into the project's trash, under
 * `.interrupted-<call>` in the workspace, so what the command wrote can still be
 * looked at and restored, and the project's later calls are no longer held
 * back by it. Whiteouts (device nodes) are dropped first: the trash restores
 * into the workspace, and no device node may reach it.
 */
export async function setLayerAside(dir: string, meta: CallLayerMeta, workspacesDir: string): Promise<void> {
  const upperDir = path.join(dir, "upper");
  const upper = openFolderHandles(upperDir);
  try {
    const stack: EntryPath[] = [rootPath];
    while (stack.length > 0) {
      const folder = stack.pop() as EntryPath;
      const fd = upper.folder(folder);
      if (fd === null) continue;
      for (const name of readdirSync(viaDescriptorBytes(fd), { encoding: "buffer" })) {
        const at = viaDescriptorBytes(fd, name);
        const stats = lstatSync(at, { throwIfNoEntry: false });
        if (stats?.isCharacterDevice() && stats.rdev === 0) unlinkSync(at);
        else if (stats?.isDirectory()) stack.push(childPath(folder, name));
      }
    }
  } finally {
    upper.close();
  }
  trashPlacer(projectTrashRoot(workspacesDir, meta.workspaceDir)).place(
    upperDir,
    path.join(meta.workspaceDir, `.interrupted-${meta.toolCallId}`),
  );
  await removeLayerFolder(dir);
}
