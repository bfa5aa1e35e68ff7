import type { FoyaClient, FoyaEvent, FoyaEventType } from "@foya/client";

/** Every event type, so EventSource (which dispatches by `event:` name) hears each one. */
const eventTypes = [
  "run_start",
  "step_start",
  "text_delta",
  "thinking_delta",
  "tool_begin",
  "tool_update",
  "approval_request",
  "approval_resolved",
  "tool_end",
  "step_end",
  "run_status",
  "subagent_start",
  "tasks_updated",
  "workspace_restored",
  "session_rewound",
  "session_forked",
  "run_end",
] as const satisfies readonly FoyaEventType[];
// Fails the type check when the service gains an event type this list lacks.
const everyType: Exclude<FoyaEventType, (typeof eventTypes)[number]> extends never ? true : never = true;
void everyType;

/** Pause before opening the stream again after it failed. */
const retryMs = 1_000;

/**
 * Follows a session's events with EventSource. EventSource cannot send an Authorization header
 * and the API key never goes in a URL, so each connection gets a fresh stream token
 * (POST /v1/sessions/{id}/stream-tokens, valid 60 s for this session only) and resumes after
 * the last event received (`after`), so each event arrives once, in order. Answers a stop function.
 */
export function followSessionEvents(
  client: FoyaClient,
  sessionId: string,
  onEvent: (event: FoyaEvent) => void,
  onError: (message: string) => void,
): () => void {
  let lastSeq = 0;
  let source: EventSource | null = null;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const open = async () => {
    if (stopped) return;
    const { data, error } = await client.api.POST("/v1/sessions/{id}/stream-tokens", { params: { path: { id: sessionId } } });
    if (stopped) return;
    if (error) throw new Error(error.error.message);
    const url = `/v1/sessions/${encodeURIComponent(sessionId)}/events?after=${lastSeq}&token=${encodeURIComponent(data.token)}`;
    const current = new EventSource(url);
    source = current;
    const receive = (message: MessageEvent<string>) => {
      const event = JSON.parse(message.data) as FoyaEvent;
      if (event.seq <= lastSeq) return;
      lastSeq = event.seq;
      onEvent(event);
    };
    for (const type of eventTypes) current.addEventListener(type, receive);
    // EventSource retries a dropped connection by itself, with the same (perhaps expired) token;
    // taking over instead keeps the token fresh.
    current.onerror = () => {
      current.close();
      if (source === current && !stopped) timer = setTimeout(start, retryMs);
    };
  };

  // A token that could not be had (network, a revoked key) is tried again, less often.
  const start = () =>
    void open().catch((failure: unknown) => {
      onError(failure instanceof Error ? failure.message : String(failure));
      if (!stopped) timer = setTimeout(start, retryMs * 5);
    });
  start();
  return () => {
    stopped = true;
    clearTimeout(timer);
    source?.close();
  };
}
