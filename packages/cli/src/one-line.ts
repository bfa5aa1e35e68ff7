/** The first line of `text`, cut to `max` characters: previews must never flood a terminal. */
export function oneLine(text: string, max = 100): string {
  const first = text.split("\n", 1)[0] ?? "";
  const more = first.length < text.trimEnd().length;
  if (first.length > max) return `${first.slice(0, max - 1)}…`;
  return more ? `${first} …` : first;
}
