ALTER TABLE "tenants" ADD COLUMN "tool_uid_slot" integer NOT NULL GENERATED ALWAYS AS IDENTITY (sequence name "tenants_tool_uid_slot_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 100000000 START WITH 1 CACHE 1);--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "full_access" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "tool_limits" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "tenants_tool_uid_slot_idx" ON "tenants" USING btree ("tool_uid_slot");