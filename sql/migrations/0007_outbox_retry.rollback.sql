ALTER TABLE flowforge.outbox_message
    DROP CONSTRAINT outbox_publish_attempts_non_negative,
    DROP COLUMN last_error,
    DROP COLUMN next_attempt_at,
    DROP COLUMN publish_attempts;
