import { unwrap } from "./api-result.js";
import type { Approval, FoyaApi } from "./api-types.js";

export interface ApprovalListQuery {
  status?: Approval["status"];
  sessionId?: string;
  runId?: string;
  /** At most this many, newest first (100, up to 500). */
  limit?: number;
}

export interface ApproveOptions {
  reason?: string;
  /**
   * Run the call with these arguments instead of the model's. The service validates them
   * against the tool's schema and judges them again (400 if invalid or denied by policy); the
   * call keeps the model's arguments in history and the approval records the edit.
   */
  editedArguments?: Record<string, unknown>;
}

export interface ApprovalsApi {
  /** The tenant's approvals, newest first; `{ status: "pending" }` for what waits on a decision. */
  list(query?: ApprovalListQuery): Promise<Approval[]>;
  get(approvalId: string): Promise<Approval>;
  /** The first decision stands: a later one answers 409 (`FoyaApiError.current` is the approval). */
  approve(approvalId: string, options?: ApproveOptions): Promise<Approval>;
  deny(approvalId: string, options?: { reason?: string }): Promise<Approval>;
}

export function createApprovalsApi(api: FoyaApi): ApprovalsApi {
  const decide = async (approvalId: string, body: { decision: "approve" | "deny"; reason?: string; arguments?: Record<string, unknown> }) =>
    unwrap(await api.POST("/v1/approvals/{id}", { params: { path: { id: approvalId } }, body }));
  return {
    async list(query = {}) {
      return unwrap(await api.GET("/v1/approvals", { params: { query } })).approvals;
    },
    async get(approvalId) {
      return unwrap(await api.GET("/v1/approvals/{id}", { params: { path: { id: approvalId } } }));
    },
    approve: (approvalId, options = {}) =>
      decide(approvalId, {
        decision: "approve",
        ...(options.reason !== undefined ? { reason: options.reason } : {}),
        ...(options.editedArguments !== undefined ? { arguments: options.editedArguments } : {}),
      }),
    deny: (approvalId, options = {}) =>
      decide(approvalId, { decision: "deny", ...(options.reason !== undefined ? { reason: options.reason } : {}) }),
  };
}
