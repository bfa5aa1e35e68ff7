import type { FoyaClient } from "@foya/client";
import { useEffect, useState } from "preact/hooks";

/** A result part kept as an artifact: `image` parts, and `artifact` parts whose media type is an image. */
interface ArtifactPart {
  type: "image" | "artifact";
  artifactId: string;
  mediaType: string;
  name?: string;
}

interface ShownImage {
  url: string;
  name: string;
}

/**
 * The images a finished tool call returned (SPEC E3). Events carry no bytes, so they are read
 * from the call's tool message and fetched by id with the key in a header (an `<img src>` could
 * not send it), then shown from blob URLs that are released when the call leaves the screen.
 */
export function ToolImages(props: { client: FoyaClient; sessionId: string; callId: string }) {
  const { client, sessionId, callId } = props;
  const [images, setImages] = useState<ShownImage[]>([]);
  useEffect(() => {
    let gone = false;
    const urls: string[] = [];
    void (async () => {
      const { data } = await client.api.GET("/v1/sessions/{id}/messages", { params: { path: { id: sessionId } } });
      const message = (data?.messages ?? []).find((m) => m.role === "tool" && (m.content as { callId?: string }).callId === callId);
      const parts = ((message?.content as { content?: unknown[] } | undefined)?.content ?? []) as Array<Partial<ArtifactPart>>;
      const shown: ShownImage[] = [];
      for (const part of parts) {
        if ((part.type !== "image" && part.type !== "artifact") || !part.artifactId || !part.mediaType?.startsWith("image/")) continue;
        const { data: bytes } = await client.api.GET("/v1/artifacts/{id}", { params: { path: { id: part.artifactId } }, parseAs: "blob" });
        if (!(bytes instanceof Blob)) continue;
        const url = URL.createObjectURL(new Blob([bytes], { type: part.mediaType }));
        urls.push(url);
        shown.push({ url, name: part.name ?? part.artifactId });
      }
      if (!gone) setImages(shown);
    })().catch(() => undefined);
    return () => {
      gone = true;
      for (const url of urls) URL.revokeObjectURL(url);
    };
  }, [client, sessionId, callId]);
  if (images.length === 0) return null;
  return (
    <div class="tool-images">
      {images.map((image) => (
        <img key={image.url} class="artifact-image" src={image.url} alt={image.name} />
      ))}
    </div>
  );
}
