import { useEffect, useState } from "preact/hooks";

/** The console's screens, parsed from the path below /console (the API answers index.html for each). */
export type Route = { screen: "sessions" } | { screen: "session"; sessionId: string } | { screen: "approvals" } | { screen: "usage" };

const base = "/console";

function parseRoute(pathname: string): Route {
  const rest = pathname.startsWith(base) ? pathname.slice(base.length) : pathname;
  const session = /^\/sessions\/([A-Za-z0-9_-]+)\/?$/.exec(rest);
  if (session?.[1]) return { screen: "session", sessionId: session[1] };
  if (/^\/approvals\/?$/.test(rest)) return { screen: "approvals" };
  if (/^\/usage\/?$/.test(rest)) return { screen: "usage" };
  return { screen: "sessions" };
}

export function hrefOf(route: Route): string {
  switch (route.screen) {
    case "sessions":
      return `${base}/`;
    case "session":
      return `${base}/sessions/${route.sessionId}`;
    case "approvals":
      return `${base}/approvals`;
    case "usage":
      return `${base}/usage`;
    default: {
      const exhaustive: never = route;
      return exhaustive;
    }
  }
}

export function navigate(route: Route): void {
  history.pushState(null, "", hrefOf(route));
  dispatchEvent(new PopStateEvent("popstate"));
}

/** The current route, following the back and forward buttons. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname));
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return route;
}
