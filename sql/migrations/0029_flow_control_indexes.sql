-- FlowForge 0029: the lane indexes flow control's claim reads (0028), built
-- CONCURRENTLY (claims and completions go on). Partial on units that have a
-- lane, so a unit without flow control never enters them: an installation
-- that does not use flow control writes nothing more than before.
--   idx_taskrun_flow_lane      the ready task runs of a queue by lane, in claim order within each lane:
--                              the lanes with ready work (a loose index scan), then each lane's first units
--   work_item_flow_lane_idx    the same for pending work items
-- transactional: false
-- depends: 0028_flow_control

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_flow_lane ON flowforge.task_run
    (organization_id, queue, flow_lane, priority, ready_at) WHERE state = 'ready' AND flow_lane IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS work_item_flow_lane_idx ON flowforge.work_item
    (organization_id, queue, flow_lane, priority, next_attempt_at) WHERE status = 'pending' AND flow_lane IS NOT NULL;
COMMENT ON INDEX flowforge.idx_taskrun_flow_lane IS
  'flow control''s claim of task runs: the lanes of a queue with ready work (a loose index scan), each lane''s first '
  'ready units in claim order; why_not_ready and queue_depth''s held-back counts';
COMMENT ON INDEX flowforge.work_item_flow_lane_idx IS
  'flow control''s claim of work items: the lanes of a queue with pending work (a loose index scan), each lane''s '
  'first pending items in claim order; why_not_ready and queue_depth''s held-back counts';
