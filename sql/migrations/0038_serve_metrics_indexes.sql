-- FlowForge 0038: the two indexes /metrics needs (issue 20), built
-- CONCURRENTLY (claims, completions and firings go on), each with the query it
-- serves as its comment. flowforge serve counts what happened since its last
-- scrape (metrics(since) / metrics_all(since)): every count is one range scan
-- of that window, never of the history.
--   idx_event_retries        retries scheduled by fail / fail_work (kind retry_scheduled, which
--                            idx_event_throughput of 0027 leaves out): (created_at) for the window,
--                            organization_id included for the count per organization
--   trigger_firing_recorded  trigger firings recorded in the window, by outcome: recorded_at is the database's
--                            time of the write (fired_on is the source's, and may lie in the past), so a window
--                            over it misses no firing written late
-- transactional: false
-- depends: 0027_inspection_indexes
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_event_retries ON flowforge.task_run_event (created_at)
    INCLUDE (organization_id) WHERE kind = 'retry_scheduled';
CREATE INDEX CONCURRENTLY IF NOT EXISTS trigger_firing_recorded ON flowforge.trigger_firing (recorded_at)
    INCLUDE (organization_id, outcome);
COMMENT ON INDEX flowforge.idx_event_retries IS
  'the retries scheduled in a scrape window (metrics / metrics_all: flowforge_retries_total)';
COMMENT ON INDEX flowforge.trigger_firing_recorded IS
  'the trigger firings recorded in a scrape window, by outcome (metrics / metrics_all: flowforge_trigger_firings_total)';
