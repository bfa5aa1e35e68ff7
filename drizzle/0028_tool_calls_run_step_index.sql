CREATE INDEX "tool_calls_run_step_idx" ON "tool_calls" USING btree ("run_id","step_index");--> statement-breakpoint
DROP INDEX "tool_calls_run_idx";