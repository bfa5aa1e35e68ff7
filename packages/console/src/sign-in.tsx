import { useState } from "preact/hooks";
import { consoleClient, describeError } from "./console-client.js";

/** Asks for a tenant's API key and keeps it only once the API accepts it. */
export function SignIn(props: { onSignedIn: (apiKey: string) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [checking, setChecking] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setChecking(true);
    setError(null);
    try {
      // Any tenant route tells whether the key is valid; usage is cheap.
      await consoleClient(key.trim())
        .api.GET("/v1/usage")
        .then(({ error: failed, response }) => {
          if (failed) throw new Error(`${response.status}: ${failed.error.message}`);
        });
      props.onSignedIn(key.trim());
    } catch (failure) {
      setError(describeError(failure));
    } finally {
      setChecking(false);
    }
  };
  return (
    <form class="sign-in card" onSubmit={submit}>
      <h1>Foya console</h1>
      <label>
        API key
        <input
          type="password"
          name="apiKey"
          autoComplete="off"
          placeholder="foya_…"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          required
        />
      </label>
      <p class="hint">Kept in this tab's session storage and sent only as an Authorization header.</p>
      {error && <p class="error">{error}</p>}
      <button type="submit" disabled={checking || key.trim() === ""}>
        Sign in
      </button>
    </form>
  );
}
