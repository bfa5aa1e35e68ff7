import { createHmac, randomBytes } from "node:crypto";

/** Standard Webhooks secrets: "whsec_" + base64 of the raw HMAC key. */
const secretPrefix = "whsec_";

export function generateWebhookSecret(): string {
  return `${secretPrefix}${randomBytes(32).toString("base64")}`;
}

function signingKey(secret: string): Buffer {
  if (!secret.startsWith(secretPrefix)) throw new Error("webhook secret lacks the whsec_ prefix");
  return Buffer.from(secret.slice(secretPrefix.length), "base64");
}

/**
 * The `webhook-signature` header value for one attempt: `v1,` + base64
 * HMAC-SHA256 of `${id}.${timestamp}.${body}`. `body` must be exactly the bytes sent.
 */
export function signWebhook(input: { secret: string; id: string; timestampSeconds: number; body: string }): string {
  const mac = createHmac("sha256", signingKey(input.secret)).update(`${input.id}.${input.timestampSeconds}.${input.body}`).digest("base64");
  return `v1,${mac}`;
}
