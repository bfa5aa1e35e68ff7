import { unwrap } from "./api-result.js";
import type { Branch, BranchPoint, FoyaApi, Forked, Message, RewindPoint, Rewound } from "./api-types.js";

export interface SessionsApi {
  /** The session's history as the model sees it (set-aside branches left out), oldest first. */
  messages(sessionId: string): Promise<Message[]>;
  /**
   * A new session in a new project from a point of this session's committed history, with the
   * workspace as it stood there; no tool runs again. `notUndone` lists the calls after the point
   * whose effects no checkpoint takes back (network, MCP, background commands, ...).
   */
  fork(sessionId: string, at: BranchPoint): Promise<Forked>;
  /**
   * Takes an idle session back to a point: what followed becomes a branch, the workspace returns
   * to the point before the next batch. `{ branchId }` brings a branch back (undoes a rewind);
   * a user message's `messageId` goes to just before its run ("edit and resend": rewind, then
   * `runs.start` with the new text). A busy session, or a point nothing follows, is a 409.
   */
  rewind(sessionId: string, at: RewindPoint): Promise<Rewound>;
  /** What rewinds of this session set aside, newest first; a branch brought back has `restoredAt`. */
  branches(sessionId: string): Promise<Branch[]>;
  /** The messages a rewind set aside as this branch, in history order (read-only). */
  branchMessages(sessionId: string, branchId: string): Promise<Message[]>;
}

export function createSessionsApi(api: FoyaApi): SessionsApi {
  const path = (id: string) => ({ params: { path: { id } } });
  return {
    async messages(sessionId) {
      return unwrap(await api.GET("/v1/sessions/{id}/messages", path(sessionId))).messages;
    },
    async fork(sessionId, at) {
      return unwrap(await api.POST("/v1/sessions/{id}/fork", { ...path(sessionId), body: { at } }));
    },
    async rewind(sessionId, at) {
      return unwrap(await api.POST("/v1/sessions/{id}/rewind", { ...path(sessionId), body: { at } }));
    },
    async branches(sessionId) {
      return unwrap(await api.GET("/v1/sessions/{id}/branches", path(sessionId))).branches;
    },
    async branchMessages(sessionId, branchId) {
      const params = { params: { path: { id: sessionId, branchId } } };
      return unwrap(await api.GET("/v1/sessions/{id}/branches/{branchId}/messages", params)).messages;
    },
  };
}
