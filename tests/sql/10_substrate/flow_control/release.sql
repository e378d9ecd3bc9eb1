-- Slots come back exactly once, on every way a unit leaves running
-- (task_run) or dispatched (work_item): complete, complete_many, fail (retry
-- and for good), the lease reaper (lease lost, timed out, no attempt left),
-- cancel_run, a purge; complete_work, fail_work, the item reaper, a graph's
-- and a machine's cancel, fan-out children. A late write of the old holder
-- (refused FF004) gives nothing back twice; a unit cancelled while held back
-- gives back nothing it never took. Each scenario uses its own key value on
-- one queue (max_running 100) and checks both counters.
BEGIN;
SELECT plan(43);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge.configure_queue('fr', max_running => 100) \gset
SELECT flowforge_test.define_single('fr_t', '{"queue": "fr", "max_attempts": 2, "backoff": "1 second", "timeout": "1 minute",
    "concurrency": {"key": "$.run.k", "max": 5}}') \gset

-- The counters of key value k and of the queue, as one row.
CREATE FUNCTION pg_temp.counts(p_key text) RETURNS TABLE (key_running integer, queue_running integer, holding integer)
LANGUAGE sql AS $$
    SELECT flowforge_test.slot('key', '$.run.k', to_jsonb(p_key)), flowforge_test.slot('queue', 'fr'),
           flowforge_test.holding('fr')
$$;

-- ------------------------------------------------------------------ complete
SELECT flowforge.start_run('fr_t', '{"k": "c"}') AS run_c \gset
SELECT task_run_id AS t_c, fencing_token AS tok_c FROM flowforge.claim(ARRAY['fr'], 'fr-worker') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('c')$$, $$VALUES (1, 1, 1)$$, 'claimed: the key''s and the queue''s slot taken');
SELECT flowforge.complete(:'t_c', :'tok_c', '{}') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('c')$$, $$VALUES (0, 0, 0)$$, 'complete: both given back');
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', :'t_c', :'tok_c'), 'FF005', NULL, 'completing again: FF005');
SELECT results_eq($$SELECT * FROM pg_temp.counts('c')$$, $$VALUES (0, 0, 0)$$, '... and nothing given back twice');

-- ------------------------------------------------------------------ complete_many
SELECT flowforge.start_run('fr_t', '{"k": "m"}') \gset
SELECT flowforge.start_run('fr_t', '{"k": "m"}') \gset
SELECT array_agg(task_run_id) AS ids_m, array_agg(fencing_token) AS toks_m FROM flowforge.claim(ARRAY['fr'], 'fr-worker', '30 seconds', 10) \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('m')$$, $$VALUES (2, 2, 2)$$, 'two claimed in one batch');
SELECT is((SELECT count(*)::int FROM flowforge.complete_many(:'ids_m', :'toks_m') WHERE outcome = 'completed'), 2,
          'complete_many completes both');
SELECT results_eq($$SELECT * FROM pg_temp.counts('m')$$, $$VALUES (0, 0, 0)$$, 'complete_many: both slots given back');
SELECT is((SELECT count(*)::int FROM flowforge.complete_many(:'ids_m', :'toks_m') WHERE outcome = 'not_running'), 2,
          'again: not_running');
SELECT results_eq($$SELECT * FROM pg_temp.counts('m')$$, $$VALUES (0, 0, 0)$$, '... and nothing given back twice');

-- ------------------------------------------------------------------ fail: retry, then for good
SELECT flowforge.start_run('fr_t', '{"k": "f"}') \gset
SELECT task_run_id AS t_f, fencing_token AS tok_f FROM flowforge.claim(ARRAY['fr'], 'fr-worker') \gset
SELECT flowforge.fail(:'t_f', :'tok_f', 'first') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('f')$$, $$VALUES (0, 0, 0)$$, 'fail with an attempt left: given back (ready again)');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'again')$$, :'t_f', :'tok_f'), 'FF005', NULL, 'failing it again: FF005');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS t_f, fencing_token AS tok_f2 FROM flowforge.claim(ARRAY['fr'], 'fr-worker') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('f')$$, $$VALUES (1, 1, 1)$$, 'the retry is claimed: taken again');
SELECT flowforge.fail(:'t_f', :'tok_f2', 'second') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('f')$$, $$VALUES (0, 0, 0)$$, 'fail for good: given back');
SELECT is(flowforge_test.task_state((SELECT workflow_run_id FROM flowforge.task_run WHERE id = :'t_f'), 'only'), 'failed',
          '(the task failed for good)');

-- ------------------------------------------------------------------ the reaper: lease lost, timed out, no attempt left
SELECT flowforge.start_run('fr_t', '{"k": "r"}') \gset
SELECT task_run_id AS t_r, fencing_token AS tok_r FROM flowforge.claim(ARRAY['fr'], 'fr-worker', '10 seconds') \gset
SELECT flowforge_test.advance_clock('11 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'the lease is lost: reaped');
SELECT results_eq($$SELECT * FROM pg_temp.counts('r')$$, $$VALUES (0, 0, 0)$$, 'a reaped lease gives its slots back');
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', :'t_r', :'tok_r'), 'FF004', NULL, 'the old holder''s complete: FF004');
SELECT results_eq($$SELECT * FROM pg_temp.counts('r')$$, $$VALUES (0, 0, 0)$$, '... and gives nothing back twice');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT task_run_id AS t_r, fencing_token AS tok_r2 FROM flowforge.claim(ARRAY['fr'], 'fr-worker', '5 minutes') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('r')$$, $$VALUES (1, 1, 1)$$, 'its second attempt is claimed (lease 5 minutes, timeout 1 minute)');
SELECT flowforge_test.advance_clock('61 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'timed out: reaped, no attempt left');
SELECT results_eq($$SELECT * FROM pg_temp.counts('r')$$, $$VALUES (0, 0, 0)$$, 'a timeout with no attempt left gives its slots back');
SELECT is((SELECT kind::text || ' ' || to_state::text FROM flowforge.task_run_event WHERE task_run_id = :'t_r' ORDER BY seq DESC LIMIT 1),
          'timed_out failed', '(timed out, failed for good)');

-- ------------------------------------------------------------------ cancel_run, retry_run, a purge
SELECT flowforge.start_run('fr_t', '{"k": "x"}') AS run_x \gset
SELECT task_run_id AS t_x, fencing_token AS tok_x FROM flowforge.claim(ARRAY['fr'], 'fr-worker') \gset
SELECT flowforge.cancel_run(:'run_x', 'not needed') \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('x')$$, $$VALUES (0, 0, 0)$$, 'cancel_run of a running task gives its slots back');
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', :'t_x', :'tok_x'), 'FF004', NULL, 'its holder''s complete: FF004');
SELECT results_eq($$SELECT * FROM pg_temp.counts('x')$$, $$VALUES (0, 0, 0)$$, '... nothing given back twice');
SELECT flowforge.retry_run(:'run_x') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fr'], 'fr-worker')), 1, 'retried: claimed again');
SELECT results_eq($$SELECT * FROM pg_temp.counts('x')$$, $$VALUES (1, 1, 1)$$, 'and holds its slots again');
DELETE FROM flowforge.workflow_run WHERE id = :'run_x';
SELECT results_eq($$SELECT * FROM pg_temp.counts('x')$$, $$VALUES (0, 0, 0)$$,
                  'a run deleted (purged) with its task running gives the slots back');

-- A unit held back and cancelled never took a slot, and gives none back.
SELECT count(flowforge.start_run('fr_t', '{"k": "h"}')) FROM generate_series(1, 6) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['fr'], 'fr-worker', '30 seconds', 10)), 5, 'five of six (max 5)');
SELECT count(flowforge.cancel_run(workflow_run_id, 'held back')) FROM flowforge.task_run
WHERE queue = 'fr' AND state = 'ready' \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('h')$$, $$VALUES (5, 5, 5)$$,
                  'cancelling the one held back changes no counter');
SELECT count(flowforge.cancel_run(workflow_run_id, 'done')) FROM flowforge.task_run WHERE queue = 'fr' AND state = 'running' \gset
SELECT results_eq($$SELECT * FROM pg_temp.counts('h')$$, $$VALUES (0, 0, 0)$$, 'cancelling the five running: all given back');

-- ------------------------------------------------------------------ work items: complete_work, fail_work, the reaper, cancel
SELECT flowforge_test.define_graph_single('fr_g', '{"queue": "fr", "max_attempts": 2, "backoff": "1 second",
    "concurrency": {"key": "$.state.k", "max": 5}}') \gset
CREATE FUNCTION pg_temp.item_counts(p_key text) RETURNS TABLE (key_running integer, queue_running integer, holding integer)
LANGUAGE sql AS $$
    SELECT flowforge_test.slot('key', '$.state.k', to_jsonb(p_key)), flowforge_test.slot('queue', 'fr'),
           flowforge_test.holding('fr')
$$;
SELECT flowforge.start_run('fr_g', '{"k": "wc"}') \gset
SELECT work_item_id AS w_c, fencing_token AS wtok_c FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent') \gset
SELECT results_eq($$SELECT * FROM pg_temp.item_counts('wc')$$, $$VALUES (1, 1, 1)$$, 'an item claimed: its slots taken');
SELECT flowforge.complete_work(:'w_c', :'wtok_c', '{}') \gset
SELECT results_eq($$SELECT * FROM pg_temp.item_counts('wc')$$, $$VALUES (0, 0, 0)$$, 'complete_work gives them back');
SELECT flowforge.start_run('fr_g', '{"k": "wf"}') \gset
SELECT work_item_id AS w_f, fencing_token AS wtok_f FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent') \gset
SELECT flowforge.fail_work(:'w_f', :'wtok_f', 'nope') \gset
SELECT results_eq($$SELECT * FROM pg_temp.item_counts('wf')$$, $$VALUES (0, 0, 0)$$, 'fail_work (a retry left) gives them back');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT work_item_id AS w_f, fencing_token AS wtok_f FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent', '10 seconds') \gset
SELECT flowforge_test.advance_clock('11 seconds') \gset
SELECT is(flowforge._reap_work_items(NULL, 100, flowforge.now()), 1, 'the item''s lease is lost: reaped');
SELECT results_eq($$SELECT * FROM pg_temp.item_counts('wf')$$, $$VALUES (0, 0, 0)$$, 'the item reaper gives them back');
SELECT flowforge.start_run('fr_g', '{"k": "wx"}') AS run_wx \gset
SELECT count(*) FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent') \gset
SELECT flowforge.cancel_run(:'run_wx', 'stop') \gset
SELECT results_eq($$SELECT * FROM pg_temp.item_counts('wx')$$, $$VALUES (0, 0, 0)$$,
                  'cancel_run of a graph run gives its dispatched item''s slots back');

-- A machine's action item, cancelled with its run.
SELECT flowforge_test.define_order('fr_order', '{"queue": "fr", "concurrency": {"key": "$.context.total", "max": 1}}') \gset
SELECT flowforge.start_run('fr_order') AS run_o \gset
SELECT flowforge.send_event(:'run_o', 'paid', '{"amount": 100}') \gset
SELECT count(*) FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent') \gset
SELECT results_eq($$SELECT flowforge_test.slot('key', '$.context.total', '100'), flowforge_test.holding('fr')$$,
                  $$VALUES (1, 1)$$, 'a machine''s action item claimed under its key');
SELECT flowforge.cancel_run(:'run_o', 'stop') \gset
SELECT results_eq($$SELECT flowforge_test.slot('key', '$.context.total', '100'), flowforge_test.slot('queue', 'fr'),
                          flowforge_test.holding('fr')$$,
                  $$VALUES (0, 0, 0)$$, 'cancel_run of a machine gives its action item''s slots back');

-- Fan-out children carry their node's flow control, evaluated per element.
SELECT flowforge.define_workflow($${"name": "fr_map", "tasks": [{"key": "m", "queue": "fr",
    "map": {"over": "$.run.items", "max_concurrency": 10}, "concurrency": {"key": "$.item.shard", "max": 1}}]}$$) \gset
SELECT flowforge.start_run('fr_map', '{"items": [{"shard": 1}, {"shard": 1}, {"shard": 2}]}') AS run_map \gset
SELECT array_agg(work_item_id) AS map_ids, array_agg(fencing_token) AS map_toks
FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent', '30 seconds', 10) \gset
SELECT is(cardinality(:'map_ids'::uuid[]), 2, 'three children, two shards, one per shard: two are claimed');
SELECT results_eq($$SELECT flowforge_test.slot('key', '$.item.shard', '1'), flowforge_test.slot('key', '$.item.shard', '2')$$,
                  $$VALUES (1, 1)$$, 'each shard''s slot taken');
SELECT count(flowforge.complete_work(i, t, '{}')) FROM unnest(:'map_ids'::uuid[], :'map_toks'::bigint[]) AS x(i, t) \gset
SELECT results_eq($$SELECT flowforge_test.slot('key', '$.item.shard', '1'), flowforge_test.holding('fr')$$, $$VALUES (0, 0)$$,
                  'the children''s completions give them back');
SELECT work_item_id AS map_last, fencing_token AS map_last_tok FROM flowforge.claim_work(ARRAY['fr'], 'fr-agent', '30 seconds', 10) \gset
SELECT flowforge.complete_work(:'map_last', :'map_last_tok', '{}') \gset
SELECT results_eq(format($$SELECT flowforge_test.task_state(%L, 'm'), flowforge_test.slot('queue', 'fr')$$, :'run_map'),
                  $$VALUES ('succeeded'::text, 0)$$, 'the last child runs, the map succeeds, nothing is held');

SELECT * FROM finish();
ROLLBACK;
