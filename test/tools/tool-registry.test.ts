import { describe, expect, it } from "vitest";
import { toAnthropicTools, toOpenAITools } from "../../src/providers/render-tool-schemas.js";
import { createToolRegistry } from "../../src/tools/tool-registry.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { defineTool, textResult, type AnyTool } from "../../src/tools/tool.js";
import { loadToolModules } from "../../src/tools/load-tool-modules.js";
import { testToolsModule } from "../helpers/test-env.js";

const tool = (name: string, extra: Partial<Parameters<typeof defineTool>[0]> = {}): AnyTool =>
  defineTool({
    name,
    description: `the ${name} tool`,
    parameters: { type: "object", properties: {} },
    exposure: "direct",
    sideEffect: "read",
    run: async () => textResult("ok"),
    ...extra,
  });

describe("tool registry", () => {
  it("T1: every built-in tool declares name, description, JSON Schema, exposure, side-effect class and run", () => {
    for (const builtin of builtinTools({ webFetchAllowPrivate: false })) {
      expect(builtin.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(builtin.description.length).toBeGreaterThan(10);
      expect(builtin.parameters).toMatchObject({ type: "object", additionalProperties: false });
      expect(["direct", "deferred", "hidden", "contextual"]).toContain(builtin.exposure);
      expect(["read", "write", "exec", "network", "other"]).toContain(builtin.sideEffect);
      expect(typeof builtin.run).toBe("function");
    }
  });

  it("R1: one registry holds built-ins and tools of other sources, and refuses a name twice", async () => {
    const extra = await loadToolModules([testToolsModule]);
    const registry = createToolRegistry([...builtinTools({ webFetchAllowPrivate: false }), ...extra]);
    expect(registry.list().map((t) => t.name)).toEqual([
      "agent",
      "bash",
      "command_cancel",
      "command_output",
      "command_status",
      "context_echo",
      "delete",
      "edit",
      "end_batch",
      "grep",
      "history_read_tool_result",
      "late_progress",
      "list",
      "make_image",
      "marker_sleep",
      "net_probe",
      "noop",
      "probe",
      "read",
      "rich_result",
      "show_diff",
      "tool_search",
      "update_tasks",
      "web_fetch",
      "write",
    ]);
    expect(() => createToolRegistry([tool("a"), tool("a")])).toThrow(/registered twice/);
    await expect(loadToolModules([new URL(import.meta.url).pathname])).rejects.toThrow(/does not export a "tools" array/);
  });

  it("R2: schemas are sorted by name and the same set serializes byte-identically, computed once", () => {
    const registry = createToolRegistry([tool("zeta"), tool("alpha"), tool("Mid"), tool("beta", { sideEffect: "write" })]);
    const session = { toolAllowList: null, runMode: "normal" as const };
    const first = registry.schemasFor(registry.exposedFor(session));
    const second = registry.schemasFor(registry.exposedFor(session));
    expect(first.map((s) => s.name)).toEqual(["Mid", "alpha", "beta", "zeta"]);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    expect(second).toBe(first);
  });

  it("R2: OpenAI and Anthropic renderings are sorted, byte-identical for an unchanged set, and computed once", () => {
    const registry = createToolRegistry([
      tool("zeta"),
      tool("alpha", { parameters: { type: "object", properties: { q: { type: "string" } } } }),
    ]);
    const session = { toolAllowList: null, runMode: "normal" as const };
    const first = registry.schemasFor(registry.exposedFor(session));
    const second = registry.schemasFor(registry.exposedFor(session));
    expect(toOpenAITools(second)).toBe(toOpenAITools(first));
    expect(toAnthropicTools(second)).toBe(toAnthropicTools(first));
    expect(JSON.stringify(toOpenAITools(first))).toBe(
      '[{"type":"function","function":{"name":"alpha","description":"the alpha tool","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}},' +
        '{"type":"function","function":{"name":"zeta","description":"the zeta tool","parameters":{"type":"object","properties":{}}}}]',
    );
    expect(JSON.stringify(toAnthropicTools(first))).toBe(
      '[{"name":"alpha","description":"the alpha tool","input_schema":{"type":"object","properties":{"q":{"type":"string"}}}},' +
        '{"name":"zeta","description":"the zeta tool","input_schema":{"type":"object","properties":{}}}]',
    );
  });

  it("R3, R4: exposure, allow-list and run mode narrow what a step sends", () => {
    const registry = createToolRegistry([
      tool("direct_read"),
      tool("direct_write", { sideEffect: "write" }),
      tool("later", { exposure: "deferred" }),
      tool("secret", { exposure: "hidden" }),
    ]);
    const names = (session: { toolAllowList: string[] | null; runMode: "normal" | "read_only" }) =>
      registry.exposedFor(session).map((t) => t.name);
    expect(names({ toolAllowList: null, runMode: "normal" })).toEqual(["direct_read", "direct_write"]);
    expect(names({ toolAllowList: ["direct_write", "secret"], runMode: "normal" })).toEqual(["direct_write"]);
    expect(names({ toolAllowList: null, runMode: "read_only" })).toEqual(["direct_read"]);
  });
});
