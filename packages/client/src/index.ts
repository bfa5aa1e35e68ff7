export { createFoyaClient, type FoyaClient } from "./create-foya-client.js";
export type { FoyaClientOptions } from "./client-options.js";
export type {
  Approval,
  Branch,
  BranchPoint,
  FileChange,
  FileChangeWithDiff,
  Forked,
  FoyaApi,
  Message,
  RewindPoint,
  Rewound,
  Run,
  RunCreate,
  Session,
} from "./api-types.js";
export type { ApprovalListQuery, ApprovalsApi, ApproveOptions } from "./approvals-api.js";
export type { EventsApi } from "./events-api.js";
export type { EventStreamOptions } from "./event-stream.js";
export type { ReconnectOptions } from "./client-options.js";
export type {
  FoyaEvent,
  FoyaEventBody,
  FoyaEventType,
  HistoryPoint,
  NotUndoneCall,
  RunStatus,
  TerminalRunStatus,
  TerminalToolCallStatus,
  ToolCallStatus,
} from "./events.js";
export type { FileChangesApi } from "./file-changes-api.js";
export { FoyaApiError, isFoyaApiError } from "./foya-api-error.js";
export { FoyaTimeoutError } from "./foya-timeout-error.js";
export type { RunEventsOptions, RunsApi, RunStartOptions, WaitOptions } from "./runs-api.js";
export type { SessionsApi } from "./sessions-api.js";
export { verifyWebhook, type WebhookEventType, type WebhookPayload } from "./verify-webhook.js";
export { WebhookVerificationError } from "standardwebhooks";
export type { components, paths } from "./generated/openapi.js";
