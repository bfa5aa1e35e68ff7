import type { FoyaEvent } from "@foya/client";
import { oneLine } from "./one-line.js";
import { pointText } from "./point-text.js";
import type { Output } from "./output.js";

const clearLine = "\r\x1b[2K";

/**
 * A run's events for people, as they arrive: the model's text as it streams, a line when a
 * tool call starts and one when it ends, approval prompts with the command that answers them.
 * On a terminal a running tool also gets a transient progress line, erased by the next output.
 */
export class RunView {
  private atLineStart = true;
  private progressShown = false;
  private inThinking = false;
  private readonly toolNames = new Map<string, string>();

  constructor(private readonly output: Output) {}

  show(event: FoyaEvent): void {
    const { style } = this.output;
    switch (event.type) {
      case "run_start":
      case "step_end":
        return;
      case "step_start":
        if (event.data.attempt > 1)
          this.notice(style.yellow(`step ${event.data.stepIndex} retried (attempt ${event.data.attempt}): what it wrote before is void`));
        return;
      case "text_delta":
        this.text(event.data.text);
        return;
      case "thinking_delta":
        if (event.data.redacted) this.notice(style.dim("(redacted reasoning)"));
        else this.text(event.data.text, { thinking: true });
        return;
      case "tool_begin":
        this.toolNames.set(event.data.callId, event.data.name);
        this.notice(style.cyan(`▸ ${event.data.name}`));
        return;
      case "tool_update": {
        const name = this.toolNames.get(event.data.callId) ?? "tool";
        if (event.data.progress !== undefined) this.progress(`… ${name}: ${oneLine(event.data.progress)}`);
        else if (event.data.status === "running") this.progress(`… ${name} running`);
        return;
      }
      case "tool_end": {
        const { name, status, isError, errorCode, preview, fileChanges } = event.data;
        const failed = isError || status !== "succeeded";
        const head = failed ? style.red(`✗ ${name} ${status}${errorCode ? ` (${errorCode})` : ""}`) : style.green(`✓ ${name}`);
        this.notice(preview ? `${head} ${style.dim(oneLine(preview))}` : head);
        for (const change of fileChanges ?? []) this.notice(style.dim(`  ${change.path}  foya diff ${change.id}`));
        return;
      }
      case "approval_request":
        this.notice(style.yellow(`? ${event.data.name} needs approval: ${event.data.reason}`));
        this.notice(style.dim(`  foya approve ${event.data.approvalId}   or   foya deny ${event.data.approvalId}`));
        return;
      case "approval_resolved": {
        const { approvalId, status, edited, reason } = event.data;
        this.notice(style.dim(`approval ${approvalId} ${status}${edited ? " with edited arguments" : ""}${reason ? `: ${reason}` : ""}`));
        return;
      }
      case "run_status":
        if (event.data.status === "recovering")
          this.notice(style.yellow(`worker lost, another takes over${event.data.reason ? ` (${event.data.reason})` : ""}`));
        else if (event.data.status === "waiting_for_provider")
          this.notice(style.dim(`waiting for the model provider${event.data.reason ? `: ${event.data.reason}` : ""}`));
        else if (event.data.reason) this.notice(style.dim(`run ${event.data.status}: ${event.data.reason}`));
        return;
      case "subagent_start":
        this.notice(style.dim(`sub-agent started: foya events ${event.data.childSessionId} --follow`));
        return;
      case "workspace_restored":
        this.notice(
          style.yellow(`workspace ${event.data.reason}: rebuilt from checkpoint ${event.data.checkpointSeq} (${event.data.files} files)`),
        );
        return;
      case "session_rewound": {
        const { branchId, at, notUndone } = event.data;
        this.notice(style.yellow(`session rewound to ${pointText(at)}; what followed is branch ${branchId}`));
        if (notUndone.length > 0)
          this.notice(style.dim(`  not undone: ${notUndone.map((call) => `${call.name} (${call.reason})`).join(", ")}`));
        return;
      }
      case "session_forked":
        this.notice(style.dim(`forked from session ${event.data.fromSessionId} at ${pointText(event.data.at)}`));
        return;
      case "tasks_updated":
        for (const task of event.data.tasks)
          this.notice(style.dim(`  [${task.status === "done" ? "x" : task.status === "in_progress" ? "~" : " "}] ${task.title}`));
        return;
      case "run_end": {
        const { status, error } = event.data;
        this.notice(
          status === "completed"
            ? style.green("✓ run completed")
            : style.red(`✗ run ${status}${error ? `: ${error.message} (${error.code})` : ""}`),
        );
        return;
      }
      default:
        event satisfies never;
    }
  }

  /** The model's answer, or (dimmed, on lines of its own) its reasoning. */
  private text(text: string, options: { thinking?: boolean } = {}): void {
    if (text.length === 0) return;
    this.clearProgress();
    const thinking = options.thinking === true;
    if (thinking !== this.inThinking && !this.atLineStart) this.output.write("\n");
    this.inThinking = thinking;
    this.output.write(thinking ? this.output.style.dim(text) : text);
    this.atLineStart = text.endsWith("\n");
  }

  /** A line of its own, after any text still on the current line. */
  private notice(line: string): void {
    this.clearProgress();
    this.output.write(`${this.atLineStart ? "" : "\n"}${line}\n`);
    this.atLineStart = true;
  }

  private progress(line: string): void {
    if (!this.output.live) return;
    if (!this.atLineStart) {
      this.output.write("\n");
      this.atLineStart = true;
    }
    const width = (this.output.columns ?? 80) - 1;
    const fitted = line.length > width ? `${line.slice(0, width - 1)}…` : line;
    this.output.write(`${clearLine}${this.output.style.dim(fitted)}`);
    this.progressShown = true;
  }

  private clearProgress(): void {
    if (!this.progressShown) return;
    this.output.write(clearLine);
    this.progressShown = false;
  }
}
