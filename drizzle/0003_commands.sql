CREATE TABLE "commands" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"session_id" text NOT NULL,
	"run_id" text NOT NULL,
	"command" text NOT NULL,
	"status" text NOT NULL,
	"exit_code" integer,
	"signal" text,
	"owner_worker" text NOT NULL,
	"lease_until" timestamp with time zone NOT NULL,
	"output" text DEFAULT '' NOT NULL,
	"output_bytes" bigint DEFAULT 0 NOT NULL,
	"output_lines" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "commands" ADD CONSTRAINT "commands_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commands" ADD CONSTRAINT "commands_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commands" ADD CONSTRAINT "commands_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "commands_session_idx" ON "commands" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "commands_running_idx" ON "commands" USING btree ("lease_until") WHERE status = 'running';