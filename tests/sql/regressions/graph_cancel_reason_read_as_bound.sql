-- Regression (issue 13): retry_run of a cancelled graph run was refused with
-- FF005 "stopped on its own bound" when the canceller's free-text reason
-- happened to read like one of the engine's ("max_steps", "no edge from node
-- ..."): _graph_retry_run looked at graph_run.reason without looking at the
-- status, and a cancelled run's reason is cancel_run's argument. Fixed in the
-- commit that added this file (only a failed run's reason is the engine's).
BEGIN;
SELECT plan(5);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge_test.define_graph_single('cancel_reason', '{"queue": "qcr"}') \gset

SELECT flowforge.start_run('cancel_reason') AS r1 \gset
SELECT flowforge.cancel_run(:'r1', 'max_steps') \gset
SELECT lives_ok(format('SELECT flowforge.retry_run(%L)', :'r1'), 'a run cancelled with reason "max_steps" is retried');
SELECT is(flowforge_test.graph_status(:'r1'), 'running', 'it runs again');

SELECT flowforge.start_run('cancel_reason') AS r2 \gset
SELECT flowforge.cancel_run(:'r2', 'no edge from node "work" matched, fixing the definition') \gset
SELECT lives_ok(format('SELECT flowforge.retry_run(%L)', :'r2'), 'a run cancelled with a reason reading "no edge from node ..." is retried');
SELECT is(flowforge_test.item_status(flowforge_test.item_of(:'r2')), 'pending', 'its node has a new work item');

-- A real bound failure is still refused.
SELECT flowforge_test.define_graph_single('cancel_reason_bound', '{"queue": "qcr"}', '{"max_steps": 1}') \gset
SELECT flowforge.start_run('cancel_reason_bound') AS r3 \gset
SELECT flowforge_test.step(:'r3') \gset
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'r3'), 'FF005', NULL, 'a run that failed on max_steps is still not retried');

SELECT * FROM finish();
ROLLBACK;
