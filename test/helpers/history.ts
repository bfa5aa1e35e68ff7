import { expect } from "vitest";

/**
 * Checks what every provider requires of a history: each tool call id of an
 * assistant message is answered by exactly one tool message, in call order,
 * before the next assistant or user message, and no tool message is orphaned.
 */
export function expectValidHistory(messages: Array<{ role: string; content: any }>): void {
  let open: string[] = [];
  for (const message of messages) {
    const content = message.content;
    if (message.role === "tool") {
      expect(open[0], `tool message for ${content.callId} answers the next open call`).toBe(content.callId);
      open = open.slice(1);
      continue;
    }
    expect(open, `calls left unanswered before a ${message.role} message`).toEqual([]);
    if (message.role === "assistant") open = content.toolCalls.map((call: { callId: string }) => call.callId);
  }
  expect(open, "calls left unanswered at the end").toEqual([]);
}
