import { defineTool, errorResult, type SubAgentRequest } from "../tool.js";

export const agentToolName = "agent";

/**
 * Delegates a task to a sub-agent (SPEC A1): a child run in its own session, with the
 * same or fewer tools, the same or a stricter mode, one level deeper. The call waits
 * without holding a worker; the child's final answer is its result. The child's own
 * calls go through the approval gateway under its own (never wider) mode, so starting
 * one is itself harmless: it is classed `read` and may run in parallel with others.
 */
export const agentTool = defineTool<SubAgentRequest>({
  name: agentToolName,
  description:
    "Start a sub-agent on a self-contained task. It works in the same workspace with your tools (or the subset you name) and returns its final answer as this call's result. Give it everything it needs in `task`: it does not see this conversation.",
  parameters: {
    type: "object",
    properties: {
      task: { type: "string", minLength: 1, maxLength: 100_000, description: "The task, complete with the context the sub-agent needs." },
      tools: {
        type: "array",
        items: { type: "string", minLength: 1 },
        uniqueItems: true,
        maxItems: 500,
        description: "Tool names the sub-agent may use; only tools you may use. Default: the same as yours.",
      },
      readOnly: { type: "boolean", description: "Limit the sub-agent to tools that only read." },
      approvalMode: { type: "string", enum: ["manual", "auto", "full_access"], description: "Never wider than your own; default: yours." },
      instructions: { type: "string", maxLength: 100_000, description: "A system prompt for the sub-agent." },
    },
    required: ["task"],
    additionalProperties: false,
  },
  exposure: "direct",
  sideEffect: "read",
  parallel: true,
  async run(context, args) {
    const started = await context.subagents.start(args);
    if (!started.ok) return errorResult(started.errorCode, started.message);
    return {
      content: [{ type: "text", text: `Sub-agent started in session ${started.childSessionId} (run ${started.childRunId}).` }],
      awaitChildRun: started.childRunId,
    };
  },
});
