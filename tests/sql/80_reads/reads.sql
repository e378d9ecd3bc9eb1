-- The read API: list_workflows, get_workflow, list_runs, get_run, and the DBA views.
BEGIN;
SELECT plan(22);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');

SELECT flowforge_test.define_diamond('reads_dag');
SELECT flowforge.define_workflow('{"name": "reads_dag", "tasks": [{"key": "a"}, {"key": "b", "depends_on": ["a"]}]}');
SELECT flowforge_test.define_single('reads_single');
CREATE TEMP TABLE r AS SELECT flowforge.start_run('reads_dag', '{"n": 1}') AS id;
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO r SELECT flowforge.start_run('reads_single');

SELECT results_eq(
    $$SELECT name, version, tasks FROM flowforge.list_workflows() WHERE name LIKE 'reads%' ORDER BY name$$,
    $$VALUES ('reads_dag'::text, 2, 2), ('reads_single'::text, 1, 1)$$,
    'list_workflows: the latest version of each name, with its task count');

SELECT is(flowforge.get_workflow('reads_dag') ->> 'version', '2', 'get_workflow: latest version by default');
SELECT is(flowforge.get_workflow('reads_dag', 1) ->> 'version', '1', 'get_workflow: a given version');
SELECT is(flowforge.get_workflow('reads_dag') ->> 'versions', '2', 'get_workflow: how many versions exist');
SELECT is(jsonb_array_length(flowforge.get_workflow('reads_dag', 1) -> 'spec' -> 'tasks'), 4, 'get_workflow: the normalized spec');
SELECT throws_ok($$SELECT flowforge.get_workflow('nope')$$, 'FF001', NULL, 'get_workflow: unknown name is FF001');
SELECT throws_ok($$SELECT flowforge.get_workflow('reads_dag', 7)$$, 'FF001', NULL, 'get_workflow: unknown version is FF001');

SELECT results_eq(
    $$SELECT workflow_name, state FROM flowforge.list_runs() WHERE workflow_name LIKE 'reads%'$$,
    $$VALUES ('reads_single'::text, 'running'::text), ('reads_dag'::text, 'running'::text)$$,
    'list_runs: newest first');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(workflow => 'reads_dag')), 1, 'list_runs: filter by workflow');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(with_state => 'succeeded')), 0, 'list_runs: filter by state');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(max_rows => 1)), 1, 'list_runs: max_rows');
SELECT throws_ok($$SELECT * FROM flowforge.list_runs(max_rows => 0)$$, 'FF003', NULL, 'list_runs: max_rows 0 is FF003');

CREATE TEMP TABLE g AS SELECT flowforge.get_run((SELECT id FROM r LIMIT 1)) AS doc;
SELECT is((SELECT doc ->> 'workflow' FROM g), 'reads_dag', 'get_run: workflow name');
SELECT is((SELECT doc ->> 'version' FROM g), '2', 'get_run: the version it started');
SELECT is((SELECT doc -> 'input' FROM g), '{"n": 1}'::jsonb, 'get_run: input');
SELECT is((SELECT jsonb_array_length(doc -> 'tasks') FROM g), 2, 'get_run: every task run');
SELECT is((SELECT t -> 'depends_on' FROM g, jsonb_array_elements(doc -> 'tasks') t WHERE t ->> 'key' = 'b'),
          '["a"]'::jsonb, 'get_run: a task''s dependencies');
SELECT is((SELECT t ->> 'state' FROM g, jsonb_array_elements(doc -> 'tasks') t WHERE t ->> 'key' = 'a'),
          'ready', 'get_run: task states');
SELECT throws_ok(format('SELECT flowforge.get_run(%L)', gen_random_uuid()), 'FF001', NULL, 'get_run: unknown id is FF001');

SELECT is((SELECT tasks_finished FROM flowforge.run_overview WHERE id = (SELECT id FROM r LIMIT 1)), 0,
          'run_overview: progress');
SELECT is((SELECT workflow FROM flowforge.run_overview WHERE id = (SELECT id FROM r LIMIT 1)), 'reads_dag',
          'run_overview: workflow name');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_backlog), 0, 'outbox_backlog: empty for pull queues');

SELECT * FROM finish();
ROLLBACK;
