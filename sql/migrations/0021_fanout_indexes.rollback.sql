-- transactional: false
-- One inverse per statement of 0021, last first (yoyo pairs them up).
SELECT 1;
SELECT 1;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_fanout_ready;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_checkpoint_done_uq;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_checkpoint_live_uq;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_checkpoint_item_idx;
