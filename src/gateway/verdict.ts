import type { ApprovalPolicy } from "../core/policy.js";
import type { ApprovalSubject, SideEffect } from "../core/tool-contract.js";
import type { ApprovalMode } from "../core/session.js";

/**
 * The approval gateway's answer for one call (SPEC S1, S2). It says whether the
 * call may run; the sandbox runner (S3) separately limits what an allowed
 * process can reach. `network` tells the sandbox the call needs the network:
 * granted when policy allows it, or when a human approved the call.
 */
export type Verdict =
  | { decision: "allow"; network: boolean }
  | { decision: "ask"; reason: string; network: boolean }
  | { decision: "deny"; reason: string };

export interface JudgeInput {
  mode: ApprovalMode;
  tool: { name: string; sideEffect: SideEffect };
  /** From the tool's `approvalSubject(args)`; arguments are already parsed and schema-valid. */
  subject: ApprovalSubject;
  /** Absolute real path of the project's workspace. */
  workspaceDir: string;
  /** Tenant policy, then project policy; rules of both apply. */
  policies: readonly ApprovalPolicy[];
}
