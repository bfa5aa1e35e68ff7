import type { FoyaEvent, FoyaEventBody } from "../../packages/client/src/index.js";
import { describe, expect, it } from "vitest";
import type { Output } from "../../packages/cli/src/output.js";
import { RunView } from "../../packages/cli/src/run-view.js";
import { createTerminalStyle } from "../../packages/cli/src/terminal-style.js";

/** What a terminal (or a pipe) would receive, as one string. */
function capture(live: boolean): { output: Output; written: () => string } {
  let text = "";
  const write = (chunk: string) => {
    text += chunk;
  };
  const output: Output = {
    json: false,
    style: createTerminalStyle(false),
    live,
    columns: 40,
    write,
    line: (line = "") => write(`${line}\n`),
    document: () => {},
    jsonLine: () => {},
    notice: () => {},
  };
  return { output, written: () => text };
}

let seq = 0;
function event(data: FoyaEventBody): FoyaEvent {
  return {
    seq: ++seq,
    sessionId: "ses_x",
    runId: "run_x",
    step: { index: 0, attempt: 1 },
    type: data.type,
    data,
    at: new Date().toISOString(),
  } as FoyaEvent;
}

const toolRun: FoyaEventBody[] = [
  { type: "text_delta", text: "Let me check" },
  { type: "tool_begin", callId: "c1", name: "bash", callIndex: 0, status: "queued" },
  { type: "tool_update", callId: "c1", status: "running" },
  { type: "tool_update", callId: "c1", progress: "npm test: 3 of 40 files and a very long tail that does not fit" },
  { type: "tool_end", callId: "c1", name: "bash", status: "succeeded", isError: false, preview: "exit 0\nmore lines" },
  { type: "text_delta", text: "All good.\n" },
  { type: "run_end", status: "completed" },
];

describe("foya run --follow, as people see it", () => {
  it("E2: on a terminal a running tool gets a progress line that the next output erases", () => {
    const { output, written } = capture(true);
    const view = new RunView(output);
    for (const body of toolRun) view.show(event(body));
    expect(written()).toBe(
      [
        "Let me check\n▸ bash\n",
        "\r\x1b[2K… bash running",
        "\r\x1b[2K… bash: npm test: 3 of 40 files and a …", // 39 columns: one less than the terminal
        "\r\x1b[2K✓ bash exit 0 …\n",
        "All good.\n✓ run completed\n",
      ].join(""),
    );
  });

  it("E2: off a terminal the same run has no progress lines and no control characters", () => {
    const { output, written } = capture(false);
    const view = new RunView(output);
    for (const body of toolRun) view.show(event(body));
    expect(written()).toBe("Let me check\n▸ bash\n✓ bash exit 0 …\nAll good.\n✓ run completed\n");
  });

  it("PR5: the model's reasoning is shown on lines of its own before its answer, a redacted block as a marker", () => {
    const { output, written } = capture(false);
    const view = new RunView(output);
    const bodies: FoyaEventBody[] = [
      { type: "thinking_delta", text: "The user wants " },
      { type: "thinking_delta", text: "a greeting." },
      { type: "thinking_delta", text: "", redacted: true },
      { type: "text_delta", text: "Hello!" },
      { type: "run_end", status: "completed" },
    ];
    for (const body of bodies) view.show(event(body));
    expect(written()).toBe("The user wants a greeting.\n(redacted reasoning)\nHello!\n✓ run completed\n");
  });
});
