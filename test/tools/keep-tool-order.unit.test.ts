import { describe, expect, it } from "vitest";
import { keepToolOrder } from "../../src/tools/keep-tool-order.js";

const tools = (...names: string[]) => names.map((name) => ({ name }));
const names = (list: readonly { name: string }[]) => list.map((tool) => tool.name);

describe("keepToolOrder", () => {
  it("PR4: a run's first step keeps the registry's name order; later steps keep the previous step's order and append tools that joined, in name order", () => {
    const sorted = tools("bash", "read", "tool_search", "write");
    expect(keepToolOrder(sorted, [])).toBe(sorted);
    const grown = tools("bash", "calendar_list_events", "history_read_tool_result", "read", "tool_search", "weather_lookup", "write");
    const previous = ["bash", "read", "tool_search", "write", "weather_lookup"];
    expect(names(keepToolOrder(grown, previous))).toEqual([
      "bash",
      "read",
      "tool_search",
      "write",
      "weather_lookup",
      "calendar_list_events",
      "history_read_tool_result",
    ]);
  });

  it("PR4: a tool no longer exposed leaves the list; the others keep their places", () => {
    expect(names(keepToolOrder(tools("a", "c", "d"), ["d", "a", "b", "c"]))).toEqual(["d", "a", "c"]);
  });
});
