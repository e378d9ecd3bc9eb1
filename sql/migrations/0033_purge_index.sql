-- FlowForge 0033: the index purge finds its runs by (0032, issue 19), built
-- CONCURRENTLY (runs start and end meanwhile).
--   engine_run_ended_created  an organization's ended runs, oldest created first: purge takes the runs that ended
--                             before its cutoff in creation order, so that the oldest run still in the directory —
--                             which decides whether a month of history can be dropped whole — moves forward as it
--                             goes. Partial on ended runs: live runs (a machine may rest for months) are never read.
-- transactional: false
-- depends: 0032_partitioned_history
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_ended_created ON flowforge.engine_run (organization_id, created_at)
    WHERE ended_at IS NOT NULL;
COMMENT ON INDEX flowforge.engine_run_ended_created IS
  'purge: an organization''s runs that ended, oldest created first (WHERE ended_at < cutoff ORDER BY created_at)';
