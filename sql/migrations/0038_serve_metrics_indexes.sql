-- FlowForge 0038: the two indexes /metrics needs (issue 20), each with the
-- query it serves as its comment. flowforge serve counts what happened since
-- its last scrape (metrics(since) / metrics_all(since)): every count is one
-- range scan of that window, never of the history.
--   idx_event_retries        retries scheduled by fail / fail_work (kind retry_scheduled, which
--                            idx_event_throughput of 0027 leaves out): (created_at) for the window,
--                            organization_id included for the count per organization
--   trigger_firing_recorded  trigger firings recorded in the window, by outcome: recorded_at is the database's
--                            time of the write (fired_on is the source's, and may lie in the past), so a window
--                            over it misses no firing written late
-- Both tables are partitioned by month (0032), and PostgreSQL builds no index
-- CONCURRENTLY on a partitioned table: each index is declared ON ONLY the
-- parent, built on every existing partition under the partition's naming rule
-- (<index>_<pYYYYMM|default>, commented like the parent's, as
-- _history_partition_create does for later months) and attached. A build
-- holds its partition's SHARE lock for its duration: on a large current month,
-- run this migration when history inserts may pause (docs/operations.md §12).
-- depends: 0037_time_ordered_ids
CREATE INDEX IF NOT EXISTS idx_event_retries ON ONLY flowforge.task_run_event (created_at)
    INCLUDE (organization_id) WHERE kind = 'retry_scheduled';
CREATE INDEX IF NOT EXISTS trigger_firing_recorded ON ONLY flowforge.trigger_firing (recorded_at)
    INCLUDE (organization_id, outcome);
COMMENT ON INDEX flowforge.idx_event_retries IS
  'the retries scheduled in a scrape window (metrics / metrics_all: flowforge_retries_total)';
COMMENT ON INDEX flowforge.trigger_firing_recorded IS
  'the trigger firings recorded in a scrape window, by outcome (metrics / metrics_all: flowforge_trigger_firings_total)';
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN
        SELECT pi.relname::text AS idx, part.oid::regclass AS part,
               pi.relname || substring(part.relname FROM '(_p[0-9]{6}|_default)$') AS child,
               pg_get_indexdef(pi.oid) AS def, obj_description(pi.oid, 'pg_class') AS comment
        FROM pg_class pi
        JOIN pg_index px ON px.indexrelid = pi.oid
        JOIN pg_inherits ti ON ti.inhparent = px.indrelid
        JOIN pg_class part ON part.oid = ti.inhrelid
        WHERE pi.relnamespace = 'flowforge'::regnamespace AND pi.relname IN ('idx_event_retries', 'trigger_firing_recorded')
    LOOP
        EXECUTE regexp_replace(v.def, '^CREATE INDEX \S+ ON ONLY \S+ ',
                               'CREATE INDEX IF NOT EXISTS ' || quote_ident(v.child) || ' ON ' || v.part::text || ' ');
        EXECUTE format('COMMENT ON INDEX flowforge_history.%I IS %L', v.child, v.comment);
        EXECUTE format('ALTER INDEX flowforge.%I ATTACH PARTITION flowforge_history.%I', v.idx, v.child);
    END LOOP;
END;
$$;
