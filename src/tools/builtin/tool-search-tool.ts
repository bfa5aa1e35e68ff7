import { z } from "zod";
import { defineTool, textResult } from "../tool.js";

/**
 * Finds deferred tools and activates them for the rest of the turn (SPEC R5).
 * The description is stable and names no tool, so the prompt cache survives a
 * catalogue that changes.
 */
export const toolSearchTool = defineTool({
  name: "tool_search",
  description:
    "Search for more tools by describing what you want to do, or by a tool's exact name. Matching tools become callable from your next step in this turn.",
  parameters: z
    .object({
      query: z.string().min(1).max(500).describe("What you want to do, or a tool name."),
      limit: z.int().min(1).max(20).describe("Most tools to activate (default 5).").optional(),
    })
    .strict(),
  exposure: "direct",
  sideEffect: "read",
  parallel: true,
  async run(context, args) {
    const matches = context.deferredTools.search(args.query, args.limit ?? 5);
    if (matches.length === 0) return textResult(`No tool matches "${args.query}". Try other words.`);
    await context.deferredTools.activate(matches.map((tool) => tool.name));
    const lines = matches.map((tool) => `- ${tool.name}: ${tool.description}`);
    return textResult(`Activated for this turn; callable from your next step:\n${lines.join("\n")}`);
  },
});
