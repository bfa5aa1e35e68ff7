CREATE TABLE "checkpoint_entries" (
	"checkpoint_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	"path" text NOT NULL,
	"removed" boolean DEFAULT false NOT NULL,
	"kind" text,
	"mode" integer,
	"size" bigint,
	"sha256" text,
	"target" text,
	"stat" jsonb,
	CONSTRAINT "checkpoint_entries_checkpoint_id_path_pk" PRIMARY KEY("checkpoint_id","path")
);
--> statement-breakpoint
CREATE TABLE "workspace_checkpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"project_id" text NOT NULL,
	"session_id" text,
	"run_id" text,
	"step_index" integer,
	"seq" integer NOT NULL,
	"base_id" text,
	"reason" text NOT NULL,
	"entry_count" integer NOT NULL,
	"file_bytes" bigint NOT NULL,
	"tree_digest" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "checkpoint_entries" ADD CONSTRAINT "checkpoint_entries_checkpoint_id_workspace_checkpoints_id_fk" FOREIGN KEY ("checkpoint_id") REFERENCES "public"."workspace_checkpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_checkpoints" ADD CONSTRAINT "workspace_checkpoints_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_checkpoints" ADD CONSTRAINT "workspace_checkpoints_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "workspace_checkpoints_project_seq_idx" ON "workspace_checkpoints" USING btree ("project_id","seq");--> statement-breakpoint
CREATE INDEX "workspace_checkpoints_session_idx" ON "workspace_checkpoints" USING btree ("session_id");