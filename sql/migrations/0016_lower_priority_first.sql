-- FlowForge 0016: one meaning of priority in every engine — lower first (seed 002).
-- The DAG's claim took higher priority first; it now takes lower first, like
-- the work-item queue, so the claim indexes are rebuilt in that order,
-- CONCURRENTLY, under their names.
-- transactional: false
-- depends: 0015_substrate

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_state_age_lf ON flowforge.task_run
    (organization_id, queue, priority, ready_at) WHERE state = 'ready';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_state_age;
ALTER INDEX flowforge.idx_taskrun_state_age_lf RENAME TO idx_taskrun_state_age;
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_ready_by_name_lf ON flowforge.task_run
    (organization_id, queue, task_key, priority, ready_at) WHERE state = 'ready';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_ready_by_name;
ALTER INDEX flowforge.idx_taskrun_ready_by_name_lf RENAME TO idx_taskrun_ready_by_name;
