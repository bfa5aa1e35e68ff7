import { unwrap } from "./api-result.js";
import type { FileChange, FileChangeWithDiff, FoyaApi } from "./api-types.js";

export interface FileChangesApi {
  /** A session's file changes, oldest first. */
  list(sessionId: string): Promise<FileChange[]>;
  /** One change with its unified diff. */
  get(changeId: string): Promise<FileChangeWithDiff>;
  /** The unified diff of one change. */
  diff(changeId: string): Promise<string>;
  /**
   * Puts the file back as it was before the change; with `andLater`, this change and every
   * later one of its session, newest first. A file changed since, or a change already
   * reverted, answers 409 and nothing is touched. Answers what was reverted.
   */
  revert(changeId: string, options?: { andLater?: boolean }): Promise<FileChange[]>;
}

export function createFileChangesApi(api: FoyaApi): FileChangesApi {
  const get = async (changeId: string) => unwrap(await api.GET("/v1/file-changes/{id}", { params: { path: { id: changeId } } }));
  return {
    async list(sessionId) {
      return unwrap(await api.GET("/v1/sessions/{id}/file-changes", { params: { path: { id: sessionId } } })).fileChanges;
    },
    get,
    diff: async (changeId) => (await get(changeId)).diff,
    async revert(changeId, options = {}) {
      return unwrap(
        await api.POST("/v1/file-changes/{id}/revert", {
          params: { path: { id: changeId } },
          body: { andLater: options.andLater ?? false },
        }),
      ).reverted;
    },
  };
}
