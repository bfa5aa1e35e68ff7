/**
 * What the pattern matchers' operations cost at worst, in steps (SPEC S9). A step is about a
 * nanosecond of CPU on the 2-core build machine under the load of a full test run (measured
 * through `judgeCall`, the costliest shape of each operation; unloaded, about four times
 * less). Patterns state their worst case in these steps (`PathCost`, `TextCost`), so the
 * gateway can bound a policy's rules before running any of them (`src/gateway/policy-cost.ts`).
 */
export const matchSteps = {
  /** Testing one path rule at all: the calls down to its matcher (300-500 ns). */
  rule: 500,
  /** A literal path segment tested against one name (about 14 ns). */
  segmentTest: 16,
  /** A wildcard path segment tested against one name, before comparing characters (about 40 ns). */
  wildcardTest: 40,
  /** One character compared by a wildcard segment (about 3 ns). */
  compare: 4,
  /** One command or URL wildcard tested against one text, its prefix and suffix compares included (about 280 ns). */
  textTest: 300,
  /** One character of a text scanned for a wildcard's middle pieces (KMP, 11-16 ns). */
  scannedCharacter: 16,
} as const;
