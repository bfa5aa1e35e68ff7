import { FoyaError, isFoyaError } from "../errors.js";
import type { ProviderStreamPart } from "./provider.js";
import { errorBodyReason, errorExcerptLength, loggableUrl, redactSecrets, requestSecrets, transportReason } from "./provider-failure.js";
import { backoffOfAnswer } from "./retry-hint.js";
import { errorMessage } from "./wire-fields.js";

/** How much of an error body is read: enough for any provider's error JSON. */
const errorBodyBytes = 64 * 1024;

export interface StreamingPost {
  /** The provider profile, named in failures instead of the URL. */
  profile: string;
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * POSTs a streaming request and hands the response body to the adapter's
 * parser. What every adapter shares: a deadline for the whole response, HTTP
 * errors and transport failures as `provider_error` with a short reason, and a
 * caller's abort surfacing unchanged (it is not a provider failure).
 *
 * Failure messages reach tenants (the run's error, `run_end`), so they name the
 * profile, the status and the reason, never the URL or a header value; what the
 * provider wrote is redacted of both (SPEC S10). The unredacted detail is the
 * error's `cause`, for the operator's log.
 */
export async function* postStream(
  post: StreamingPost,
  parse: (body: ReadableStream<Uint8Array>) => AsyncGenerator<ProviderStreamPart>,
): AsyncGenerator<ProviderStreamPart> {
  const secrets = requestSecrets(post.url, post.headers);
  const where = `provider profile "${post.profile}"`;
  // Kept separately so an expired deadline can be told apart from a caller abort.
  const deadline = AbortSignal.timeout(post.timeoutMs);
  try {
    const response = await post.fetch(post.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...post.headers },
      body: JSON.stringify(post.body),
      signal: AbortSignal.any([post.signal, deadline]),
    });
    if (!response.ok) {
      const body = await readHead(response, errorBodyBytes);
      // Providers quote the key they refused: the excerpt is redacted before it reaches a message or a log.
      const excerpt = redactSecrets(body.replace(/\s+/g, " ").trim().slice(0, errorExcerptLength), secrets);
      const reason = redactSecrets(errorBodyReason(excerpt, body), secrets);
      const backoff = backoffOfAnswer(response.status, response.headers, reason);
      throw new FoyaError("provider_error", `${response.status} ${reason} (${where})`.replace(/ {2,}/g, " "), {
        cause: new Error(`POST ${loggableUrl(post.url)} answered ${response.status}: ${excerpt}`),
        ...(backoff ? { backoff } : {}),
      });
    }
    if (!response.body) throw new FoyaError("provider_error", `response has no body (${where})`);
    yield* parse(response.body);
  } catch (error) {
    if (post.signal.aborted) throw error;
    if (isFoyaError(error)) {
      // A parser's message quotes what the provider streamed.
      const redacted = redactSecrets(error.message, secrets);
      // The original stays out of the chain: its message is what was redacted.
      throw redacted === error.message
        ? error
        : new FoyaError(error.code, redacted, error.backoff ? { backoff: error.backoff } : undefined);
    }
    if (deadline.aborted)
      throw new FoyaError("provider_error", `no complete response within ${post.timeoutMs} ms (${where})`, { cause: error });
    throw new FoyaError("provider_error", `${where} could not be reached: ${transportReason(error)}`, {
      cause: new Error(`POST ${loggableUrl(post.url)} failed: ${errorMessage(error)}`, { cause: error }),
      backoff: { kind: "transport" },
    });
  }
}

/** The first `maxBytes` of a body as text; the rest is not read. */
async function readHead(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8");
}

/** How long a stream that has said its last event is read on for the body's end. */
const bodyEndGraceMs = 1000;

/**
 * Lets go of a response body. After the stream's last event (`[DONE]`, `message_stop`) only the
 * body's end should follow: it is read, so the connection goes back to the profile's pool (a
 * body cancelled before its end closes its connection, and the step's next request pays a new
 * handshake). A body that does not end within a second, and any stream stopped early, is cancelled.
 */
export async function releaseBody(reader: ReadableStreamDefaultReader<unknown>, lastEventSeen: boolean): Promise<void> {
  if (lastEventSeen) {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, bodyEndGraceMs);
    });
    const drained = (async () => {
      for (;;) if ((await reader.read()).done) return;
    })().catch(() => undefined);
    await Promise.race([drained, grace]);
    clearTimeout(timer);
  }
  await reader.cancel().catch(() => undefined);
}
