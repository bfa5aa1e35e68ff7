/**
 * Approval policy set per tenant and per project (SPEC S2, S4). Rules refine the
 * session's approval mode: `deny`, then `ask`, then `allow`, first match wins.
 * A rule is a tool name or glob (`web_fetch`, `mcp__github__*`) optionally
 * followed by an argument pattern in parentheses: `bash(npm test*)`, `write(src/**)`.
 */
export interface PolicyRules {
  allow?: string[];
  ask?: string[];
  deny?: string[];
}

export interface ApprovalPolicy {
  rules?: PolicyRules;
  /** How long a pending approval waits before it expires and counts as denied. */
  approvalTtlSeconds?: number;
  /** Lets sandboxed processes use the network without asking. */
  network?: boolean;
}
