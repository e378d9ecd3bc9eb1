-- FlowForge 0007: a message the broker refuses waits before it is tried again.
-- Without this, a batch of messages that can never be published (no queue
-- bound to the exchange, an exchange of the wrong type) would come back at the
-- head of every take_outbox, oldest first, and block every newer message.
-- depends: 0006_security

ALTER TABLE flowforge.outbox_message
    ADD COLUMN publish_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN last_error text,
    ADD CONSTRAINT outbox_publish_attempts_non_negative CHECK (publish_attempts >= 0);
