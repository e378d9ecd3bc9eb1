-- FlowForge 0033: the indexes purge finds its runs by (0032, issue 19), built
-- CONCURRENTLY (runs start and end meanwhile).
--   engine_run_ended_created  an organization's ended runs, oldest created first, with their end: purge takes the
--                             runs that ended before its cutoff in creation order, so that the oldest run left in
--                             the directory — which decides when a month of history can be dropped whole — moves
--                             forward as it goes; and (index-only) the oldest run that ended after the cutoff.
--   engine_run_live_created   an organization's live runs, oldest first: the oldest of them, which keeps every month
--                             since its start from being dropped whole (a machine may rest for months).
-- Partial, each on its side of ended_at: a run moves from one to the other once, when it ends.
-- transactional: false
-- depends: 0032_partitioned_history
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_ended_created ON flowforge.engine_run (organization_id, created_at)
    INCLUDE (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_live_created ON flowforge.engine_run (organization_id, created_at)
    WHERE ended_at IS NULL;
COMMENT ON INDEX flowforge.engine_run_ended_created IS
  'purge: an organization''s ended runs, oldest created first (WHERE ended_at < cutoff ORDER BY created_at), and the '
  'oldest that ended after the cutoff (index-only, on the included ended_at)';
COMMENT ON INDEX flowforge.engine_run_live_created IS
  'purge: an organization''s oldest live run (WHERE ended_at IS NULL ORDER BY created_at LIMIT 1): no month since its '
  'start is dropped whole';
