ALTER TABLE "tenants" ADD COLUMN "quotas" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "steps_tenant_day_idx" ON "steps" USING btree ("tenant_id","created_at");