-- The status guards run only when the status really changes: a claim sets status = 'running' on
-- a run already running, every step, and a trigger without WHEN would run its function each time.
DROP TRIGGER runs_status_guard ON runs;
--> statement-breakpoint
CREATE TRIGGER runs_status_guard BEFORE UPDATE OF status ON runs FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION foya_guard_run_status();
--> statement-breakpoint
DROP TRIGGER tool_calls_status_guard ON tool_calls;
--> statement-breakpoint
CREATE TRIGGER tool_calls_status_guard BEFORE UPDATE OF status ON tool_calls FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION foya_guard_tool_call_status();
--> statement-breakpoint
-- Room on each page for a step's new row version, so its update can stay on the page (HOT).
ALTER TABLE runs SET (fillfactor = 70);
