-- Regression (issue 13): start_run of a graph with an idempotency key failed
-- at COMMIT with 23503 idempotency_key_run_fkey: 0003's deferred foreign key
-- tied the key to workflow_run, and a graph run has no workflow_run row.
-- pgTAP files roll back, so the deferred check never ran in them; SET
-- CONSTRAINTS ALL IMMEDIATE runs it here. Fixed by 0018/0019 (the key
-- references the run directory, engine_run, one row per run of any engine).
BEGIN;
SELECT plan(6);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge_test.define_graph_single('idem_graph', '{"queue": "qik"}') \gset
SELECT flowforge_test.define_single('idem_dag', '{"queue": "qik"}') \gset

SELECT flowforge.start_run('idem_graph', '{"n": 1}', 'graph-key') AS g \gset
SELECT flowforge.start_run('idem_dag', '{"n": 1}', 'dag-key') AS d \gset
SELECT lives_ok('SET CONSTRAINTS ALL IMMEDIATE', 'the keys of a graph run and a DAG run pass the deferred check (as at COMMIT)');
SET CONSTRAINTS ALL DEFERRED;
SELECT is(flowforge.start_run('idem_graph', '{"n": 1}', 'graph-key'), :'g'::uuid, 'the same key and request return the first graph run');
SELECT is((SELECT count(*)::int FROM flowforge.graph_run WHERE idempotency_key = 'graph-key'), 1, 'and start no second one');
SELECT throws_ok($$SELECT flowforge.start_run('idem_graph', '{"n": 2}', 'graph-key')$$, 'FF006', NULL,
                 'the key reused for another request: FF006');
SELECT throws_ok($$INSERT INTO flowforge.idempotency_key (organization_id, key, workflow_run_id, request_hash)
                   VALUES (flowforge.current_organization(), 'dangling', gen_random_uuid(), 'x');
                   SET CONSTRAINTS ALL IMMEDIATE$$,
                 '23503', NULL, 'a key naming no run at all is still refused');
SELECT is(flowforge_test.graph_status(:'g'), 'running', 'the graph run started');

SELECT * FROM finish();
ROLLBACK;
