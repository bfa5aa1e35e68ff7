/** A run's or a call's status; `data-status` lets tests and styles find it. */
export function StatusBadge(props: { status: string }) {
  return (
    <span class={`status status-${props.status}`} data-status={props.status}>
      {props.status.replace(/_/g, " ")}
    </span>
  );
}
