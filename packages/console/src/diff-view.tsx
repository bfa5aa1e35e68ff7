/** A unified diff, one line per row, coloured by what the line does. Text only: never HTML. */
export function DiffView(props: { diff: string }) {
  // The `Index:` header and its rule repeat the file names of the `---`/`+++` lines.
  const lines = props.diff
    .replace(/\n$/, "")
    .split("\n")
    .filter((line) => !line.startsWith("Index: ") && !/^=+$/.test(line));
  return (
    <pre class="diff">
      {lines.map((line, index) => (
        <div key={index} class={classOf(line)}>
          {line || " "}
        </div>
      ))}
    </pre>
  );
}

function classOf(line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return "file";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "added";
  if (line.startsWith("-")) return "removed";
  return "";
}
