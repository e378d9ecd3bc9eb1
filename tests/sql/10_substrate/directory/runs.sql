-- The run directory: every run of every engine has exactly one engine_run
-- row, written by start_run in its transaction; ended_at is set when the run
-- ends and the first end is kept; retry_run re-opens the row; a later fact
-- completes the row and never erases an earlier one. resolve_run reads it;
-- get_run, cancel_run, run_events, list_runs and resolve_run_id work on
-- graph runs as on DAG runs.
BEGIN;
SELECT plan(40);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge_test.define_single('dir_dag', '{"queue": "qdd", "max_attempts": 1}') AS dag_wf \gset
SELECT flowforge_test.define_graph_single('dir_graph', '{"queue": "qdg", "max_attempts": 1}') AS graph_wf \gset

-- ------------------------------------------------------- one row per run
SELECT flowforge.start_run('dir_dag', '{"n": 1}', 'dir-key-1') AS d1 \gset
SELECT flowforge.start_run('dir_graph') AS g1 \gset
SELECT results_eq(
    format($$SELECT run_id, engine_kind::text, definition_id, parent_run_id, triggered_by::text, trigger_firing_id, ended_at,
                    created_at, created_by = session_user::text
             FROM flowforge.engine_run WHERE run_id IN (%L, %L) ORDER BY engine_kind$$, :'d1', :'g1'),
    format($$VALUES (%L::uuid, 'dag', %L::uuid, NULL::uuid, NULL::text, NULL::uuid, NULL::timestamptz,
                     '2030-01-01 00:00:00+00'::timestamptz, true),
                    (%L::uuid, 'graph', %L::uuid, NULL, NULL, NULL, NULL, '2030-01-01 00:00:00+00', true)$$,
           :'d1', :'dag_wf', :'g1', :'graph_wf'),
    'start_run wrote one directory row per run: its engine, its definition version, when and by whom; not ended');
SELECT is(flowforge.start_run('dir_dag', '{"n": 1}', 'dir-key-1'), :'d1'::uuid, 'the same idempotency key returns the first run');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'d1'), 1, 'and writes no second directory row');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run e
           WHERE NOT EXISTS (SELECT 1 FROM flowforge.workflow_run r WHERE r.id = e.run_id AND e.engine_kind = 'dag')
             AND NOT EXISTS (SELECT 1 FROM flowforge.graph_run g WHERE g.run_id = e.run_id AND e.engine_kind = 'graph')), 0,
          'every directory row names a run of its engine');
SELECT is((SELECT count(*)::int FROM flowforge.workflow_run r WHERE NOT EXISTS (SELECT 1 FROM flowforge.engine_run e WHERE e.run_id = r.id))
          + (SELECT count(*)::int FROM flowforge.graph_run g WHERE NOT EXISTS (SELECT 1 FROM flowforge.engine_run e WHERE e.run_id = g.run_id)),
          0, 'every DAG and graph run has its directory row');
-- Same transaction: a start that is rolled back leaves no directory row.
SAVEPOINT before_start;
SELECT flowforge.start_run('dir_graph') AS rolled_back \gset
ROLLBACK TO SAVEPOINT before_start;
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'rolled_back'), 0,
          'a start rolled back takes its directory row with it (written in the same transaction)');

-- ------------------------------------------------- ended_at, first write wins
SELECT flowforge_test.set_clock('2030-01-01 00:00:10+00') \gset
SELECT task_run_id AS d1t, fencing_token AS d1tok FROM flowforge.claim(ARRAY['qdd'], 'w') \gset
SELECT flowforge.fail(:'d1t', :'d1tok', 'fatal', false) \gset
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'d1'), '2030-01-01 00:00:10+00'::timestamptz,
          'a DAG run that failed: ended_at is its end');
SELECT is(flowforge_test.step(:'g1', '{"ok": 1}') ->> 'node', 'work', 'setup: the graph run''s node done');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'g1'), '2030-01-01 00:00:10+00'::timestamptz,
          'a graph run that succeeded: ended_at is its end');
SELECT flowforge_test.set_clock('2030-01-01 00:05:00+00') \gset
SELECT flowforge._record_run_ended(flowforge.current_organization(), :'g1', flowforge.now()) \gset
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'g1'), '2030-01-01 00:00:10+00'::timestamptz,
          'a later end is not written over the first (first write wins)');

-- ------------------------------------------------------- retry re-opens
SELECT flowforge.retry_run(:'d1') \gset
SELECT results_eq(format($$SELECT ended_at, updated_at FROM flowforge.engine_run WHERE run_id = %L$$, :'d1'),
    $$VALUES (NULL::timestamptz, '2030-01-01 00:05:00+00'::timestamptz)$$, 'retry_run of a DAG run re-opens its directory row');
SELECT flowforge_test.set_clock('2030-01-01 00:06:00+00') \gset
SELECT task_run_id AS d1t, fencing_token AS d1tok FROM flowforge.claim(ARRAY['qdd'], 'w') \gset
SELECT flowforge.complete(:'d1t', :'d1tok') \gset
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'d1'), '2030-01-01 00:06:00+00'::timestamptz,
          'the re-opened run''s end is written when it ends again');
SELECT flowforge.start_run('dir_graph') AS g2 \gset
SELECT flowforge.cancel_run(:'g2', 'not today') \gset
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'g2'), '2030-01-01 00:06:00+00'::timestamptz,
          'a cancelled graph run: ended_at set');
SELECT flowforge_test.set_clock('2030-01-01 00:07:00+00') \gset
SELECT flowforge.retry_run(:'g2') \gset
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'g2'), NULL, 'retry_run of a graph run re-opens its directory row');

-- ------------------------------------------------ later facts complete the row
SELECT flowforge._record_run(flowforge.current_organization(), :'g2', 'graph', NULL, flowforge.now(), :'d1'::uuid,
                             'cron', '00000000-0000-0000-0000-0000000000f1') \gset
SELECT results_eq(format($$SELECT definition_id, parent_run_id, triggered_by::text, trigger_firing_id FROM flowforge.engine_run
                           WHERE run_id = %L$$, :'g2'),
    format($$VALUES (%L::uuid, %L::uuid, 'cron', '00000000-0000-0000-0000-0000000000f1'::uuid)$$, :'graph_wf', :'d1'),
    'a later fact fills in the cause (parent, trigger) and keeps the definition it did not name');
SELECT flowforge._record_run(flowforge.current_organization(), :'g2', 'graph', :'dag_wf', flowforge.now(), :'g1'::uuid,
                             'webhook', NULL) \gset
SELECT results_eq(format($$SELECT definition_id, parent_run_id, triggered_by::text FROM flowforge.engine_run WHERE run_id = %L$$, :'g2'),
    format($$VALUES (%L::uuid, %L::uuid, 'cron')$$, :'graph_wf', :'d1'),
    'a conflicting later fact never overwrites an earlier one');
SELECT flowforge._record_run(flowforge.current_organization(), :'g2', 'dag', NULL, flowforge.now()) \gset
SELECT is((SELECT engine_kind::text FROM flowforge.engine_run WHERE run_id = :'g2'), 'graph', 'a run id is one engine''s forever');

-- -------------------------------------------------------------- resolve_run
SELECT is(flowforge.resolve_run(:'g2') - 'created_at' - 'created_by' - 'organization_id',
    jsonb_build_object('run_id', :'g2'::uuid, 'engine_kind', 'graph', 'definition_id', :'graph_wf'::uuid,
                       'definition', 'dir_graph', 'version', 1, 'parent_run_id', :'d1'::uuid, 'triggered_by', 'cron',
                       'trigger_firing_id', '00000000-0000-0000-0000-0000000000f1', 'ended_at', NULL,
                       'deleted_at', NULL, 'deleted_by', NULL),
    'resolve_run: engine, definition and version, cause, ended_at, not deleted');
SELECT is(flowforge.resolve_run(run_id => :'d1') ->> 'engine_kind', 'dag', 'resolve_run of a DAG run (named argument)');
SELECT is((flowforge.resolve_run(:'d1') ->> 'ended_at')::timestamptz, '2030-01-01 00:06:00+00'::timestamptz, 'with its end');
SELECT throws_ok(format('SELECT flowforge.resolve_run(%L)', gen_random_uuid()), 'FF001', NULL, 'resolve_run of an unknown run: FF001');

-- -------------------------------------------- the run verbs and reads on graphs
SELECT results_eq(
    format($$SELECT kind, state, position, steps, path, run_counts, ended_at IS NULL FROM
             (SELECT r ->> 'kind' AS kind, r ->> 'state' AS state, r ->> 'position' AS position, (r ->> 'steps')::int AS steps,
                     r -> 'path' AS path, r -> 'run_counts' AS run_counts, r -> 'ended_at' = 'null' AS ended_at
              FROM flowforge.get_run(%L) r) x$$, :'g1'),
    $$VALUES ('graph', 'succeeded', 'done', 2, '["work", "done"]'::jsonb, '{"work": 1, "done": 1}'::jsonb, false)$$,
    'get_run of a graph run: kind, state, position, steps, path, run_counts, ended');
SELECT is(jsonb_array_length(flowforge.get_run(:'g1') -> 'items'), 1, 'get_run lists its work items');
SELECT is(flowforge.get_run(:'d1') ->> 'kind', 'dag', 'get_run of a DAG run says dag');
SELECT is(flowforge.get_run(:'g2') ->> 'parent_run_id', :'d1', 'get_run shows the cause from the directory');
SELECT throws_ok(format('SELECT flowforge.get_run(%L)', gen_random_uuid()), 'FF001', NULL, 'get_run of an unknown run: FF001');
SELECT is((SELECT string_agg(kind, ', ' ORDER BY seq) FROM flowforge.run_events(:'g1')),
          'run_started, created, claimed, completed, run_succeeded', 'run_events of a graph run');
SELECT throws_ok(format('SELECT * FROM flowforge.run_events(%L)', gen_random_uuid()), 'FF001', NULL, 'run_events of an unknown run: FF001');
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', gen_random_uuid()), 'FF001', NULL, 'cancel_run of an unknown run: FF001');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', gen_random_uuid()), 'FF001', NULL, 'retry_run of an unknown run: FF001');
SELECT is(flowforge.resolve_run_id(left(:'g1', 8)), :'g1'::uuid, 'resolve_run_id finds a graph run by its prefix');

SELECT set_eq(
    $$SELECT workflow_name, kind, state, tasks_total FROM flowforge.list_runs()$$,
    $$VALUES ('dir_graph', 'graph', 'running', NULL::int), ('dir_graph', 'graph', 'succeeded', NULL),
             ('dir_dag', 'dag', 'succeeded', 1)$$,
    'list_runs: every engine''s runs with their kind and state (the task counters are a DAG''s)');
SELECT is((SELECT id FROM flowforge.list_runs(max_rows => 1)), :'g2'::uuid, 'newest first: the graph run started last');
SELECT results_eq(
    $$SELECT id FROM flowforge.list_runs(workflow => 'dir_graph', with_state => 'succeeded')$$,
    format($$VALUES (%L::uuid)$$, :'g1'), 'list_runs of one graph workflow, in one state');
SELECT results_eq($$SELECT count(*)::int FROM flowforge.list_runs(workflow => 'dir_graph')$$, $$VALUES (2)$$,
                  'list_runs of one workflow: only its runs');
SELECT results_eq($$SELECT finished_at FROM flowforge.list_runs(workflow => 'dir_graph', with_state => 'succeeded')$$,
                  $$VALUES ('2030-01-01 00:00:10+00'::timestamptz)$$, 'list_runs shows a graph run''s finish');
SELECT throws_ok($$SELECT * FROM flowforge.list_runs(workflow => 'no_such')$$, 'FF001', NULL, 'list_runs of an unknown workflow: FF001');
SELECT is(flowforge_test.graph_status(:'g2'), 'running', 'setup: g2 running again');
SELECT lives_ok(format('SELECT flowforge.cancel_run(%L)', :'g2'), 'cancel_run of a graph run, through the directory');
SELECT is((SELECT state FROM flowforge.list_runs() WHERE id = :'g2'), 'cancelled', 'list_runs shows it cancelled');

SELECT * FROM finish();
ROLLBACK;
