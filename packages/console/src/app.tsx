import { useMemo, useState } from "preact/hooks";
import { ApprovalsPage } from "./approvals-page.js";
import { consoleClient, storeApiKey, storedApiKey } from "./console-client.js";
import { Link } from "./link.js";
import { useRoute, type Route } from "./route.js";
import { SessionPage } from "./session-page.js";
import { SessionsPage } from "./sessions-page.js";
import { SignIn } from "./sign-in.js";
import { UsagePage } from "./usage-page.js";

const tabs: Array<{ label: string; route: Route }> = [
  { label: "Sessions", route: { screen: "sessions" } },
  { label: "Approvals", route: { screen: "approvals" } },
  { label: "Usage", route: { screen: "usage" } },
];

export function App() {
  const [apiKey, setApiKey] = useState(storedApiKey);
  const route = useRoute();
  const client = useMemo(() => (apiKey ? consoleClient(apiKey) : null), [apiKey]);
  const signIn = (key: string | null) => {
    storeApiKey(key);
    setApiKey(key);
  };
  if (!client) return <SignIn onSignedIn={signIn} />;
  return (
    <div class="shell">
      <header>
        <strong class="brand">Foya</strong>
        <nav>
          {tabs.map((tab) => (
            <Link
              key={tab.label}
              to={tab.route}
              class={tab.route.screen === route.screen || (tab.route.screen === "sessions" && route.screen === "session") ? "active" : ""}
            >
              {tab.label}
            </Link>
          ))}
        </nav>
        <button type="button" class="secondary" onClick={() => signIn(null)}>
          Sign out
        </button>
      </header>
      <main>{screenOf(route, client)}</main>
    </div>
  );
}

function screenOf(route: Route, client: NonNullable<ReturnType<typeof consoleClient>>) {
  switch (route.screen) {
    case "sessions":
      return <SessionsPage client={client} />;
    case "session":
      return <SessionPage key={route.sessionId} client={client} sessionId={route.sessionId} />;
    case "approvals":
      return <ApprovalsPage client={client} />;
    case "usage":
      return <UsagePage client={client} />;
    default: {
      const exhaustive: never = route;
      return exhaustive;
    }
  }
}
