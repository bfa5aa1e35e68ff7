import type { FileChangeRecord } from "./file-change-record.js";
import type { ResultPart } from "./history.js";
import type { RunId } from "./ids.js";

/**
 * The data of the tool contract (SPEC T1-T5) that the folders below src/tools share:
 * what the gateway judges, and what a tool returns. The contract itself (`Tool`,
 * `ToolContext`) is src/tools/tool.ts, which hands these names on.
 */

/** What the approval gateway needs to know about a tool's effects. */
export type SideEffect = "read" | "write" | "exec" | "network" | "other";

/**
 * What the approval gateway judges for a call (SPEC S2): a shell command line
 * (parsed, every sub-command counts), a path the call touches, or a URL it reaches.
 * Rules with an argument pattern (`bash(npm test*)`, `write(src/**)`) match against it.
 */
export type ApprovalSubject =
  /** `background`: the command runs beside the call, on the workspace itself (SPEC B1), where no layer records its changes. */
  | { kind: "command"; command: string; background?: boolean }
  | { kind: "path"; path: string }
  | { kind: "url"; url: string }
  | { kind: "none" };

/**
 * Bytes a tool returns (SPEC I1). They exist only between the tool and the
 * engine: before a result is stored, the engine puts them in the session's
 * artifact store and replaces each by its reference part (`image` / `artifact`),
 * so history and events never hold binary content (I2, L4).
 */
export type BinaryResultPart =
  | { type: "image-data"; mediaType: string; data: Buffer }
  | { type: "binary"; mediaType: string; name?: string; data: Buffer };

/** What a tool may put in its result: stored parts, or bytes the engine turns into references. */
export type ToolResultPart = ResultPart | BinaryResultPart;

export interface ToolResult {
  content: ToolResultPart[];
  isError?: boolean;
  /** Stable machine-readable code for is_error results, e.g. `invalid_arguments`. */
  errorCode?: string;
  /** Ends the current batch: later calls are skipped (P6). */
  endBatch?: boolean;
  fileChanges?: FileChangeRecord[];
  /** For display only; never sent to the model (L2, F2). */
  displayDiff?: string;
  /**
   * The call's result comes from this sub-agent run when it ends (SPEC A1): the call stays
   * `running` with the child named on it, nothing is committed for it now, and the parent
   * run parks without holding a worker until the child's end delivers the result.
   */
  awaitChildRun?: RunId;
}

/** A result as stored and sent to the model: bytes replaced by artifact references. */
export type StoredToolResult = Omit<ToolResult, "content"> & { content: ResultPart[] };
