import { describe, expect, it } from "vitest";
import { buildToolSearchIndex, tokenize } from "../../src/tools/tool-search-index.js";
import { tools } from "../fixtures/deferred-tools.js";

const index = buildToolSearchIndex(tools.filter((tool) => tool.exposure === "deferred"));

describe("tool search index", () => {
  it("R5: names split on _, -, spaces and camelCase", () => {
    expect(tokenize("calendar_create-event sendEmail HTTPServer2Go")).toEqual([
      "calendar",
      "create",
      "event",
      "send",
      "email",
      "http",
      "server2",
      "go",
    ]);
  });

  it("R5: ranks by name words first, then description and parameter names; an exact name comes first", () => {
    expect(index.search("create a calendar event", { limit: 5 })[0]).toBe("calendar_create_event");
    expect(index.search("list my calendar", { limit: 5 })[0]).toBe("calendar_list_events");
    expect(index.search("forecast", { limit: 5 })).toEqual(["weather_lookup"]);
    expect(index.search("city", { limit: 5 })).toEqual(["weather_lookup"]);
    expect(index.search("email", { limit: 5 })[0]).toBe("sendEmail");
    expect(index.search("sendEmail", { limit: 5 })[0]).toBe("sendEmail");
    expect(index.search("calendar", { limit: 1 })).toHaveLength(1);
    expect(index.search("quantum chromodynamics", { limit: 5 })).toEqual([]);
  });

  it("R5: a scope filter hides tools the session may not use", () => {
    expect(index.search("calendar", { limit: 5, allowed: (name) => name !== "calendar_create_event" })).toEqual(["calendar_list_events"]);
  });
});
