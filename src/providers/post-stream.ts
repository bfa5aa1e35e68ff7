import { FoyaError, isFoyaError } from "../errors.js";
import type { ProviderStreamPart } from "./provider.js";
import { errorMessage } from "./wire-fields.js";

const errorExcerptLength = 300;

export interface StreamingPost {
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
 * errors and transport failures as `provider_error` with a short excerpt, and a
 * caller's abort surfacing unchanged (it is not a provider failure).
 */
export async function* postStream(
  post: StreamingPost,
  parse: (body: ReadableStream<Uint8Array>) => AsyncGenerator<ProviderStreamPart>,
): AsyncGenerator<ProviderStreamPart> {
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
      const excerpt = (await response.text()).replace(/\s+/g, " ").trim().slice(0, errorExcerptLength);
      throw new FoyaError("provider_error", `${response.status} ${excerpt}`);
    }
    if (!response.body) throw new FoyaError("provider_error", "response has no body");
    yield* parse(response.body);
  } catch (error) {
    if (post.signal.aborted || isFoyaError(error)) throw error;
    if (deadline.aborted) throw new FoyaError("provider_error", `no complete response within ${post.timeoutMs} ms`, { cause: error });
    throw new FoyaError("provider_error", `request to ${post.url} failed: ${errorMessage(error)}`, { cause: error });
  }
}
