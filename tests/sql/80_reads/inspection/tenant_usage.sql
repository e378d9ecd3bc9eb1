-- tenant_usage (0026): per organization — runs by engine and state (exact),
-- task runs and work items that succeeded or failed for good in the last hour
-- and day, and its history (rows and bytes: exact while the tables are this
-- small, as here; a block sample scaled by pg_class beyond ~50,000 rows).
-- A second organization's work is done by a login of its own.
BEGIN;
SELECT plan(10);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT columns_are('flowforge', 'tenant_usage', ARRAY[
    'organization_id', 'organization', 'runs', 'live_runs', 'runs_by_engine', 'succeeded_last_hour',
    'failed_last_hour', 'succeeded_last_day', 'failed_last_day', 'history_rows', 'history_bytes', 'history',
    'history_exact'], 'tenant_usage has its columns');

-- The default organization, at 00:00: a run that succeeds, one whose only task fails for good, one that
-- stays running; a graph run and a machine run, live.
SELECT flowforge_test.define_single('tu_ok', '{"queue": "tu-ok"}') \gset
SELECT flowforge_test.define_single('tu_bad', '{"queue": "tu-bad", "max_attempts": 1}') \gset
SELECT flowforge_test.define_single('tu_live', '{"queue": "tu-live"}') \gset
SELECT flowforge.start_run('tu_ok') AS r_ok \gset
SELECT flowforge.start_run('tu_bad') AS r_bad \gset
SELECT flowforge.start_run('tu_live') AS r_live \gset
SELECT task_run_id AS ok_tr, fencing_token AS ok_tok FROM flowforge_test.claim_key(:'r_ok', 'only', 'tu-ok') \gset
SELECT flowforge.complete(:'ok_tr', :'ok_tok') \gset
SELECT task_run_id AS bad_tr, fencing_token AS bad_tok FROM flowforge_test.claim_key(:'r_bad', 'only', 'tu-bad') \gset
SELECT flowforge.fail(:'bad_tr', :'bad_tok', 'boom') \gset
SELECT flowforge_test.define_graph_single('tu_graph', '{"queue": "tu-graph"}') \gset
SELECT flowforge.start_run('tu_graph') AS r_graph \gset
SELECT flowforge_test.define_order('tu_order', '{"queue": "tu-order"}') \gset
SELECT flowforge.start_run('tu_order') \gset

-- Another organization, through a login of its own: one DAG run, its task succeeded at 01:30.
-- Named per backend: roles are cluster-wide, and other test databases may run this file at the same time.
SELECT 'tu_login_' || pg_backend_pid() AS tu_login \gset
CREATE ROLE :"tu_login" LOGIN;
SELECT flowforge.create_organization('tu-other', 'Another tenant') \gset
SELECT flowforge.add_member('tu-other', :'tu_login', 'owner') \gset
SET LOCAL SESSION AUTHORIZATION :"tu_login";
SELECT flowforge.define_workflow('{"name": "tu_theirs", "tasks": [{"key": "x", "queue": "tu-theirs"}]}') \gset
SELECT flowforge.start_run('tu_theirs') AS r_theirs \gset
RESET SESSION AUTHORIZATION;
SELECT flowforge_test.set_clock('2030-01-01 01:30:00+00') \gset
SET LOCAL SESSION AUTHORIZATION :"tu_login";
SELECT task_run_id AS their_tr, fencing_token AS their_tok FROM flowforge.claim(ARRAY['tu-theirs'], 'tu-worker') \gset
SELECT flowforge.complete(:'their_tr', :'their_tok') \gset
RESET SESSION AUTHORIZATION;

-- At 02:00 the default organization completes its graph run's item: within the hour; the rest is within the day.
SELECT flowforge_test.set_clock('2030-01-01 02:00:00+00') \gset
SELECT flowforge_test.step(:'r_graph') \gset

SELECT results_eq(
    $$SELECT organization, runs, live_runs, runs_by_engine, succeeded_last_hour, failed_last_hour, succeeded_last_day,
             failed_last_day, history_exact
      FROM flowforge.tenant_usage WHERE organization IN ('default', 'tu-other') ORDER BY organization$$,
    $$VALUES ('default'::text, 5::bigint, 2::bigint,
              '{"dag": {"failed": 1, "running": 1, "succeeded": 1}, "graph": {"succeeded": 1},
                "statemachine": {"running": 1}}'::jsonb, 1::bigint, 0::bigint, 2::bigint, 1::bigint, true),
             ('tu-other', 1, 0, '{"dag": {"succeeded": 1}}', 1, 0, 1, 0, true)$$,
    'per organization: runs by engine and state, live runs, successes and failures for good in the last hour and '
    'day (the graph item at 02:00 and the other tenant''s task at 01:30 within the hour), exact while the tables are small');

SELECT flowforge_test.set_clock('2030-01-02 01:45:00+00') \gset
SELECT results_eq(
    $$SELECT organization, succeeded_last_hour, succeeded_last_day, failed_last_day
      FROM flowforge.tenant_usage WHERE organization IN ('default', 'tu-other') ORDER BY organization$$,
    $$VALUES ('default'::text, 0::bigint, 1::bigint, 0::bigint), ('tu-other', 0, 0, 0)$$,
    'the next day at 01:45: only the 02:00 completion is within the last day');

-- History: with every table sampled whole, the rows are exact counts per organization and table, and the
-- bytes of a table are shared out by rows.
SELECT results_eq(
    $$SELECT u.organization, (u.history -> 'task_run_event' ->> 'rows')::bigint,
             (u.history -> 'machine_transition' ->> 'rows')::bigint, (u.history -> 'audit_log' ->> 'rows')::bigint
      FROM flowforge.tenant_usage u WHERE u.organization IN ('default', 'tu-other') ORDER BY 1$$,
    $$SELECT o.slug::text,
             (SELECT count(*) FROM flowforge.task_run_event e WHERE e.organization_id = o.id),
             (SELECT nullif(count(*), 0) FROM flowforge.machine_transition m WHERE m.organization_id = o.id),
             (SELECT nullif(count(*), 0) FROM flowforge.audit_log a WHERE a.organization_id = o.id)
      FROM flowforge.organization o WHERE o.slug IN ('default', 'tu-other') ORDER BY 1$$,
    'history rows per organization and table are the exact counts while each table is smaller than the sample');
SELECT is((SELECT history_rows FROM flowforge.tenant_usage WHERE organization = 'default'),
          (SELECT (SELECT count(*) FROM flowforge.task_run_event WHERE organization_id = o.id)
                + (SELECT count(*) FROM flowforge.machine_transition WHERE organization_id = o.id)
                + (SELECT count(*) FROM flowforge.trigger_firing WHERE organization_id = o.id)
                + (SELECT count(*) FROM flowforge.audit_log WHERE organization_id = o.id)
           FROM flowforge.organization o WHERE o.slug = 'default'),
          'history_rows sums the four history tables');
-- (A partitioned table, 0032, has no storage of its own: its size is its partitions'.)
SELECT is((SELECT sum((u.history -> 'task_run_event' ->> 'bytes')::bigint) FROM flowforge.tenant_usage u),
          (SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree('flowforge.task_run_event') t WHERE t.isleaf),
          'a history table''s bytes, shared out by rows, add up to its size (pg_total_relation_size of its partitions)');
SELECT cmp_ok((SELECT (history -> 'task_run_event' ->> 'bytes')::bigint FROM flowforge.tenant_usage WHERE organization = 'default'),
              '>', (SELECT (history -> 'task_run_event' ->> 'bytes')::bigint FROM flowforge.tenant_usage WHERE organization = 'tu-other'),
              'the organization with more history has the larger share');
SELECT results_eq(
    $$SELECT runs, live_runs, runs_by_engine, history_rows FROM flowforge.tenant_usage u
      JOIN flowforge.organization o ON o.id = u.organization_id WHERE o.slug = 'tu-empty'$$,
    $$VALUES (0::bigint, 0::bigint, '{}'::jsonb, 1::bigint)$$,
    'an organization that did nothing has its row: no runs, its history the audit row of its creation')
FROM (SELECT flowforge.create_organization('tu-empty', 'Empty')) x;

SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.tenant_usage WHERE organization IN ('default', 'tu-other', 'tu-empty')), 3,
          'flowforge_readonly reads tenant_usage, every organization');
RESET ROLE;
SET LOCAL SESSION AUTHORIZATION :"tu_login";
SELECT throws_ok($$SELECT * FROM flowforge.tenant_usage$$, '42501', NULL,
                 'a tenant''s own login cannot read the inspection views (they are the DBA''s)');
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
