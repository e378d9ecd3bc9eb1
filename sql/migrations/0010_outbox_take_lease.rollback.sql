ALTER TABLE flowforge.outbox_message DROP CONSTRAINT outbox_unpublished_has_next_attempt;
ALTER TABLE flowforge.outbox_message ALTER COLUMN next_attempt_at DROP DEFAULT;
