/**
 * The order of the tools a step offers (SPEC PR4). A run's first step offers them name-sorted,
 * as the registry gives them (R2); every later step keeps the order of the step before it, and
 * tools that joined since (a tool_search activation, history_read_tool_result) follow, in name
 * order. So a tool that joins mid-run goes at the end of the list instead of into its middle, and
 * the request's prefix up to it stays byte-identical, which is what a provider's prompt cache matches.
 */
export function keepToolOrder<T extends { readonly name: string }>(exposed: readonly T[], previous: readonly string[]): readonly T[] {
  if (previous.length === 0) return exposed;
  const byName = new Map(exposed.map((tool) => [tool.name, tool]));
  const kept = previous.flatMap((name) => byName.get(name) ?? []);
  const before = new Set(previous);
  const joined = exposed.filter((tool) => !before.has(tool.name));
  return [...kept, ...joined];
}
