-- FlowForge 0027: the indexes the inspection views (0026) need, built
-- CONCURRENTLY (claims, completions and steps go on), each with the query it
-- serves as its comment.
--   idx_event_throughput  the events of a recent window: claims in the last minute (queue_depth), task runs and
--                         work items that succeeded or failed in the last hour and day (tenant_usage). Partial on
--                         the kinds those count, (kind, created_at) so each is one range scan of its window, with
--                         organization_id and to_state for an index-only count: without it both read the whole
--                         history (no index of task_run_event is led by time).
--   graph_run_live_age    the stuck-run sweep of graph runs: live runs by age (partial on running)
--   machine_run_live_age  the same for machines
-- transactional: false
-- depends: 0026_inspection_views
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_event_throughput ON flowforge.task_run_event (kind, created_at)
    INCLUDE (organization_id, to_state)
    WHERE kind IN ('claimed', 'completed', 'failed', 'lease_expired', 'timed_out');
CREATE INDEX CONCURRENTLY IF NOT EXISTS graph_run_live_age ON flowforge.graph_run (created_at) WHERE status = 'running';
CREATE INDEX CONCURRENTLY IF NOT EXISTS machine_run_live_age ON flowforge.machine_run (created_at)
    WHERE status = 'running';
COMMENT ON INDEX flowforge.idx_event_throughput IS
  'the events of a recent window: claims in the last minute (queue_depth), task runs and work items that succeeded '
  'or failed for good in the last hour and day (tenant_usage)';
COMMENT ON INDEX flowforge.graph_run_live_age IS
  'WHERE status = ''running'' AND created_at < now() - threshold: the stuck-run sweep of graph runs (stuck_runs)';
COMMENT ON INDEX flowforge.machine_run_live_age IS
  'WHERE status = ''running'' AND created_at < now() - threshold: the stuck-run sweep of machines (stuck_runs)';
