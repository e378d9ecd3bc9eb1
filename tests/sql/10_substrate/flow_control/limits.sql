-- Flow control's limits in the claim, for both queues: a paused queue gives
-- nothing; max_running counts the queue's running task runs and dispatched
-- work items together; a concurrency key holds at most max running per value,
-- across workflows that name the same path; a unit held back stays ready (no
-- attempt used, no event) and goes as soon as a slot frees; units running
-- before a limit was set count against it. Each scenario on its own queue.
BEGIN;
SELECT plan(32);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------------------------------ paused
SELECT flowforge_test.define_single('fl_p', '{"queue": "fl-p"}') \gset
SELECT flowforge_test.define_graph_single('fl_pg', '{"queue": "fl-p"}') \gset
SELECT flowforge.start_run('fl_p') \gset
SELECT flowforge.start_run('fl_pg') \gset
SELECT flowforge.pause_queue('fl-p') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-p'], 'w', '30 seconds', 10)), 0,
          'paused: claim takes nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['fl-p'], 'w', '30 seconds', 10)), 0,
          'paused: claim_work takes nothing either');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-p', 'fl-other'], 'w', '30 seconds', 10)), 0,
          'paused: not through a claim of several queues either');
SELECT flowforge.resume_queue('fl-p') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-p'], 'w', '30 seconds', 10)), 1, 'resumed: the task is claimed');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['fl-p'], 'w', '30 seconds', 10)), 1, 'and the item');

-- ------------------------------------------------------------------ max_running, both kinds on one queue
SELECT flowforge.configure_queue('fl-m', max_running => 3) \gset
SELECT flowforge_test.define_single('fl_m', '{"queue": "fl-m"}') \gset
SELECT flowforge_test.define_graph_single('fl_mg', '{"queue": "fl-m"}') \gset
SELECT count(flowforge.start_run('fl_m')) FROM generate_series(1, 4) \gset
SELECT count(flowforge.start_run('fl_mg')) FROM generate_series(1, 4) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-m'], 'w', '30 seconds', 2)), 2, 'max_running 3: a claim of 2 takes 2');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['fl-m'], 'w', '30 seconds', 10)), 1,
          'claim_work of 10 on the same queue takes the one slot left: task runs and work items count together');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-m'], 'w', '30 seconds', 10)), 0, 'then nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['fl-m'], 'w', '30 seconds', 10)), 0, 'from either kind');
SELECT results_eq($$SELECT flowforge_test.slot('queue', 'fl-m'), flowforge_test.holding('fl-m')$$, $$VALUES (3, 3)$$,
                  'the queue''s counter says 3, and 3 units hold its slots');
SELECT results_eq(
    $$SELECT state::text, attempt::int, fencing_token::bigint, count(*)::int FROM flowforge.task_run WHERE queue = 'fl-m'
      GROUP BY 1, 2, 3 ORDER BY 1$$,
    $$VALUES ('ready', 1, 0::bigint, 2), ('running', 1, 1::bigint, 2)$$,
    'the tasks held back are ready as they were: attempt 1, no fencing token issued');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e JOIN flowforge.task_run tr ON tr.id = e.task_run_id
           WHERE tr.queue = 'fl-m' AND e.kind = 'claimed'), 2, 'and have no claimed event');
SELECT flowforge.complete(id, fencing_token) FROM flowforge.task_run WHERE queue = 'fl-m' AND state = 'running'
ORDER BY id LIMIT 1 \gset
SELECT is(flowforge_test.slot('queue', 'fl-m'), 2, 'a completion gives its slot back');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['fl-m'], 'w', '30 seconds', 10)), 1,
          'and the next claim takes exactly that one slot');

-- ------------------------------------------------------------------ a concurrency key, shared by two workflows
SELECT flowforge_test.define_single('fl_deploy', '{"queue": "fl-k", "concurrency": {"key": "$.run.env", "max": 1}}') \gset
SELECT flowforge_test.define_single('fl_migrate', '{"queue": "fl-k2", "concurrency": {"key": "$.run.env", "max": 1}}') \gset
SELECT flowforge.start_run('fl_deploy', '{"env": "prod"}') AS k1 \gset
SELECT flowforge.start_run('fl_deploy', '{"env": "prod"}') AS k2 \gset
SELECT flowforge.start_run('fl_migrate', '{"env": "prod"}') AS k3 \gset
SELECT flowforge.start_run('fl_deploy', '{"env": "staging"}') AS k4 \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-k'], 'w', '30 seconds', 10)), 2,
          'one per environment: a claim of 10 takes one prod and one staging');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-k2'], 'w', '30 seconds', 10)), 0,
          'another workflow naming the same key path waits for prod too (one deploy or migration per environment)');
SELECT results_eq($$SELECT flowforge_test.slot('key', '$.run.env', '"prod"'), flowforge_test.slot('key', '$.run.env', '"staging"')$$,
                  $$VALUES (1, 1)$$, 'the counters per value');
SELECT flowforge.complete(id, fencing_token) FROM flowforge.task_run WHERE queue = 'fl-k' AND state = 'running'
  AND workflow_run_id IN (:'k1', :'k2') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-k2', 'fl-k'], 'w', '30 seconds', 10)), 1,
          'prod''s deploy done: a claim of both queues takes exactly one more prod unit');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE queue IN ('fl-k', 'fl-k2') AND state = 'running'
             AND workflow_run_id IN (:'k1', :'k2', :'k3')), 1, 'never two prod units running');

-- A key held back at the head of the queue does not stop the others behind it.
SELECT flowforge_test.define_single('fl_hol', '{"queue": "fl-h", "concurrency": {"key": "$.run.c", "max": 1}}') \gset
SELECT count(flowforge.start_run('fl_hol', '{"c": "big"}')) FROM generate_series(1, 50) \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.start_run('fl_hol', '{"c": "small"}') AS small \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-h'], 'w', '30 seconds', 1)), 1, 'one of the 50 big ones runs');
SELECT is((SELECT workflow_run_id FROM flowforge.claim(ARRAY['fl-h'], 'w', '30 seconds', 1)), :'small'::uuid,
          'the next claim skips the 49 held back and takes the small customer''s unit behind them');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-h'], 'w', '30 seconds', 10)), 0, 'then nothing: both keys at max');

-- Units without a key on a keyed queue are claimed too (the null line), not starved by the keyed ones.
SELECT flowforge_test.define_single('fl_unkeyed', '{"queue": "fl-h"}') \gset
SELECT flowforge.start_run('fl_unkeyed') AS unkeyed \gset
SELECT is((SELECT workflow_run_id FROM flowforge.claim(ARRAY['fl-h'], 'w', '30 seconds', 10)), :'unkeyed'::uuid,
          'a task without flow control on a keyed queue is taken past the held-back keyed ones');

-- ------------------------------------------------------------------ task_names under flow control
SELECT flowforge.define_workflow($${"name": "fl_names", "tasks": [
    {"key": "render", "queue": "fl-n", "concurrency": {"key": "$.run.c", "max": 5}},
    {"key": "email", "queue": "fl-n", "concurrency": {"key": "$.run.c", "max": 5}}]}$$) \gset
SELECT flowforge.start_run('fl_names', '{"c": 1}') \gset
SELECT results_eq($$SELECT task_key FROM flowforge.claim(ARRAY['fl-n'], 'w', '30 seconds', 10, ARRAY['email'])$$,
                  $$VALUES ('email'::text)$$, 'task_names still filters: only the handled name is taken');

-- ------------------------------------------------------------------ units running before the limit count
SELECT flowforge_test.define_single('fl_late', '{"queue": "fl-late"}') \gset
SELECT count(flowforge.start_run('fl_late')) FROM generate_series(1, 5) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-late'], 'w', '30 seconds', 3)), 3,
          'three claimed on a queue without flow control');
SELECT flowforge.configure_queue('fl-late', max_running => 3) \gset
SELECT results_eq($$SELECT flowforge_test.slot('queue', 'fl-late'), flowforge_test.holding('fl-late')$$, $$VALUES (3, 3)$$,
                  'max_running set while three run: they are counted at once');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-late'], 'w', '30 seconds', 10)), 0,
          'so nothing more is claimed');
SELECT count(flowforge.complete(id, fencing_token)) FROM flowforge.task_run WHERE queue = 'fl-late' AND state = 'running' \gset
SELECT is(flowforge_test.slot('queue', 'fl-late'), 0, 'and when they end, they give their slots back');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-late'], 'w', '30 seconds', 10)), 2, 'the last two go');

-- ------------------------------------------------------------------ the ordinary path is untouched
SELECT flowforge_test.define_single('fl_plain', '{"queue": "fl-plain"}') \gset
SELECT count(flowforge.start_run('fl_plain')) FROM generate_series(1, 3) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fl-plain'], 'w', '30 seconds', 10)), 3,
          'a queue without flow control: every ready task is claimed');
SELECT results_eq($$SELECT count(*)::int, count(flow_token)::int FROM flowforge.task_run WHERE queue = 'fl-plain'$$,
                  $$VALUES (3, 0)$$, 'and none of them holds a slot (no flow_token)');
SELECT is((SELECT count(*)::int FROM flowforge.flow_slot WHERE name = 'fl-plain'), 0, 'no counter exists for it');

SELECT * FROM finish();
ROLLBACK;
