CREATE TABLE "mcp_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"project_id" text,
	"name" text NOT NULL,
	"transport" jsonb NOT NULL,
	"startup_timeout_ms" integer,
	"call_timeout_ms" integer,
	"defer_tools" boolean,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_tenant_name_idx" ON "mcp_servers" USING btree ("tenant_id","name") WHERE project_id is null;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_project_name_idx" ON "mcp_servers" USING btree ("tenant_id","project_id","name") WHERE project_id is not null;