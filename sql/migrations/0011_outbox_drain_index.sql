-- FlowForge 0011: idx_outbox_pending follows the drain's new order.
-- The seed's (created_at) WHERE published_at IS NULL served "oldest first";
-- the drain now takes "available first" (next_attempt_at: created, deferred,
-- or the end of a take lease), so the index is rebuilt on that column under
-- the same name, CONCURRENTLY (outside a transaction: the drain keeps running).
-- transactional: false
-- depends: 0010_outbox_take_lease

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_outbox_available ON flowforge.outbox_message (next_attempt_at)
    WHERE published_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_outbox_pending;
ALTER INDEX flowforge.idx_outbox_available RENAME TO idx_outbox_pending;
ALTER TABLE flowforge.outbox_message VALIDATE CONSTRAINT outbox_unpublished_has_next_attempt;
