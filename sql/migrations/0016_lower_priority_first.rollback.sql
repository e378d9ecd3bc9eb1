-- transactional: false
-- One inverse per statement of 0016, last first (yoyo pairs them up).
ALTER INDEX IF EXISTS flowforge.idx_taskrun_ready_by_name RENAME TO idx_taskrun_ready_by_name_lf;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_ready_by_name ON flowforge.task_run
    (organization_id, queue, task_key, priority DESC, ready_at) WHERE state = 'ready';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_ready_by_name_lf;
ALTER INDEX IF EXISTS flowforge.idx_taskrun_state_age RENAME TO idx_taskrun_state_age_lf;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_state_age ON flowforge.task_run
    (organization_id, queue, priority DESC, ready_at) WHERE state = 'ready';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_state_age_lf;
