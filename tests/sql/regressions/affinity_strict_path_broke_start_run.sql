-- Regression (issue 13): an affinity given as a strict-mode jsonpath
-- ("strict $.run.customer") is accepted by define_workflow, but when the
-- input lacked the key _affinity_key raised SQLSTATE 2203A ("JSON object does
-- not contain key"): start_run failed with a raw error for a DAG task or a
-- graph start node, and for a later graph node complete_work of the node
-- before it failed, so that item could never be completed (it was reaped and
-- failed for good with a misleading lease error). A path that finds nothing
-- pins nothing, as the function's comment says. Fixed in the commit that
-- added this file (the path is evaluated silently).
BEGIN;
SELECT plan(6);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge.register_agent('pinner') \gset

SELECT flowforge.define_workflow($${"name": "strict_dag", "tasks": [{"key": "t", "queue": "qsp", "affinity": "strict $.run.customer"}]}$$) \gset
SELECT lives_ok($$SELECT flowforge.start_run('strict_dag', '{"order": 1}')$$, 'a DAG run whose input lacks the strict path''s key starts');
SELECT is((SELECT affinity_key FROM flowforge.task_run WHERE task_key = 't'), NULL, 'its task is not pinned');

SELECT flowforge.define_workflow($${"name": "strict_graph", "kind": "graph", "start": "a",
    "nodes": [{"key": "a", "queue": "qsp"}, {"key": "b", "queue": "qsp", "affinity": "strict $.state.customer"},
              {"key": "done", "final": true}],
    "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "done"}]}$$) \gset
SELECT flowforge.start_run('strict_graph', '{"order": 1}') AS r \gset
SELECT work_item_id AS a_item, fencing_token AS a_tok FROM flowforge.claim_work(ARRAY['qsp'], 'pinner') \gset
SELECT lives_ok(format('SELECT flowforge.complete_work(%L, %s)', :'a_item', :'a_tok'),
                'completing the node before one with a strict affinity path works');
SELECT results_eq(format($$SELECT task_name::text, status::text, affinity_key FROM flowforge.work_item
                           WHERE run_id = %L AND task_name = 'b'$$, :'r'),
    $$VALUES ('b', 'pending', NULL::text)$$, 'the next node''s item is queued, unpinned');
SELECT flowforge.start_run('strict_graph', '{"customer": "acme"}') AS r2 \gset
SELECT flowforge_test.step(:'r2', NULL, 'pinner') \gset
SELECT is((SELECT affinity_key FROM flowforge.work_item WHERE run_id = :'r2' AND task_name = 'b'), 'key:acme',
          'when the key is there, the strict path pins as before');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsp'], 'stranger', batch => 10)), 1,
          'an unregistered worker takes the unpinned item only');

SELECT * FROM finish();
ROLLBACK;
