CREATE TABLE "session_branches" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"session_id" text NOT NULL,
	"at" jsonb NOT NULL,
	"tip_checkpoint_id" text,
	"rewound_to_checkpoint_id" text,
	"message_count" integer NOT NULL,
	"restored_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "branch_id" text;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "workspace_reset_to" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "branch_id" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "forked_from" jsonb;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "history_epoch" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "session_branches" ADD CONSTRAINT "session_branches_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_branches" ADD CONSTRAINT "session_branches_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "session_branches_session_idx" ON "session_branches" USING btree ("session_id");