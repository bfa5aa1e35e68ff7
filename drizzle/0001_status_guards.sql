-- Status columns accept only the values and transitions of src/core/run-status.ts and
-- src/core/tool-call-status.ts; test/db/status-guards.test.ts checks the two agree.
ALTER TABLE "runs" ADD CONSTRAINT "runs_status_check" CHECK (status IN ('queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled', 'interrupted'));
--> statement-breakpoint
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_status_check" CHECK (status IN ('queued', 'awaiting_approval', 'running', 'succeeded', 'failed', 'denied', 'skipped', 'cancelled', 'interrupted'));
--> statement-breakpoint
CREATE FUNCTION foya_guard_run_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status
     AND (OLD.status, NEW.status) NOT IN (VALUES ('queued','running'), ('queued','failed'), ('queued','cancelled'), ('running','awaiting_approval'), ('running','completed'), ('running','failed'), ('running','cancelled'), ('running','interrupted'), ('awaiting_approval','running'), ('awaiting_approval','failed'), ('awaiting_approval','cancelled'), ('awaiting_approval','interrupted')) THEN
    RAISE EXCEPTION 'run % cannot move from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER runs_status_guard BEFORE UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION foya_guard_run_status();
--> statement-breakpoint
CREATE FUNCTION foya_guard_tool_call_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status
     AND (OLD.status, NEW.status) NOT IN (VALUES ('queued','awaiting_approval'), ('queued','running'), ('queued','skipped'), ('queued','cancelled'), ('awaiting_approval','queued'), ('awaiting_approval','denied'), ('awaiting_approval','cancelled'), ('running','succeeded'), ('running','failed'), ('running','cancelled'), ('running','interrupted')) THEN
    RAISE EXCEPTION 'tool call % cannot move from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER tool_calls_status_guard BEFORE UPDATE OF status ON tool_calls FOR EACH ROW EXECUTE FUNCTION foya_guard_tool_call_status();
