import { performance } from "node:perf_hooks";
import { refusedHost } from "../net/address-guard.js";
import { signWebhook } from "./webhook-signature.js";
import type { DeliveryId } from "../ids.js";

export interface WebhookRequest {
  url: string;
  secret: string;
  /** The delivery id: the `webhook-id` header, the same on every attempt so receivers can dedupe. */
  deliveryId: DeliveryId;
  /** The serialized payload; exactly these bytes are signed and sent. */
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the attempt when the worker shuts down. */
  signal: AbortSignal;
}

/** What one attempt came to; `ok` means a 2xx answer. */
export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

const errorSnippetBytes = 256;

/** One signed POST (Standard Webhooks headers). Never throws: every failure is an outcome to record. */
export async function sendWebhook(request: WebhookRequest): Promise<SendOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = AbortSignal.any([request.signal, timeout]);
  try {
    const url = new URL(request.url);
    if (!request.allowPrivate) {
      // The name lookup counts against the timeout too.
      const refused = await untilAborted(refusedHost(url.hostname), signal);
      if (refused) return { ok: false, statusCode: null, error: `address refused: ${refused}`, durationMs: elapsed() };
    }
    const timestampSeconds = Math.floor(Date.now() / 1000);
    const response = await fetch(url, {
      method: "POST",
      // A redirect is an answer like any other non-2xx: following it could lead anywhere.
      redirect: "manual",
      signal,
      headers: {
        "content-type": "application/json",
        "user-agent": "Foya-Webhooks/0.1",
        "webhook-id": request.deliveryId,
        "webhook-timestamp": String(timestampSeconds),
        "webhook-signature": signWebhook({ secret: request.secret, id: request.deliveryId, timestampSeconds, body: request.body }),
      },
      body: request.body,
    });
    if (response.status >= 200 && response.status < 300) {
      await response.body?.cancel().catch(() => {});
      return { ok: true, statusCode: response.status, error: null, durationMs: elapsed() };
    }
    const head = await readHead(response, errorSnippetBytes).catch(() => "");
    const error = response.status >= 300 && response.status < 400 ? "redirects are not followed" : head ? `answered: ${head}` : null;
    return { ok: false, statusCode: response.status, error, durationMs: elapsed() };
  } catch (error) {
    const reason = timeout.aborted
      ? `timed out after ${request.timeoutMs} ms`
      : request.signal.aborted
        ? "aborted: worker shutting down"
        : describe(error);
    return { ok: false, statusCode: null, error: reason, durationMs: elapsed() };
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return Promise.race([
    work,
    new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true })),
  ]);
}

/** fetch reports network failures as "fetch failed" with the real reason in `cause`. */
function describe(error: unknown): string {
  const err = error as { message?: string; cause?: { code?: string; message?: string } };
  const cause = err.cause ? [err.cause.code, err.cause.message].filter(Boolean).join(" ") : "";
  return [err.message ?? String(error), cause].filter(Boolean).join(": ");
}

/** The first bytes of a response body, for the attempt log; the rest is discarded. */
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
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks)
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD+$/, "")
    .trim();
}
