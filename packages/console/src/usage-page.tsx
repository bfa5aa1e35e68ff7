import type { FoyaClient } from "@foya/client";
import { useLoader } from "./use-loader.js";

/** The tenant's use of the deployment against its quotas (GET /v1/usage; 0 means no limit). */
export function UsagePage(props: { client: FoyaClient }) {
  const usage = useLoader(async () => {
    const { data, error } = await props.client.api.GET("/v1/usage");
    if (error) throw new Error(error.error.message);
    return data;
  }, 5_000);
  const rows = usage.data
    ? [
        ["Active runs", usage.data.usage.activeRuns, usage.data.quotas.activeRuns],
        ["Queued runs", usage.data.usage.queuedRuns, usage.data.quotas.queuedRuns],
        ["Tokens today", usage.data.usage.tokensToday, usage.data.quotas.tokensPerDay],
        ["Storage bytes", usage.data.usage.storageBytes, usage.data.quotas.storageBytes],
        ["Tool calls running", usage.data.usage.toolCalls, usage.data.quotas.toolCalls],
        ["Background commands", usage.data.usage.backgroundCommands, usage.data.backgroundCommandsLimit],
      ]
    : [];
  return (
    <section>
      <h1>Usage</h1>
      {usage.error && <p class="error">{usage.error}</p>}
      <table class="list">
        <thead>
          <tr>
            <th>What</th>
            <th>Now</th>
            <th>Limit</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, used, limit]) => (
            <tr key={String(label)}>
              <td>{label}</td>
              <td>{used}</td>
              <td>{limit === 0 ? "none" : limit}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
