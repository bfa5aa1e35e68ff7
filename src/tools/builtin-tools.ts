import type { AnyTool } from "./tool.js";
import { agentTool } from "./builtin/agent-tool.js";
import { bashTool } from "./builtin/bash-tool.js";
import { commandTools } from "./builtin/command-tools.js";
import { deleteTool } from "./builtin/delete-tool.js";
import { editTool } from "./builtin/edit-tool.js";
import { grepTool } from "./builtin/grep-tool.js";
import { historyReadTool } from "./builtin/history-read-tool.js";
import { listTool } from "./builtin/list-tool.js";
import { readTool } from "./builtin/read-tool.js";
import { toolSearchTool } from "./builtin/tool-search-tool.js";
import { updateTasksTool } from "./builtin/update-tasks-tool.js";
import { createWebFetchTool } from "./builtin/web-fetch-tool.js";
import { writeTool } from "./builtin/write-tool.js";

/** `agents: false` leaves out the sub-agent tool (A1). */
export function builtinTools(options: { webFetchAllowPrivate: boolean; agents?: boolean }): AnyTool[] {
  return [
    ...(options.agents === false ? [] : [agentTool]),
    bashTool,
    ...commandTools,
    deleteTool,
    editTool,
    grepTool,
    historyReadTool,
    listTool,
    readTool,
    toolSearchTool,
    updateTasksTool,
    createWebFetchTool({ allowPrivate: options.webFetchAllowPrivate }),
    writeTool,
  ];
}
