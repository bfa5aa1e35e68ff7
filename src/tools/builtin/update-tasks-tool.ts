import { z } from "zod";
import { defineTool, textResult } from "../tool.js";

/** Keeps the session's task list: the whole list each time, stored and announced to clients. */
export const updateTasksTool = defineTool({
  name: "update_tasks",
  description:
    "Replace the session's task list (each task a title and a status: pending, in_progress or done). Send the whole list every time.",
  parameters: z
    .object({
      tasks: z.array(z.object({ title: z.string().min(1).max(500), status: z.enum(["pending", "in_progress", "done"]) }).strict()).max(100),
    })
    .strict(),
  exposure: "direct",
  // Touches only the session's own task list, nothing outside it: judged like a read.
  sideEffect: "read",
  async run(context, args) {
    await context.tasks.replace(args.tasks);
    const done = args.tasks.filter((task) => task.status === "done").length;
    return textResult(`Task list saved: ${args.tasks.length} tasks, ${done} done.`);
  },
});
