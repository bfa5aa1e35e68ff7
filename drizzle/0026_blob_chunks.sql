CREATE TABLE "content_blob_chunks" (
	"tenant_id" text NOT NULL,
	"sha256" text NOT NULL,
	"chunk_index" integer NOT NULL,
	"bytes" "bytea" NOT NULL,
	CONSTRAINT "content_blob_chunks_tenant_id_sha256_chunk_index_pk" PRIMARY KEY("tenant_id","sha256","chunk_index")
);
--> statement-breakpoint
ALTER TABLE "content_blobs" ALTER COLUMN "bytes" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "content_blobs" ADD COLUMN "chunk_bytes" integer;--> statement-breakpoint
ALTER TABLE "content_blobs" ADD COLUMN "complete" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "content_blob_chunks" ADD CONSTRAINT "content_blob_chunks_tenant_id_sha256_content_blobs_tenant_id_sha256_fk" FOREIGN KEY ("tenant_id","sha256") REFERENCES "public"."content_blobs"("tenant_id","sha256") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "content_blobs" ADD CONSTRAINT "content_blobs_bytes_or_chunks" CHECK ("content_blobs"."bytes" is not null or "content_blobs"."chunk_bytes" is not null);