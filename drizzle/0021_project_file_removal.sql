ALTER TABLE "projects" ADD COLUMN "files_removed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "removal_owner" text;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "removal_lease_until" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "projects_files_left_idx" ON "projects" USING btree ("deleted_at") WHERE deleted_at is not null and files_removed_at is null;