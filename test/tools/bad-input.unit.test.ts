import { mkdtemp, realpath } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { createToolExecutor } from "../../src/tools/execute-tool-call.js";
import { createToolRegistry } from "../../src/tools/tool-registry.js";
import { toolContext } from "../helpers/tool-context.js";

const registry = createToolRegistry(builtinTools({ webFetchAllowPrivate: false }));
const executor = createToolExecutor(registry);
let workspace: string;
beforeAll(async () => {
  workspace = await realpath(await mkdtemp(path.join(tmpdir(), "foya-bad-")));
});

/** Per tool, arguments that are wrong in a way only that tool's schema or checks catch. */
const specific: Record<string, Array<[args: string, code: string]>> = {
  agent: [
    ['{"task": ""}', "invalid_arguments"],
    ['{"task": "x", "approvalMode": "root"}', "invalid_arguments"],
    ['{"task": "x"}', "agent_unavailable"],
  ],
  bash: [
    ['{"command": ""}', "invalid_arguments"],
    ['{"command": "true", "timeoutMs": 10}', "invalid_arguments"],
  ],
  command_status: [['{"id": "cmd_missing"}', "unknown_command"]],
  command_output: [['{"id": "cmd_missing", "tail": 0}', "invalid_arguments"]],
  command_cancel: [['{"id": ""}', "invalid_arguments"]],
  delete: [
    ['{"path": "../x"}', "path_outside_workspace"],
    ['{"path": "."}', "protected_path"],
  ],
  edit: [
    ['{"path": "a", "old_string": "", "new_string": "b"}', "invalid_arguments"],
    ['{"path": "nope", "old_string": "a", "new_string": "b"}', "file_not_found"],
  ],
  grep: [['{"pattern": "(["}', "invalid_pattern"]],
  history_read_tool_result: [
    ['{"reference": "res_1_0_0", "operation": "peek"}', "invalid_arguments"],
    ['{"reference": "nonsense", "operation": "inspect"}', "unknown_reference"],
  ],
  list: [['{"pattern": "../**"}', "path_outside_workspace"]],
  read: [
    ['{"path": "/etc/passwd"}', "path_outside_workspace"],
    ['{"path": "a", "offset": 0}', "invalid_arguments"],
  ],
  tool_search: [['{"query": ""}', "invalid_arguments"]],
  update_tasks: [['{"tasks": [{"title": "x", "status": "maybe"}]}', "invalid_arguments"]],
  web_fetch: [
    ['{"url": "file:///etc/passwd"}', "unsupported_scheme"],
    ['{"url": "http://127.0.0.1:1/"}', "address_refused"],
  ],
  write: [
    ['{"path": "../escape.txt", "content": "x"}', "path_outside_workspace"],
    ['{"path": "a.txt"}', "invalid_arguments"],
  ],
};

describe("bad input to every built-in tool", () => {
  it("T5: every built-in tool has a bad-input table here", () => {
    expect(Object.keys(specific).sort()).toEqual(registry.list().map((tool) => tool.name));
  });

  it("T4, T5: unparseable, mistyped and tool-specific bad arguments give is_error results with stable codes, never a throw", async () => {
    for (const tool of registry.list()) {
      const context = toolContext({ workspaceDir: workspace, exposedTools: [tool.name] });
      const cases: Array<[string, string]> = [
        ["{not json", "invalid_arguments"],
        ['{"unexpected": [1, 2]}', "invalid_arguments"],
        ["[]", "invalid_arguments"],
        ...(specific[tool.name] ?? []),
      ];
      for (const [argumentsRaw, code] of cases) {
        const result = await executor.execute(context, { callId: "c", name: tool.name, argumentsRaw });
        expect(result.isError, `${tool.name} ${argumentsRaw}`).toBe(true);
        expect(result.errorCode, `${tool.name} ${argumentsRaw}`).toBe(code);
        expect(result.content[0]?.type === "text" && result.content[0].text.length > 10, `${tool.name} explains`).toBe(true);
      }
    }
  });
});
