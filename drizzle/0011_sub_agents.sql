ALTER TABLE "sessions" ADD COLUMN "parent_session_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "parent_run_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "parent_call_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "depth" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD COLUMN "child_run_id" text;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_child_run_id_runs_id_fk" FOREIGN KEY ("child_run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "tool_calls_child_run_idx" ON "tool_calls" USING btree ("child_run_id") WHERE child_run_id is not null;