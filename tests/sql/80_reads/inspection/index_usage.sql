-- index_usage (0026): every flowforge index with its scans (pg_stat_user_indexes),
-- size, kind, the query it serves (its comment, from docs/data-model.md) and
-- its definition; "unused" is the evidence for dropping one. That every index
-- has such a comment is a catalog invariant (tests/sql/00_catalog/indexes.sql).
BEGIN;
SELECT plan(10);

SELECT columns_are('flowforge', 'index_usage', ARRAY[
    'table_name', 'index_name', 'idx_scan', 'idx_tup_read', 'idx_tup_fetch', 'size_bytes', 'size', 'is_unique',
    'is_primary', 'is_valid', 'is_partial', 'unused', 'serves', 'definition', 'counted_since'],
    'index_usage has its columns');

SELECT set_eq(
    $$SELECT table_name || '.' || index_name FROM flowforge.index_usage$$,
    $$SELECT t.relname || '.' || i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid WHERE t.relnamespace = 'flowforge'::regnamespace$$,
    'one row per flowforge index, and no other');
SELECT results_eq(
    $$SELECT table_name, index_name, is_unique, is_primary, is_valid, is_partial, serves, definition
      FROM flowforge.index_usage WHERE index_name = 'idx_taskrun_state_age'$$,
    $$VALUES ('task_run'::text, 'idx_taskrun_state_age'::text, false, false, true, true,
              'the claim (and push dispatch): ready tasks of one organization and queue, lowest priority number first, '
              'then longest ready'::text,
              'CREATE INDEX idx_taskrun_state_age ON flowforge.task_run USING btree (organization_id, queue, priority, ready_at) WHERE ((state)::text = ''ready''::text)'::text)$$,
    'the claim index: its table, kind, the query it serves and its definition');
SELECT is((SELECT serves FROM flowforge.index_usage WHERE index_name = 'idx_event_throughput'),
          'the events of a recent window: claims in the last minute (queue_depth), task runs and work items that succeeded '
          'or failed for good in the last hour and day (tenant_usage)',
          '0027''s index serves the inspection views'' windows');
SELECT is_empty($$SELECT index_name FROM flowforge.index_usage WHERE serves IS NULL$$,
                'every row says which query its index serves');
SELECT results_eq(
    $$SELECT index_name, idx_scan, idx_tup_read, size_bytes FROM flowforge.index_usage
      WHERE table_name NOT IN ('task_run_event', 'audit_log', 'trigger_firing') ORDER BY index_name$$,
    $$SELECT s.indexrelname::text COLLATE "default", s.idx_scan, s.idx_tup_read, pg_relation_size(s.indexrelid)
      FROM pg_stat_user_indexes s WHERE s.schemaname = 'flowforge' ORDER BY 1$$,
    'the scans and tuples read are pg_stat_user_indexes'', the size pg_relation_size''s');
-- A partitioned table's index (0032) has no scans or storage of its own: its partitions' indexes' add up.
SELECT results_eq(
    $$SELECT index_name, idx_scan, idx_tup_read, size_bytes FROM flowforge.index_usage
      WHERE table_name IN ('task_run_event', 'audit_log', 'trigger_firing') ORDER BY index_name$$,
    $$SELECT pi.relname::text COLLATE "default", sum(s.idx_scan)::bigint, sum(s.idx_tup_read)::bigint,
             sum(pg_relation_size(s.indexrelid))::bigint
      FROM pg_class pi JOIN pg_inherits i ON i.inhparent = pi.oid JOIN pg_stat_user_indexes s ON s.indexrelid = i.inhrelid
      WHERE pi.relnamespace = 'flowforge'::regnamespace AND pi.relkind = 'I'
      GROUP BY pi.relname ORDER BY 1$$,
    'a partitioned index''s scans, tuples read and size are the sums over its partitions'' indexes');
SELECT is_empty($$SELECT index_name FROM flowforge.index_usage WHERE unused AND (is_unique OR idx_scan > 0)$$,
                'an index that enforces uniqueness, or was scanned, is never "unused"');
SELECT is((SELECT DISTINCT counted_since FROM flowforge.index_usage),
          (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()),
          'counted_since is when this database''s statistics were last reset');

SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.index_usage WHERE serves IS NOT NULL),
          (SELECT count(*)::int FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid
           WHERE t.relnamespace = 'flowforge'::regnamespace),
          'flowforge_readonly reads index_usage, comments included');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
