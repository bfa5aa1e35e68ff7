ALTER TABLE "events" DROP CONSTRAINT "events_session_id_sessions_id_fk";
--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_tenant_id_tenants_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_tenant_id_tenants_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_session_id_sessions_id_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_run_id_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "steps" DROP CONSTRAINT "steps_tenant_id_tenants_id_fk";
--> statement-breakpoint
ALTER TABLE "steps" DROP CONSTRAINT "steps_run_id_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "tool_calls" DROP CONSTRAINT "tool_calls_tenant_id_tenants_id_fk";
--> statement-breakpoint
ALTER TABLE "tool_calls" DROP CONSTRAINT "tool_calls_session_id_sessions_id_fk";
--> statement-breakpoint
ALTER TABLE "tool_calls" DROP CONSTRAINT "tool_calls_run_id_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "tool_calls" DROP CONSTRAINT "tool_calls_step_id_steps_id_fk";
--> statement-breakpoint
ALTER TABLE "tool_calls" DROP CONSTRAINT "tool_calls_child_run_id_runs_id_fk";
--> statement-breakpoint
DROP INDEX "runs_pending_idx";--> statement-breakpoint
CREATE INDEX "runs_active_idx" ON "runs" USING btree ("status") WHERE status in ('queued', 'running');