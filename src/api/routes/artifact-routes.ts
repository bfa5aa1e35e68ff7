import { createRoute, z } from "@hono/zod-openapi";
import type { ArtifactMeta } from "../../store/artifacts.js";
import { isImageMediaType } from "../../artifacts/media-types.js";
import { notFound } from "../../errors.js";
import type { ApiServices, App } from "../app-env.js";
import { errorResponses, IdParam } from "../schemas.js";
import { idOf } from "./find-owned.js";

/**
 * Artifact bytes and metadata (SPEC I2): events and messages carry references
 * only; clients fetch the bytes here. Another tenant's id answers 404 (D8).
 */

const ArtifactMetaSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    mediaType: z.string(),
    size: z.number(),
    sha256: z.string(),
    createdAt: z.string(),
  })
  .openapi("ArtifactMeta");

const getBytes = createRoute({
  method: "get",
  path: "/v1/artifacts/{id}",
  summary: "The bytes of an artifact, with its media type; immutable, so cacheable forever",
  request: { params: IdParam },
  responses: {
    200: { content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } }, description: "The bytes" },
    304: { description: "Not modified (If-None-Match matched the ETag)" },
    ...errorResponses,
  },
});

const getMeta = createRoute({
  method: "get",
  path: "/v1/artifacts/{id}/meta",
  summary: "What an artifact is: session, media type, size and digest",
  request: { params: IdParam },
  responses: { 200: { content: { "application/json": { schema: ArtifactMetaSchema } }, description: "The artifact" }, ...errorResponses },
});

function serialize(meta: ArtifactMeta) {
  return {
    id: meta.id,
    sessionId: meta.sessionId,
    mediaType: meta.mediaType,
    size: meta.size,
    sha256: meta.sha256,
    createdAt: meta.createdAt.toISOString(),
  };
}

export function registerArtifactRoutes(app: App, services: ApiServices): void {
  app.openapi(getBytes, async (c) => {
    const artifact = await services.store.artifacts.findArtifact(c.get("tenantId"), idOf("art", c.req.valid("param").id, "artifact"));
    if (!artifact) throw notFound("artifact");
    const etag = `"${artifact.sha256}"`;
    const headers: Record<string, string> = {
      etag,
      // Content-addressed and never changed: a client may keep it as long as it likes, but not share it.
      "cache-control": "private, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
      // Bytes a tool produced are untrusted: opened in a browser they must not run as a page of this origin.
      "content-security-policy": "sandbox; default-src 'none'",
    };
    if (
      c.req
        .header("if-none-match")
        ?.split(",")
        .some((tag) => tag.trim() === etag)
    )
      return c.body(null, 304, headers);
    headers["content-type"] = artifact.mediaType;
    headers["content-length"] = String(artifact.bytes.length);
    if (!isImageMediaType(artifact.mediaType)) headers["content-disposition"] = "attachment";
    return c.body(new Uint8Array(artifact.bytes), 200, headers);
  });

  app.openapi(getMeta, async (c) => {
    const meta = await services.store.artifacts.findArtifactMeta(c.get("tenantId"), idOf("art", c.req.valid("param").id, "artifact"));
    if (!meta) throw notFound("artifact");
    return c.json(serialize(meta), 200);
  });
}
