import { defineTool, textResult } from "../tool.js";

interface UpdateTasksArgs {
  tasks: Array<{ title: string; status: "pending" | "in_progress" | "done" }>;
}

/** Keeps the session's task list: the whole list each time, stored and announced to clients. */
export const updateTasksTool = defineTool<UpdateTasksArgs>({
  name: "update_tasks",
  description:
    "Replace the session's task list (each task a title and a status: pending, in_progress or done). Send the whole list every time.",
  parameters: {
    type: "object",
    properties: {
      tasks: {
        type: "array",
        maxItems: 100,
        items: {
          type: "object",
          properties: {
            title: { type: "string", minLength: 1, maxLength: 500 },
            status: { type: "string", enum: ["pending", "in_progress", "done"] },
          },
          required: ["title", "status"],
          additionalProperties: false,
        },
      },
    },
    required: ["tasks"],
    additionalProperties: false,
  },
  exposure: "direct",
  // Touches only the session's own task list, nothing outside it: judged like a read.
  sideEffect: "read",
  async run(context, args) {
    await context.tasks.replace(args.tasks);
    const done = args.tasks.filter((task) => task.status === "done").length;
    return textResult(`Task list saved: ${args.tasks.length} tasks, ${done} done.`);
  },
});
