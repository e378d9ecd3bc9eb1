-- transactional: false
-- One inverse per statement of 0011, last first: yoyo pairs them up, so a
-- migration that failed half-way is undone step by step.
SELECT 'VALIDATE CONSTRAINT needs no undo';
ALTER INDEX IF EXISTS flowforge.idx_outbox_pending RENAME TO idx_outbox_available;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_outbox_pending ON flowforge.outbox_message (created_at)
    WHERE published_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_outbox_available;
