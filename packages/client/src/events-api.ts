import { unwrap } from "./api-result.js";
import type { FoyaApi } from "./api-types.js";
import type { components } from "./generated/openapi.js";
import type { Transport } from "./client-options.js";
import { streamSessionEvents, type EventStreamOptions } from "./event-stream.js";
import type { FoyaEvent } from "./events.js";

type EventsPage = components["schemas"]["EventsPage"];

export interface EventsApi {
  /** The session's events as a live stream that reconnects and resumes by itself (see `streamSessionEvents`). */
  stream(sessionId: string, options?: EventStreamOptions): AsyncGenerator<FoyaEvent, void, undefined>;
  /** One page of the stored log: events after `after` (0), at most `limit` (200, up to 1,000); `next` is the `after` of the next page. */
  list(sessionId: string, options?: { after?: number; limit?: number }): Promise<{ events: FoyaEvent[]; next: number }>;
}

export function createEventsApi(api: FoyaApi, transport: Transport): EventsApi {
  return {
    stream: (sessionId, options) => streamSessionEvents(transport, sessionId, options),
    async list(sessionId, options = {}) {
      // The route answers SSE or JSON; without `Accept: text/event-stream` it is a JSON page.
      const page = unwrap(await api.GET("/v1/sessions/{id}/events", { params: { path: { id: sessionId }, query: options } })) as EventsPage;
      // The document types `data` loosely; the service sends the union in events.ts.
      return { events: page.events as unknown as FoyaEvent[], next: page.next };
    },
  };
}
