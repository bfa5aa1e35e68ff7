import createClient from "openapi-fetch";
import { createApprovalsApi, type ApprovalsApi } from "./approvals-api.js";
import type { FoyaApi } from "./api-types.js";
import { createTransport, type FoyaClientOptions } from "./client-options.js";
import { createEventsApi, type EventsApi } from "./events-api.js";
import { createFileChangesApi, type FileChangesApi } from "./file-changes-api.js";
import type { paths } from "./generated/openapi.js";
import { createRunsApi, type RunsApi } from "./runs-api.js";
import { createSessionsApi, type SessionsApi } from "./sessions-api.js";
import { verifyWebhook } from "./verify-webhook.js";

export interface FoyaClient {
  /** Every route, typed from the OpenAPI document: `api.GET("/v1/sessions/{id}", { params: { path: { id } } })`. */
  api: FoyaApi;
  runs: RunsApi;
  /** History, forks, rewinds and their branches. */
  sessions: SessionsApi;
  events: EventsApi;
  approvals: ApprovalsApi;
  fileChanges: FileChangesApi;
  webhooks: { verify: typeof verifyWebhook };
}

/** A client for one tenant's API key. Failed calls throw `FoyaApiError`; the helpers answer the data. */
export function createFoyaClient(options: FoyaClientOptions): FoyaClient {
  const transport = createTransport(options);
  const api = createClient<paths>({ baseUrl: transport.baseUrl, headers: transport.headers, fetch: transport.fetch });
  return {
    api,
    runs: createRunsApi(api, transport),
    sessions: createSessionsApi(api),
    events: createEventsApi(api, transport),
    approvals: createApprovalsApi(api),
    fileChanges: createFileChangesApi(api),
    webhooks: { verify: verifyWebhook },
  };
}
