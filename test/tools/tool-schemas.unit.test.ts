import { Ajv } from "ajv";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { toAnthropicTools, toOpenAITools } from "../../src/providers/render-tool-schemas.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { createToolExecutor } from "../../src/tools/execute-tool-call.js";
import { createToolRegistry } from "../../src/tools/tool-registry.js";
import { type AnyTool, defineTool, textResult, toolParameters } from "../../src/tools/tool.js";

/**
 * Built-in tools define their arguments once, in zod; the JSON Schema the model sees is derived
 * from it. These tests hold the derived schemas to SPEC R2 (the same bytes every step,
 * in every process) and to what the hand-written schemas they replaced accepted and refused (T5).
 */

const snapshotFile = "./__snapshots__/builtin-tool-schemas.json.snap";

/** What a step sends for every built-in tool, and both provider wire formats of it, as strings. */
function render(tools: readonly AnyTool[], renderers: { openAI: typeof toOpenAITools; anthropic: typeof toAnthropicTools }) {
  const registry = createToolRegistry(tools);
  const schemas = registry.schemasFor(registry.list());
  return {
    schemas: JSON.stringify(schemas),
    openAI: JSON.stringify(renderers.openAI(schemas)),
    anthropic: JSON.stringify(renderers.anthropic(schemas)),
    pretty: `${JSON.stringify(schemas, null, 2)}\n`,
  };
}

const allBuiltins = () => builtinTools({ webFetchAllowPrivate: false });

describe("built-in tool schemas derived from zod", () => {
  it("R2: tool schemas derived from zod render byte-identically across steps, module loads and derivations, and as committed", async () => {
    const renderers = { openAI: toOpenAITools, anthropic: toAnthropicTools };
    const first = render(allBuiltins(), renderers);

    // Step after step in one process: the same exposed set, the same cached list, the same bytes.
    const registry = createToolRegistry(allBuiltins());
    const scope = { toolAllowList: null, runMode: "normal" as const };
    const stepOne = registry.schemasFor(registry.exposedFor(scope, [], ["history_read_tool_result"]));
    const stepTwo = registry.schemasFor(registry.exposedFor(scope, [], ["history_read_tool_result"]));
    expect(stepTwo).toBe(stepOne);
    expect(JSON.stringify(toOpenAITools(stepTwo))).toBe(JSON.stringify(toOpenAITools(stepOne)));
    expect(JSON.stringify(toAnthropicTools(stepTwo))).toBe(JSON.stringify(toAnthropicTools(stepOne)));

    // A second set of tool objects (web_fetch is built per call), and a fresh load of every
    // module, as another worker process would: every schema derived again, the same bytes.
    expect(render(allBuiltins(), renderers)).toEqual(first);
    vi.resetModules();
    const fresh = await import("../../src/tools/builtin-tools.js");
    const freshRenderers = await import("../../src/providers/render-tool-schemas.js");
    const freshTools = fresh.builtinTools({ webFetchAllowPrivate: false });
    expect(freshTools.find((tool) => tool.name === "read")).not.toBe(allBuiltins().find((tool) => tool.name === "read"));
    const again = render(freshTools, { openAI: freshRenderers.toOpenAITools, anthropic: freshRenderers.toAnthropicTools });
    expect(again.schemas).toBe(first.schemas);
    expect(again.openAI).toBe(first.openAI);
    expect(again.anthropic).toBe(first.anthropic);

    // Deriving from the same zod schema again gives the same bytes, and the derived schema cannot be changed in place.
    for (const tool of allBuiltins()) {
      expect(tool.argumentsSchema, `${tool.name} is defined in zod`).toBeDefined();
      expect(JSON.stringify(toolParameters(tool.argumentsSchema as z.ZodObject)), tool.name).toBe(JSON.stringify(tool.parameters));
      expect(Object.isFrozen(tool.parameters) && Object.isFrozen(tool.parameters.properties), tool.name).toBe(true);
    }

    // Any change to a tool's schema, its wording or its key order shows up as a diff of this file.
    await expect(first.pretty).toMatchFileSnapshot(snapshotFile);
  });

  it("T1: a derived schema is a clean draft-07 object: no $schema, no safe-integer bounds, strict, no defaults or transforms", () => {
    const json = toolParameters(
      z.object({ n: z.int().optional(), m: z.int().min(0).max(5).describe("m"), s: z.enum(["a", "b"]).optional() }).strict(),
    );
    expect(JSON.stringify(json)).toBe(
      '{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"integer","minimum":0,"maximum":5,"description":"m"},' +
        '"s":{"type":"string","enum":["a","b"]}},"required":["m"],"additionalProperties":false}',
    );
    expect(() => toolParameters(z.object({ a: z.string() }).loose())).toThrow(/strict z\.object/);
    expect(() => toolParameters(z.object({ a: z.string().default("x") }).strict())).toThrow(/default or transform/);
    expect(() => toolParameters(z.object({ a: z.string().transform((s) => s.length) }).strict())).toThrow(
      /Transforms cannot be represented/,
    );
    const tool = defineTool({
      name: "typed",
      description: "a zod-defined tool",
      parameters: z.object({ q: z.string().min(1) }).strict(),
      exposure: "direct",
      sideEffect: "read",
      run: async (_context, args) => textResult(args.q),
    });
    expect(tool.parameters).toEqual({
      type: "object",
      properties: { q: { type: "string", minLength: 1 } },
      required: ["q"],
      additionalProperties: false,
    });
  });

  it("T5: each built-in tool's derived schema accepts and refuses the same sample arguments as its hand-written one, and zod agrees", () => {
    const registry = createToolRegistry(allBuiltins());
    expect(Object.keys(samples).sort()).toEqual(registry.list().map((tool) => tool.name));
    // Ajv as the executor configures it: it enforces the derived JSON Schema before `run`.
    const ajv = new Ajv({ allErrors: true, strict: false });
    for (const tool of registry.list()) {
      const validate = ajv.compile(tool.parameters);
      const zod = tool.argumentsSchema as z.ZodObject;
      const { valid, invalid } = samples[tool.name] as Samples;
      for (const args of valid) {
        expect(validate(args), `${tool.name} accepts ${JSON.stringify(args)}: ${ajv.errorsText(validate.errors)}`).toBe(true);
        expect(zod.safeParse(args).success, `zod: ${tool.name} accepts ${JSON.stringify(args)}`).toBe(true);
      }
      for (const args of [...invalid, ...refusedByEveryTool]) {
        expect(validate(args), `${tool.name} refuses ${JSON.stringify(args).slice(0, 200)}`).toBe(false);
        expect(zod.safeParse(args).success, `zod: ${tool.name} refuses ${JSON.stringify(args).slice(0, 200)}`).toBe(false);
      }
    }
  });

  it("T4, T5: a call breaking a derived schema gets an invalid_arguments result naming what is wrong, never a throw", async () => {
    const executor = createToolExecutor(createToolRegistry(allBuiltins()));
    const cases: Array<[name: string, argumentsRaw: string, message: RegExp]> = [
      ["read", '{"path": 42}', /\/path must be string/],
      ["read", '{"offset": 2}', /must have required property 'path'/],
      ["read", '{"path": "a", "mode": "fast"}', /must NOT have additional properties/],
      ["read", '{"path": "a", "offset": 0}', /\/offset must be >= 1/],
      ["bash", '{"command": "ls", "timeoutMs": 1.5}', /\/timeoutMs must be integer/],
      ["agent", '{"task": "x", "tools": ["read", "read"]}', /\/tools must NOT have duplicate items/],
      ["update_tasks", '{"tasks": [{"title": "x", "status": "maybe"}]}', /\/tasks\/0\/status must be equal to one of the allowed values/],
      ["web_fetch", JSON.stringify({ url: "x".repeat(4001) }), /\/url must NOT have more than 4000 characters/],
    ];
    for (const [name, argumentsRaw, message] of cases) {
      const parsed = executor.parse({ callId: "c", name, argumentsRaw });
      expect(parsed.ok, `${name} ${argumentsRaw}`).toBe(false);
      if (!parsed.ok) expect(parsed.message, `${name} ${argumentsRaw}`).toMatch(message);
    }
  });
});

interface Samples {
  valid: unknown[];
  invalid: unknown[];
}

/** Not an arguments object at all, or one with a property no built-in tool has. */
const refusedByEveryTool: unknown[] = [null, [], "read", 42, { unexpected: [1, 2] }];

const long = (length: number) => "x".repeat(length);

/**
 * Per tool, arguments its hand-written JSON Schema accepted and refused (checked against those
 * schemas when they were replaced); the derived schema must judge them the same.
 */
const samples: Record<string, Samples> = {
  agent: {
    valid: [
      { task: "x" },
      { task: long(100_000), tools: ["read", "bash"], readOnly: true, approvalMode: "manual", instructions: "" },
      { task: "x", tools: [], approvalMode: "full_access", instructions: long(100_000) },
    ],
    invalid: [
      {},
      { task: "" },
      { task: long(100_001) },
      { task: "x", tools: ["read", "read"] },
      { task: "x", tools: [""] },
      { task: "x", tools: Array.from({ length: 501 }, (_, i) => `t${i}`) },
      { task: "x", tools: "read" },
      { task: "x", readOnly: "yes" },
      { task: "x", approvalMode: "root" },
      { task: "x", instructions: long(100_001) },
    ],
  },
  bash: {
    valid: [{ command: "ls" }, { command: "ls", timeoutMs: 100, background: false }, { command: long(100_000), timeoutMs: 600_000 }],
    invalid: [
      { command: "" },
      { command: 1 },
      { command: long(100_001) },
      { command: "ls", timeoutMs: 99 },
      { command: "ls", timeoutMs: 600_001 },
      { command: "ls", timeoutMs: 1.5 },
      { command: "ls", background: "yes" },
      { timeoutMs: 1000 },
    ],
  },
  command_cancel: {
    valid: [{ id: "cmd_1" }, { id: long(64) }],
    invalid: [{}, { id: "" }, { id: long(65) }, { id: 1 }],
  },
  command_output: {
    valid: [{ id: "cmd_1" }, { id: "cmd_1", offset: 0, tail: 10_000 }, { id: "cmd_1", tail: 1 }],
    invalid: [
      { offset: 1 },
      { id: "cmd_1", offset: -1 },
      { id: "cmd_1", offset: 1.5 },
      { id: "cmd_1", tail: 0 },
      { id: "cmd_1", tail: 10_001 },
    ],
  },
  command_status: {
    valid: [{ id: "cmd_1" }],
    invalid: [{}, { id: "" }, { id: long(65) }, { id: "cmd_1", offset: 1 }],
  },
  delete: {
    valid: [{ path: "a" }, { path: long(4096) }],
    invalid: [{}, { path: "" }, { path: long(4097) }, { path: "a", recursive: true }],
  },
  edit: {
    valid: [
      { path: "a", old_string: "x", new_string: "" },
      { path: "a", old_string: "x", new_string: "y", replace_all: true },
    ],
    invalid: [
      { path: "a", old_string: "", new_string: "b" },
      { path: "a", old_string: "x" },
      { path: "", old_string: "x", new_string: "y" },
      { path: "a", old_string: "x", new_string: "y", replace_all: "yes" },
    ],
  },
  grep: {
    valid: [{ pattern: "a" }, { pattern: long(1000), glob: "**/*.ts", ignoreCase: true }],
    invalid: [{}, { pattern: "" }, { pattern: long(1001) }, { pattern: "a", glob: "" }, { glob: "**" }, { pattern: "a", ignoreCase: 1 }],
  },
  history_read_tool_result: {
    valid: [
      { reference: "res_1_0_0", operation: "inspect" },
      {
        reference: long(100),
        operation: "search",
        startLine: 1,
        endLine: 2,
        startByte: 0,
        endByte: 0,
        pattern: "x",
        regex: true,
        ignoreCase: false,
        contextLines: 20,
      },
    ],
    invalid: [
      { reference: "res_1_0_0" },
      { reference: "res_1_0_0", operation: "peek" },
      { reference: "", operation: "read" },
      { reference: long(101), operation: "read" },
      { reference: "r", operation: "read", startLine: 0 },
      { reference: "r", operation: "read", endLine: 1.5 },
      { reference: "r", operation: "read", startByte: -1 },
      { reference: "r", operation: "search", pattern: "" },
      { reference: "r", operation: "search", pattern: long(1001) },
      { reference: "r", operation: "search", contextLines: 21 },
    ],
  },
  list: {
    valid: [{}, { pattern: "src/**/*.ts", path: "src" }],
    invalid: [{ pattern: "" }, { pattern: long(1001) }, { path: "" }, { path: long(4097) }, { path: 1 }],
  },
  read: {
    valid: [{ path: "a" }, { path: "a", offset: 1, limit: 10_000 }, { path: "a", offset: 1_000_000 }],
    invalid: [
      { offset: 1 },
      { path: 42 },
      { path: "a", offset: 0 },
      { path: "a", limit: 0 },
      { path: "a", limit: 10_001 },
      { path: "a", mode: "fast" },
    ],
  },
  tool_search: {
    valid: [{ query: "x" }, { query: long(500), limit: 20 }],
    invalid: [{}, { query: "" }, { query: long(501) }, { query: "x", limit: 0 }, { query: "x", limit: 21 }, { query: "x", limit: 2.5 }],
  },
  update_tasks: {
    valid: [
      { tasks: [] },
      {
        tasks: [
          { title: "a", status: "in_progress" },
          { title: long(500), status: "done" },
        ],
      },
    ],
    invalid: [
      {},
      { tasks: [{ title: "a", status: "maybe" }] },
      { tasks: [{ title: "", status: "done" }] },
      { tasks: [{ title: long(501), status: "done" }] },
      { tasks: [{ title: "a" }] },
      { tasks: [{ title: "a", status: "done", note: "x" }] },
      { tasks: Array.from({ length: 101 }, () => ({ title: "a", status: "pending" })) },
    ],
  },
  web_fetch: {
    valid: [{ url: "https://example.com/" }, { url: long(4000) }],
    invalid: [{}, { url: "" }, { url: long(4001) }],
  },
  write: {
    valid: [
      { path: "a", content: "" },
      { path: long(4096), content: "x" },
    ],
    invalid: [{ path: "a" }, { content: "x" }, { path: "", content: "x" }, { path: "a", content: 1 }],
  },
};
