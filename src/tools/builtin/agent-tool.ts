import { z } from "zod";
import { defineTool, errorResult } from "../tool.js";

export const agentToolName = "agent";

/**
 * Delegates a task to a sub-agent (SPEC A1): a child run in its own session, with the
 * same or fewer tools, the same or a stricter mode, one level deeper. The call waits
 * without holding a worker; the child's final answer is its result. The child's own
 * calls go through the approval gateway under its own (never wider) mode, so starting
 * one is itself harmless: it is classed `read` and may run in parallel with others.
 */
export const agentTool = defineTool({
  name: agentToolName,
  description:
    "Start a sub-agent on a self-contained task. It works in the same workspace with your tools (or the subset you name) and returns its final answer as this call's result. Give it everything it needs in `task`: it does not see this conversation.",
  parameters: z
    .object({
      task: z.string().min(1).max(100_000).describe("The task, complete with the context the sub-agent needs."),
      tools: z
        .array(z.string().min(1))
        .max(500)
        // zod has no uniqueItems: the refinement holds zod to it, the metadata puts it in the JSON Schema.
        .refine((names) => new Set(names).size === names.length, "tool names must be unique")
        .meta({ uniqueItems: true })
        .describe("Tool names the sub-agent may use; only tools you may use. Default: the same as yours.")
        .optional(),
      readOnly: z.boolean().describe("Limit the sub-agent to tools that only read.").optional(),
      approvalMode: z.enum(["manual", "auto", "full_access"]).describe("Never wider than your own; default: yours.").optional(),
      instructions: z.string().max(100_000).describe("A system prompt for the sub-agent.").optional(),
    })
    .strict(),
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
