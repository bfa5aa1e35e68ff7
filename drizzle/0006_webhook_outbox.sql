-- Webhook outbox (SPEC S4): a delivery row exists exactly when its event committed, whichever
-- statement appended the event. The worker's poller turns rows into BullMQ jobs.
CREATE FUNCTION foya_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, session_id, event_seq, event_type, payload)
  SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), w.tenant_id, w.id, NEW.session_id, NEW.seq, NEW.type,
         jsonb_build_object(
           'type', NEW.type,
           'timestamp', to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'data', jsonb_build_object('sessionId', NEW.session_id, 'runId', NEW.run_id, 'seq', NEW.seq, 'event', NEW.data))
  FROM webhooks w
  WHERE w.tenant_id = NEW.tenant_id AND w.disabled_at IS NULL
    AND (w.event_types ? NEW.type OR w.event_types ? '*')
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Only the types a webhook may carry; text deltas and the like never pay for the trigger.
CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events FOR EACH ROW
  WHEN (NEW.type IN ('approval_request', 'approval_resolved', 'run_end', 'run_status'))
  EXECUTE FUNCTION foya_webhook_outbox();
