-- claim_work: lower priority first, then the longest ready; the engine_kinds
-- and task_names filters; the batch bound; next_attempt_at; FF003 for every
-- bad argument; the lease capped by the node's timeout, and heartbeat_work
-- never extending past dispatched_at + timeout (FF004 after it).
-- Each scenario uses its own queue, so claims in one never take another's items.
BEGIN;
SELECT plan(38);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------- lower priority first, then oldest
SELECT flowforge_test.define_graph_single('p_hi', '{"queue": "qp", "priority": 10}') \gset
SELECT flowforge_test.define_graph_single('p_lo', '{"queue": "qp", "priority": 0}') \gset
SELECT flowforge_test.define_graph_single('p_neg', '{"queue": "qp", "priority": -5}') \gset
SELECT flowforge.start_run('p_hi') AS hi1 \gset
SELECT flowforge.start_run('p_lo') AS lo1 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.start_run('p_lo') AS lo2 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.start_run('p_neg') AS neg1 \gset
CREATE TEMP TABLE claim_order (n serial, run uuid);
INSERT INTO claim_order (run) SELECT run_id FROM flowforge.claim_work(ARRAY['qp'], 'w');
INSERT INTO claim_order (run) SELECT run_id FROM flowforge.claim_work(ARRAY['qp'], 'w');
INSERT INTO claim_order (run) SELECT run_id FROM flowforge.claim_work(ARRAY['qp'], 'w');
INSERT INTO claim_order (run) SELECT run_id FROM flowforge.claim_work(ARRAY['qp'], 'w');
SELECT results_eq('SELECT run FROM claim_order ORDER BY n',
    format($$VALUES (%L::uuid), (%L::uuid), (%L::uuid), (%L::uuid)$$, :'neg1', :'lo1', :'lo2', :'hi1'),
    'one at a time: the lowest priority number first (-5, 0, 0, 10), the longest ready first at equal priority');

SELECT flowforge_test.define_graph_single('x_low', '{"queue": "qx", "priority": 1}') \gset
SELECT flowforge_test.define_graph_single('y_high', '{"queue": "qy", "priority": 5}') \gset
SELECT flowforge.start_run('y_high') AS yh \gset
SELECT flowforge.start_run('x_low') AS xl \gset
SELECT is((SELECT run_id FROM flowforge.claim_work(ARRAY['qy', 'qx'], 'w')), :'xl'::uuid,
          'across queues, the lowest priority number is claimed first');

-- ------------------------------------------------------------ what a claim is
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge_test.define_graph_single('shape', '{"queue": "qshape"}') \gset
SELECT flowforge.start_run('shape', '{"k": 1}') AS sr \gset
SELECT flowforge_test.item_of(:'sr') AS si \gset
SELECT results_eq(
    $$SELECT run_id, engine_kind, task_name, attempt, fencing_token, payload, lease_expires_at
      FROM flowforge.claim_work(queues => ARRAY['qshape'], agent => 'w-shape', lease => '45 seconds')$$,
    format($$VALUES (%L::uuid, 'graph', 'work', 1, 1::bigint, '{"state": {"k": 1}, "node": "work", "visit": 1}'::jsonb,
                     '2030-01-02 00:00:45+00'::timestamptz)$$, :'sr'),
    'a claim returns the run, engine, task name, attempt 1, token 1, the payload and the lease (named arguments)');
SELECT results_eq(
    format($$SELECT status::text, agent_id::text, leased_by::text, dispatched_at FROM flowforge.work_item WHERE id = %L$$, :'si'),
    $$VALUES ('dispatched', 'w-shape', 'w-shape', '2030-01-02 00:00:00+00'::timestamptz)$$,
    'the item is dispatched to the agent, by name');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, fencing_token, attempt, detail FROM flowforge.task_run_event
             WHERE work_item_id = %L AND kind = 'claimed'$$, :'si'),
    $$VALUES ('claimed', 'pending', 'dispatched', 1::bigint, 1, '{"agent": "w-shape"}'::jsonb)$$,
    'one claimed event pending->dispatched naming the agent');

-- ------------------------------------------------------------- engine_kinds
SELECT flowforge_test.define_graph_single('kinds', '{"queue": "qk"}') \gset
SELECT flowforge.start_run('kinds') AS kr \gset
SELECT flowforge.define_workflow('{"name": "dag_kinds", "tasks": [{"key": "work", "queue": "qk"}]}') \gset
SELECT flowforge.start_run('dag_kinds') AS dr \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qk'], 'w', engine_kinds => ARRAY['dag'])), 0,
          'engine_kinds => dag: a graph item is not given (and a DAG task is never a work item)');
SELECT is(flowforge_test.item_status(flowforge_test.item_of(:'kr')), 'pending', 'the graph item stays pending');
SELECT is(flowforge_test.task_state(:'dr', 'work'), 'ready', 'the DAG task on the same queue is untouched by claim_work');
SELECT is((SELECT run_id FROM flowforge.claim_work(ARRAY['qk'], 'w', engine_kinds => ARRAY['dag', 'graph'])), :'kr'::uuid,
          'engine_kinds => dag, graph: the graph item is given');

-- --------------------------------------------------------------- task_names
SELECT flowforge.define_workflow($${"name": "named", "kind": "graph", "start": "extract",
    "nodes": [{"key": "extract", "queue": "qn"}, {"key": "done", "final": true}],
    "edges": [{"from": "extract", "to": "done"}]}$$) \gset
SELECT flowforge_test.define_graph_single('other_named', '{"queue": "qn"}') \gset
SELECT count(flowforge.start_run('named')) FROM generate_series(1, 2) \gset
SELECT count(flowforge.start_run('other_named')) FROM generate_series(1, 2) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qn'], 'w', batch => 10, task_names => ARRAY['extract'])), 2,
          'task_names => extract: both extract items');
SELECT is((SELECT count(*)::int FROM flowforge.work_item WHERE queue = 'qn' AND task_name = 'work' AND status = 'pending'), 2,
          'items nobody here handles stay pending');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qn'], 'w', batch => 10, task_names => ARRAY['unknown'])), 0,
          'a name with no pending item claims nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qn'], 'w', batch => 10, task_names => ARRAY['work', 'work'])), 2,
          'a name given twice counts once');

-- --------------------------------------------------------------- batch bound
SELECT flowforge_test.define_graph_single('five', '{"queue": "q5"}') \gset
SELECT count(flowforge.start_run('five')) FROM generate_series(1, 5) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['q5'], 'w', batch => 2)), 2, '5 pending, batch 2: 2 items');
SELECT is((SELECT count(*)::int FROM flowforge.work_item WHERE queue = 'q5' AND status = 'dispatched'), 2,
          'exactly 2 dispatched, 3 still pending');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['q5', 'q5'], 'w', batch => 10)), 3,
          'a queue named twice: the remaining 3, each once');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['q5'], 'w', batch => 10)), 0, 'nothing pending: no rows');
SELECT flowforge_test.define_graph_single('qa_item', '{"queue": "qa"}') \gset
SELECT flowforge_test.define_graph_single('qb_item', '{"queue": "qb"}') \gset
SELECT count(flowforge.start_run('qa_item')) FROM generate_series(1, 3) \gset
SELECT count(flowforge.start_run('qb_item')) FROM generate_series(1, 3) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qa', 'qb'], 'w', batch => 2)), 2,
          'two queues with 3 pending each, batch 2: 2 items (no over-claim across queues)');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e JOIN flowforge.work_item w ON w.id = e.work_item_id
           WHERE w.queue IN ('qa', 'qb') AND e.kind = 'claimed'), 2, 'one claimed event per claimed item');

-- ----------------------------------------------------------- next_attempt_at
SELECT flowforge_test.define_graph_single('later', '{"queue": "ql", "backoff": "2 seconds"}') \gset
SELECT flowforge.start_run('later') AS lr \gset
SELECT work_item_id AS li, fencing_token AS ltok FROM flowforge.claim_work(ARRAY['ql'], 'w') \gset
SELECT flowforge.fail_work(:'li', :'ltok', 'try later') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['ql'], 'w')), 0, 'a retry is not claimed before its next_attempt_at');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT is((SELECT work_item_id FROM flowforge.claim_work(ARRAY['ql'], 'w')), :'li'::uuid, 'it is claimed once the clock reaches it');

-- --------------------------------------------------------------------- FF003
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(NULL, 'w')$$, 'FF003', NULL, 'queues NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY[]::text[], 'w')$$, 'FF003', NULL, 'no queue: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q', NULL], 'w')$$, 'FF003', NULL, 'a NULL queue: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], NULL)$$, 'FF003', NULL, 'agent NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], '')$$, 'FF003', NULL, 'an empty agent name: FF003');
SELECT throws_ok(format('SELECT * FROM flowforge.claim_work(ARRAY[%L], %L)', 'q', repeat('a', 201)), 'FF003', NULL,
                 'an agent name over 200 characters: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', batch => 0)$$, 'FF003', NULL, 'batch 0: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', batch => 1001)$$, 'FF003', NULL, 'batch 1001: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', lease => '999 milliseconds')$$, 'FF003', NULL,
                 'a lease under a second: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', lease => NULL)$$, 'FF003', NULL, 'lease NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', engine_kinds => ARRAY[]::text[])$$, 'FF003', NULL,
                 'an empty engine_kinds (NULL means any): FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', engine_kinds => ARRAY['machine'])$$, 'FF003', NULL,
                 'an unknown engine kind: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim_work(ARRAY['q'], 'w', task_names => ARRAY['a', NULL])$$, 'FF003', NULL,
                 'a NULL task name: FF003');

-- ------------------------------------------------- timeouts cap the lease
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge_test.define_graph_single('timed', '{"queue": "qt", "timeout": "10 seconds"}') \gset
SELECT flowforge.start_run('timed') AS tr \gset
SELECT work_item_id AS ti, fencing_token AS ttok, lease_expires_at AS tlease
FROM flowforge.claim_work(ARRAY['qt'], 'w', '30 seconds') \gset
SELECT is(:'tlease'::timestamptz, '2030-01-03 00:00:10+00'::timestamptz, 'a 30 s lease on a 10 s node is capped at the timeout');
SELECT flowforge_test.advance_clock('8 seconds') \gset
SELECT is(flowforge.heartbeat_work(:'ti', :'ttok', '30 seconds'), '2030-01-03 00:00:10+00'::timestamptz,
          'heartbeat_work never extends past dispatched_at + timeout');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT throws_ok(format('SELECT flowforge.heartbeat_work(%L, %s)', :'ti', :'ttok'), 'FF004', NULL,
                 'heartbeat_work at the timeout, with the current token: FF004');
SELECT throws_ok(format($$SELECT flowforge.heartbeat_work(%L, %s, '0 seconds')$$, :'ti', :'ttok'), 'FF003', NULL,
                 'heartbeat_work with a bad lease: FF003');

SELECT * FROM finish();
ROLLBACK;
