CREATE TABLE "project_placements" (
	"project_id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"host_id" text,
	"epoch" bigint NOT NULL,
	"placed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "project_placements" ADD CONSTRAINT "project_placements_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "project_placements" ADD CONSTRAINT "project_placements_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "project_placements_host_idx" ON "project_placements" USING btree ("host_id");