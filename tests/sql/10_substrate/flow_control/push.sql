-- Flow control on a push queue: the dispatcher is a claimer like any other.
-- Readiness dispatches what the limits allow (through _flow_pick), the rest
-- stays ready; a unit's end gives its slots back, and the daemon's next tick
-- dispatches what they now allow. A pushed unit nobody took (its dispatch
-- lease ran out) gives its slots back when the reaper takes it back.
BEGIN;
SELECT plan(9);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge.configure_queue('frp', 'frp-exchange', NULL, '1 minute', max_running => 1) \gset
SELECT flowforge_test.define_single('frp', '{"queue": "frp", "concurrency": {"key": "$.run.k", "max": 5}}') \gset
SELECT count(flowforge.start_run('frp', '{"k": 1}')) FROM generate_series(1, 3) \gset
SELECT results_eq($$SELECT state::text, count(*)::int FROM flowforge.task_run WHERE queue = 'frp' GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('ready', 2), ('running', 1)$$, 'max_running 1 on a push queue: one of three is dispatched');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message m JOIN flowforge.task_run tr ON tr.id = m.task_run_id
           WHERE tr.queue = 'frp'), 1, 'one outbox message');
SELECT results_eq($$SELECT flowforge_test.slot('queue', 'frp'), flowforge_test.slot('key', '$.run.k', '1'), flowforge_test.holding('frp')$$,
                  $$VALUES (1, 1, 1)$$, 'its slots are taken like a claim''s');
SELECT is((flowforge.tick() ->> 'dispatched')::int, 0, 'a tick dispatches nothing more: the queue is full');
SELECT id AS p1, fencing_token AS p1_tok FROM flowforge.task_run WHERE queue = 'frp' AND state = 'running' \gset
SELECT flowforge.heartbeat(:'p1', :'p1_tok') \gset
SELECT flowforge.complete(:'p1', :'p1_tok', '{}') \gset
SELECT results_eq($$SELECT flowforge_test.slot('queue', 'frp'), flowforge_test.holding('frp')$$, $$VALUES (0, 0)$$,
                  'its consumer completes it: the slots are given back');
SELECT is((flowforge.tick() ->> 'dispatched')::int, 1, 'and the next tick dispatches the next one, only one');
SELECT flowforge_test.advance_clock('61 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped')::int, 1, 'no consumer took it within its dispatch lease: reaped');
SELECT results_eq($$SELECT state::text, count(*)::int FROM flowforge.task_run WHERE queue = 'frp' GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('ready', 1), ('running', 1), ('succeeded', 1)$$,
                  'the same tick gave its slot back and dispatched again (the reaper runs before dispatch)');
SELECT results_eq($$SELECT flowforge_test.slot('queue', 'frp'), flowforge_test.holding('frp')$$, $$VALUES (1, 1)$$,
                  'one slot held, by the unit dispatched now');

SELECT * FROM finish();
ROLLBACK;
