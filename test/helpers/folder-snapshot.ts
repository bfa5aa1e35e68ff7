import { createHash } from "node:crypto";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import path from "node:path";

/**
 * A folder's tree as plain fs sees it, one line per entry in name order: path, kind, permission
 * bits, content digest or link target. What workspace tests compare a rebuilt folder with.
 */
export async function folderSnapshot(root: string): Promise<string[]> {
  const lines: string[] = [];
  const walk = async (relative: string) => {
    for (const name of (await readdir(path.join(root, relative))).sort()) {
      const rel = relative ? `${relative}/${name}` : name;
      const full = path.join(root, rel);
      const info = await lstat(full);
      const mode = (info.mode & 0o7777).toString(8);
      if (info.isSymbolicLink()) lines.push(`l ${rel} -> ${await readlink(full)}`);
      else if (info.isDirectory()) {
        lines.push(`d ${rel} ${mode}`);
        await walk(rel);
      } else
        lines.push(
          `f ${rel} ${mode} ${createHash("sha256")
            .update(await readFile(full))
            .digest("hex")}`,
        );
    }
  };
  await walk("");
  return lines;
}
