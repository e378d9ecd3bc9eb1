-- FlowForge 0010: the outbox drain takes rows under a short committed lease.
-- take_outbox no longer hands out row locks held across broker I/O: it moves
-- a row's next_attempt_at past a lease and commits, so another daemon skips
-- it until the lease ends; mark_published / defer_outbox settle it. Every
-- unpublished row now says when it may be taken next (next_attempt_at), so
-- the drain is one ordered range scan that deferred rows do not slow down.
-- depends: 0009_lookup_indexes

UPDATE flowforge.outbox_message SET next_attempt_at = created_at
WHERE published_at IS NULL AND next_attempt_at IS NULL;

ALTER TABLE flowforge.outbox_message ALTER COLUMN next_attempt_at SET DEFAULT now();
ALTER TABLE flowforge.outbox_message
    ADD CONSTRAINT outbox_unpublished_has_next_attempt
        CHECK (published_at IS NOT NULL OR next_attempt_at IS NOT NULL) NOT VALID;
