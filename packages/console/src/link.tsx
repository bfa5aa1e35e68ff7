import type { ComponentChildren } from "preact";
import { hrefOf, navigate, type Route } from "./route.js";

/** An anchor that changes screens without reloading the page (and still opens in a new tab). */
export function Link(props: { to: Route; children: ComponentChildren; class?: string }) {
  return (
    <a
      href={hrefOf(props.to)}
      class={props.class}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
        event.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}
