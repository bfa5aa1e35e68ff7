import { Ajv, type ValidateFunction } from "ajv";
import type { AnyTool, Tool, ToolCallInput, ToolContext, ToolResult } from "./tool.js";
import { errorResult } from "./tool.js";
import { storableText } from "../core/storable-text.js";
import type { ToolRegistry } from "./tool-registry.js";

/**
 * Runs one call: checks it may run in this Step, parses and validates its raw
 * arguments, runs the tool, and turns anything a tool throws into an is_error
 * result. Never throws for a tool's failure (T4, T5).
 */
export interface ToolExecutor {
  /** The tool and parsed, schema-valid arguments of a call, or why the call cannot run at all. */
  parse(call: ToolCallInput): { ok: true; tool: AnyTool; args: unknown } | { ok: false; message: string };
  /** Whether the call may join the parallel lane (P1); false for anything invalid. */
  isParallel(call: ToolCallInput): boolean;
  execute(context: ToolContext, call: ToolCallInput): Promise<ToolResult>;
}

export function createToolExecutor(registry: ToolRegistry): ToolExecutor {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validators = new Map<string, ValidateFunction>();
  const validatorFor = (tool: AnyTool): ValidateFunction => {
    let validate = validators.get(tool.name);
    if (!validate) {
      validate = ajv.compile(tool.parameters);
      validators.set(tool.name, validate);
    }
    return validate;
  };

  type Checked = { ok: true; tool: Tool<unknown>; args: unknown } | { ok: false; result: ToolResult };

  function check(context: Pick<ToolContext, "exposedTools"> | null, call: ToolCallInput): Checked {
    const tool = registry.get(call.name) as Tool<unknown> | undefined;
    if (!tool) return { ok: false, result: errorResult("unknown_tool", `No tool named "${call.name}" exists.`) };
    if (tool.exposure === "hidden") {
      return { ok: false, result: errorResult("tool_hidden", `The tool "${call.name}" cannot be called.`) };
    }
    if (context && tool.exposure === "deferred" && !context.exposedTools.includes(tool.name)) {
      return {
        ok: false,
        result: errorResult(
          "tool_not_active",
          `The tool "${call.name}" is not active in this turn. Call tool_search to find and activate it; it becomes callable from your next step.`,
        ),
      };
    }
    if (context && !context.exposedTools.includes(tool.name)) {
      return {
        ok: false,
        result: errorResult("tool_not_exposed", `The tool "${call.name}" was not offered in this step and cannot be called.`),
      };
    }
    let args: unknown;
    try {
      args = call.argumentsRaw.trim() === "" ? {} : JSON.parse(call.argumentsRaw);
    } catch (error) {
      return {
        ok: false,
        result: errorResult("invalid_arguments", `The arguments are not valid JSON: ${(error as Error).message}`),
      };
    }
    const validate = validatorFor(tool);
    if (!validate(args)) {
      const details = (validate.errors ?? []).map((e) => `${e.instancePath || "(root)"} ${e.message ?? "is invalid"}`).join("; ");
      return { ok: false, result: errorResult("invalid_arguments", `The arguments do not match the schema: ${details}`) };
    }
    return { ok: true, tool, args };
  }

  return {
    parse(call) {
      const checked = check(null, call);
      if (checked.ok) return { ok: true, tool: checked.tool as AnyTool, args: checked.args };
      const [first] = checked.result.content;
      return { ok: false, message: first?.type === "text" ? first.text : "the call is invalid" };
    },
    isParallel(call) {
      const checked = check(null, call);
      if (!checked.ok) return false;
      const { parallel } = checked.tool;
      if (typeof parallel === "function") {
        try {
          return parallel(checked.args) === true;
        } catch {
          return false;
        }
      }
      return parallel === true;
    },
    async execute(context, call) {
      const checked = check(context, call);
      if (!checked.ok) return checked.result;
      try {
        return storableResult(await checked.tool.run(context, checked.args, call));
      } catch (error) {
        if (context.signal.aborted) return errorResult("cancelled", "The call was cancelled.");
        return storableResult(errorResult("tool_exception", `The tool failed unexpectedly: ${(error as Error)?.message ?? String(error)}`));
      }
    },
  };
}

/** Tool text may hold anything a file or process produced; stored results must be valid text. */
function storableResult(result: ToolResult): ToolResult {
  return {
    ...result,
    // Binary parts keep their bytes here: the batch job stores them as artifacts before the commit (I1).
    content: result.content.map((part) => {
      if (part.type === "text") return { ...part, text: storableText(part.text) };
      if ((part.type === "binary" || part.type === "artifact") && typeof part.name === "string")
        return { ...part, name: storableText(part.name) };
      return part;
    }),
    ...(result.displayDiff !== undefined ? { displayDiff: storableText(result.displayDiff) } : {}),
    ...(result.fileChanges
      ? {
          fileChanges: result.fileChanges.map((change) => ({
            ...change,
            path: storableText(change.path),
            diff: storableText(change.diff),
          })),
        }
      : {}),
  };
}
