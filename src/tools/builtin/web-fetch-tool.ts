import { convert } from "html-to-text";
import { z } from "zod";
import { refusedHost } from "../../net/address-guard.js";
import { defineTool, errorResult, textResult, type AnyTool, type ToolResult } from "../tool.js";

const defaultTimeoutMs = 15_000;
const maxBodyBytes = 2 * 1024 * 1024;
const maxTextChars = 64 * 1024;
const maxRedirects = 5;

/**
 * Fetches an http(s) page for the model (SPEC O1): size and time caps, HTML
 * turned into readable text, the head kept. Every redirect hop is checked
 * again, so a public URL cannot bounce to a private address.
 */
export function createWebFetchTool(options: { allowPrivate: boolean; timeoutMs?: number }): AnyTool {
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  return defineTool({
    name: "web_fetch",
    description: "Fetch a web page (http or https) and return its readable text. Long pages keep their beginning.",
    parameters: z.object({ url: z.string().min(1).max(4000).describe("An http:// or https:// URL.") }).strict(),
    exposure: "direct",
    sideEffect: "network",
    approvalSubject: (args) => ({ kind: "url", url: args.url }),
    parallel: true,
    async run(context, args) {
      let url: URL;
      try {
        url = new URL(args.url);
      } catch {
        return errorResult("invalid_url", `"${args.url}" is not a URL.`);
      }
      // One controller for the whole fetch, body included, aborted by a timer this call holds: an
      // `AbortSignal.timeout()` made inline in `AbortSignal.any` can be garbage-collected on Node 20
      // before it fires, and then the limit never comes (a slow server held a call for minutes).
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
      const onCancel = () => deadline.abort(new Error("cancelled"));
      if (context.signal.aborted) onCancel();
      else context.signal.addEventListener("abort", onCancel, { once: true });
      try {
        return await fetchPage(url, args.url, deadline.signal, options.allowPrivate);
      } finally {
        clearTimeout(timer);
        context.signal.removeEventListener("abort", onCancel);
      }
    },
  });
}

/** The page at `start`, following checked redirects, everything under `signal`. */
async function fetchPage(start: URL, requested: string, signal: AbortSignal, allowPrivate: boolean): Promise<ToolResult> {
  let url = start;
  let response: Response | undefined;
  for (let hop = 0; ; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return errorResult("unsupported_scheme", `Only http and https URLs can be fetched, not ${url.protocol}`);
    if (!allowPrivate) {
      const refused = await refusedHost(url.hostname).catch((error: Error) => `${url.hostname} could not be resolved: ${error.message}`);
      if (refused) return errorResult("address_refused", refused);
    }
    try {
      response = await fetch(url, {
        redirect: "manual",
        signal,
        headers: { "user-agent": "foya-web-fetch/0.1", accept: "text/html, text/plain, */*;q=0.5" },
      });
    } catch (error) {
      const reason = signal.aborted ? (signal.reason as Error).message : (error as Error).message;
      return errorResult("fetch_failed", `Could not fetch ${url.href}: ${reason}`);
    }
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      if (hop >= maxRedirects) return errorResult("too_many_redirects", `More than ${maxRedirects} redirects from ${requested}`);
      await response.body?.cancel();
      url = new URL(location, url);
      continue;
    }
    break;
  }
  let read: { body: Buffer; truncated: boolean };
  try {
    read = await readCapped(response, maxBodyBytes);
  } catch {
    if (signal.aborted)
      return errorResult("fetch_failed", `Could not fetch ${url.href}: ${(signal.reason as Error).message} while reading the body`);
    read = { body: Buffer.alloc(0), truncated: false };
  }
  const { body, truncated } = read;
  const type = response.headers.get("content-type") ?? "";
  if (!/text|html|json|xml/.test(type) && body.includes(0))
    return errorResult("binary_content", `${url.href} answered ${type || "binary content"}, not text`);
  let text = type.includes("html")
    ? convert(body.toString("utf8"), { wordwrap: false, selectors: [{ selector: "img", format: "skip" }] })
    : body.toString("utf8");
  const notes: string[] = [];
  if (truncated) notes.push(`only the first ${maxBodyBytes} bytes were downloaded`);
  if (text.length > maxTextChars) {
    notes.push(`${text.length - maxTextChars} of ${text.length} characters not shown`);
    text = text.slice(0, maxTextChars);
  }
  const header = `${response.status} ${url.href}\n\n`;
  const result = header + text + (notes.length ? `\n[${notes.join("; ")}]` : "");
  return response.ok ? textResult(result) : errorResult("http_status", result);
}

async function readCapped(response: Response, limit: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (!response.body) return { body: Buffer.alloc(0), truncated: false };
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { body: Buffer.concat(chunks), truncated: false };
    chunks.push(Buffer.from(value));
    size += value.length;
    if (size >= limit) {
      await reader.cancel();
      return { body: Buffer.concat(chunks).subarray(0, limit), truncated: true };
    }
  }
}
