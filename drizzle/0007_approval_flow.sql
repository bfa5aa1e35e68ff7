ALTER TABLE "approvals" ADD COLUMN "display_diff" text;--> statement-breakpoint
-- The gateway denies queued calls directly, and an end-of-batch signal skips calls still awaiting approval.
CREATE OR REPLACE FUNCTION foya_guard_tool_call_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status
     AND (OLD.status, NEW.status) NOT IN (VALUES ('queued','awaiting_approval'), ('queued','running'), ('queued','denied'), ('queued','skipped'), ('queued','cancelled'), ('awaiting_approval','queued'), ('awaiting_approval','denied'), ('awaiting_approval','skipped'), ('awaiting_approval','cancelled'), ('running','succeeded'), ('running','failed'), ('running','cancelled'), ('running','interrupted')) THEN
    RAISE EXCEPTION 'tool call % cannot move from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
