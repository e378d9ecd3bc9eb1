-- FlowForge 0021: the indexes fan-out needs, built CONCURRENTLY (claims and
-- completions go on), and 0020's work-item constraints validated (SHARE
-- UPDATE EXCLUSIVE, which they pass too).
--   work_item_checkpoint_item_idx      a fan-out's children by element: cancel, failed indexes, reads
--   work_item_checkpoint_live_uq       at most one live child per element (a dispatch twice is refused)
--   work_item_checkpoint_done_uq       at most one success per element; "already succeeded?" on resume,
--                                      and the output collected in element order
--   idx_taskrun_fanout_ready           the ready fan-out tasks of a run (nearly always none)
-- transactional: false
-- depends: 0020_fanout

CREATE INDEX CONCURRENTLY IF NOT EXISTS work_item_checkpoint_item_idx ON flowforge.work_item
    (checkpoint_id, checkpoint_generation, item_index) WHERE checkpoint_id IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS work_item_checkpoint_live_uq ON flowforge.work_item
    (checkpoint_id, checkpoint_generation, item_index)
    WHERE checkpoint_id IS NOT NULL AND status IN ('pending', 'dispatched');
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS work_item_checkpoint_done_uq ON flowforge.work_item
    (checkpoint_id, checkpoint_generation, item_index)
    WHERE checkpoint_id IS NOT NULL AND status = 'completed';
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_fanout_ready ON flowforge.task_run (workflow_run_id)
    WHERE state = 'ready' AND fans_out;
ALTER TABLE flowforge.work_item VALIDATE CONSTRAINT work_item_checkpoint_fkey;
ALTER TABLE flowforge.work_item VALIDATE CONSTRAINT work_item_child_complete;
