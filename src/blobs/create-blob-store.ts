import type { Config } from "../config.js";
import type { Store } from "../store/store.js";
import type { BlobStore } from "./blob-store.js";
import { createPostgresBlobReader, createPostgresBlobStore } from "./postgres-blob-store.js";

/** The deployment's blob store: Postgres, the one implementation (SPEC W1). */
export function createBlobStore(
  store: Pick<Store, "blobs">,
  config: { workspaces: Pick<Config["workspaces"], "blobChunkBytes"> },
  afterChunk?: (chunkIndex: number) => void,
): BlobStore {
  return createPostgresBlobStore(store, { chunkBytes: config.workspaces.blobChunkBytes, ...(afterChunk ? { afterChunk } : {}) });
}

/** Reading only (a rebuild): no settings needed. */
export function createBlobReader(store: Pick<Store, "blobs">): Pick<BlobStore, "has" | "open"> {
  return createPostgresBlobReader(store);
}
