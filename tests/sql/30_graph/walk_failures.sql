-- A graph node's failures and cancellation, with a steered clock: a node
-- that exhausts its attempts (backoff between them) fails the run with the
-- item's error; retry_run resumes at that node with a fresh budget;
-- cancel_run mid-node cancels the run and its item and refuses the holder's
-- later writes (FF004); a finished run cannot be cancelled (FF005).
BEGIN;
SELECT plan(49);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- The history of one work item, as "kind from->to".
CREATE FUNCTION pg_temp.item_events(p_item uuid) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s %s->%s', e.kind, coalesce(e.from_state, 'none'), e.to_state), ', ' ORDER BY e.seq)
    FROM flowforge.task_run_event e WHERE e.work_item_id = p_item
$$;
CREATE FUNCTION pg_temp.run_level(p_run uuid) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s %s->%s', e.kind, coalesce(e.from_state, 'none'), e.to_state), ', ' ORDER BY e.seq)
    FROM flowforge.task_run_event e WHERE e.workflow_run_id = p_run AND e.work_item_id IS NULL AND e.task_run_id IS NULL
$$;

-- ============================================== a node exhausts its attempts
SELECT flowforge_test.define_graph_single('flaky', '{"queue": "qf", "max_attempts": 2, "backoff": "10 seconds"}') \gset
SELECT flowforge.start_run('flaky') AS r \gset
SELECT flowforge_test.item_of(:'r') AS item \gset
SELECT results_eq(format($$SELECT retry_count, max_retries, next_attempt_at FROM flowforge.work_item WHERE id = %L$$, :'item'),
    $$VALUES (0, 1, '2030-01-01 00:00:00+00'::timestamptz)$$,
    'the node''s item: no retry yet, a budget of 1 retry (max_attempts 2), claimable now');
SELECT work_item_id AS w1, fencing_token AS tok1, attempt AS att1
FROM flowforge.claim_work(ARRAY['qf'], 'agent-1', '30 seconds') \gset
SELECT is(:'w1'::uuid, :'item'::uuid, 'attempt 1 claimed');
SELECT is(:'att1'::int, 1, 'claim_work says attempt 1');
SELECT lives_ok(format($$SELECT flowforge.fail_work(%L, %s, 'upstream 503')$$, :'w1', :'tok1'), 'attempt 1 fails (retryable)');
SELECT results_eq(
    format($$SELECT status::text, retry_count, next_attempt_at, lease_expires_at, error, completed_at FROM flowforge.work_item WHERE id = %L$$, :'item'),
    $$VALUES ('pending', 1, '2030-01-01 00:00:10+00'::timestamptz, NULL::timestamptz, 'upstream 503', NULL::timestamptz)$$,
    'retries left: pending again, retry_count 1, next attempt after the 10 s backoff, lease cleared');
SELECT is(flowforge_test.graph_status(:'r'), 'running', 'the run waits for the retry');
SELECT flowforge_test.set_clock('2030-01-01 00:00:09.999+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qf'], 'agent-2')), 0, 'not claimable a millisecond before next_attempt_at');
SELECT flowforge_test.set_clock('2030-01-01 00:00:10+00') \gset
SELECT work_item_id AS w2, fencing_token AS tok2, attempt AS att2
FROM flowforge.claim_work(ARRAY['qf'], 'agent-2', '30 seconds') \gset
SELECT is(:'w2'::uuid, :'item'::uuid, 'claimable at next_attempt_at: the same item');
SELECT is(:'att2'::int, 2, 'attempt 2');
SELECT is(:'tok2'::bigint, :'tok1'::bigint + 1, 'under a new fencing token');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s)$$, :'item', :'tok1'), 'FF004', NULL,
                 'attempt 1''s holder cannot complete it any more: FF004');
SELECT lives_ok(format($$SELECT flowforge.fail_work(%L, %s, 'upstream 503 again')$$, :'w2', :'tok2'), 'attempt 2 fails');
SELECT results_eq(
    format($$SELECT status::text, retry_count, error, completed_at FROM flowforge.work_item WHERE id = %L$$, :'item'),
    $$VALUES ('failed', 1, 'upstream 503 again', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'no retries left: the item failed');
SELECT results_eq(
    format($$SELECT status::text, reason, error, finished_at FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('failed', 'node "work" failed after 2 attempt(s)', 'upstream 503 again', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the run failed with the item''s error, in the same transaction');
SELECT is(pg_temp.item_events(:'item'),
    'created none->pending, claimed pending->dispatched, retry_scheduled dispatched->pending, claimed pending->dispatched, failed dispatched->failed',
    'the item''s history: one event per transition');
SELECT is((SELECT detail ->> 'next_attempt_at' FROM flowforge.task_run_event WHERE work_item_id = :'item' AND kind = 'retry_scheduled')::timestamptz,
          '2030-01-01 00:00:10+00'::timestamptz, 'retry_scheduled says when the next attempt is due');
SELECT is(pg_temp.run_level(:'r'), 'run_started none->running, run_failed running->failed', 'run events: run_started, run_failed');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'r'), '2030-01-01 00:00:10+00'::timestamptz,
          'the directory row ended');

-- Not retryable: failed at once.
SELECT flowforge.start_run('flaky') AS rn \gset
SELECT work_item_id AS wn, fencing_token AS tokn FROM flowforge.claim_work(ARRAY['qf'], 'agent-1') \gset
SELECT lives_ok(format($$SELECT flowforge.fail_work(%L, %s, 'bad input', false)$$, :'wn', :'tokn'), 'a non-retryable failure');
SELECT results_eq(
    format($$SELECT w.status::text, w.retry_count, g.status::text, g.reason FROM flowforge.work_item w
             JOIN flowforge.graph_run g ON g.run_id = w.run_id WHERE w.id = %L$$, :'wn'),
    $$VALUES ('failed', 0, 'failed', 'node "work" failed after 1 attempt(s)')$$,
    'retryable => false: the item fails with retries left, and so does the run');

-- ====================================== retry_run resumes at the failed node
SELECT flowforge_test.set_clock('2030-01-01 00:01:00+00') \gset
SELECT lives_ok(format('SELECT flowforge.retry_run(%L)', :'r'), 'retry_run of the failed run');
SELECT flowforge_test.item_of(:'r') AS item2 \gset
SELECT results_eq(
    format($$SELECT status::text, reason, error, finished_at, task::text, steps FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('running', NULL::text, NULL::text, NULL::timestamptz, 'work', 1::bigint)$$,
    'the run is running again at the same node; the step is not counted again');
SELECT results_eq(
    format($$SELECT id <> %L, status::text, retry_count, max_retries, next_attempt_at, payload FROM flowforge.work_item WHERE id = %L$$,
           :'item', :'item2'),
    $$VALUES (true, 'pending', 0, 1, '2030-01-01 00:01:00+00'::timestamptz,
              '{"state": {}, "node": "work", "visit": 1}'::jsonb)$$,
    'a new work item for that node with a fresh budget, its payload the same visit');
SELECT is((SELECT work_item_id FROM flowforge.graph_step WHERE run_id = :'r' AND step = 1), :'item2'::uuid,
          'the step now names the new item');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'r'), NULL, 'the directory row is open again');
SELECT is(pg_temp.run_level(:'r'), 'run_started none->running, run_failed running->failed, run_retried failed->running',
          'event run_retried failed->running');
SELECT is(flowforge_test.graph_status(:'r'), 'running', 'setup: running');
SELECT work_item_id AS w3, fencing_token AS tok3, attempt AS att3 FROM flowforge.claim_work(ARRAY['qf'], 'agent-3') \gset
SELECT is(:'att3'::int, 1, 'the new item''s first attempt');
SELECT lives_ok(format($$SELECT flowforge.complete_work(%L, %s, '{"ok": true}')$$, :'w3', :'tok3'), 'and it completes');
SELECT results_eq(format($$SELECT status::text, steps, state FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('succeeded', 2::bigint, '{"ok": true}'::jsonb)$$, 'the retried run goes on to its final node');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'r'), 'FF005', NULL, 'retry_run of a succeeded run: FF005');

-- ====================================================== cancel mid-node
SELECT flowforge_test.define_review_loop('cancel_loop', '{"queue": "qc"}') \gset
SELECT flowforge.start_run('cancel_loop') AS rc \gset
SELECT is(flowforge_test.step(:'rc', '{"text": "v1"}') ->> 'node', 'draft', 'setup: draft done, the run is at review');
SELECT work_item_id AS wc, fencing_token AS tokc FROM flowforge.claim_work(ARRAY['qc'], 'holder', '30 seconds') \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'scope changed')$$, :'rc'), 'cancel_run while review is held');
SELECT results_eq(format($$SELECT status::text, reason, finished_at FROM flowforge.graph_run WHERE run_id = %L$$, :'rc'),
    $$VALUES ('cancelled', 'scope changed', '2030-01-01 00:01:00+00'::timestamptz)$$,
    'the run is cancelled with the canceller''s reason');
SELECT results_eq(
    format($$SELECT status::text, fencing_token, lease_expires_at, completed_at FROM flowforge.work_item WHERE id = %L$$, :'wc'),
    format($$VALUES ('cancelled', %s::bigint, NULL::timestamptz, '2030-01-01 00:01:00+00'::timestamptz)$$, :'tokc'::bigint + 1),
    'its dispatched item is cancelled and its fencing token moved on');
CREATE TEMP TABLE wc_before AS SELECT * FROM flowforge.work_item WHERE id = :'wc';
SELECT throws_ok(format($$SELECT flowforge.heartbeat_work(%L, %s)$$, :'wc', :'tokc'), 'FF004', NULL,
                 'the holder''s heartbeat_work: FF004');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '{"approved": true}')$$, :'wc', :'tokc'), 'FF004', NULL,
                 'the holder''s complete_work: FF004');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, %s, 'gave up')$$, :'wc', :'tokc'), 'FF004', NULL,
                 'the holder''s fail_work: FF004');
SELECT is((SELECT count(*)::int FROM (SELECT * FROM flowforge.work_item WHERE id = :'wc' EXCEPT SELECT * FROM wc_before) d), 0,
          'the refused writes changed nothing');
SELECT is(pg_temp.item_events(:'wc'), 'created none->pending, claimed pending->dispatched, cancelled dispatched->cancelled',
          'the item''s history ends with cancelled');
SELECT is((SELECT string_agg(e.kind, ', ' ORDER BY e.seq) FROM flowforge.task_run_event e
           WHERE e.workflow_run_id = :'rc' AND e.kind IN ('cancelled', 'run_cancelled')), 'cancelled, run_cancelled',
          'events: the item''s cancelled, then run_cancelled');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'rc'), '2030-01-01 00:01:00+00'::timestamptz,
          'the directory row ended');

-- A pending item is cancelled too, its token left alone (nobody holds it).
SELECT flowforge.start_run('cancel_loop') AS rp \gset
SELECT flowforge_test.item_of(:'rp') AS wp \gset
SELECT flowforge.cancel_run(:'rp') \gset
SELECT results_eq(format($$SELECT status::text, fencing_token FROM flowforge.work_item WHERE id = %L$$, :'wp'),
    $$VALUES ('cancelled', 0::bigint)$$, 'cancel_run of a run whose item is pending: the item is cancelled, token 0');

-- A finished run cannot be cancelled.
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', :'rc'), 'FF005', NULL, 'cancel_run of a cancelled run: FF005');
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', :'r'), 'FF005', NULL, 'cancel_run of a succeeded run: FF005');
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', :'rn'), 'FF005', NULL, 'cancel_run of a failed run: FF005');
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', gen_random_uuid()), 'FF001', NULL, 'cancel_run of an unknown run: FF001');

-- A cancelled run is retried from where it stood.
SELECT lives_ok(format('SELECT flowforge.retry_run(%L)', :'rc'), 'retry_run of the cancelled run');
SELECT results_eq(
    format($$SELECT g.status::text, g.task::text, w.task_name::text, w.status::text, w.payload ->> 'visit'
             FROM flowforge.graph_run g JOIN flowforge.work_item w ON w.id = flowforge_test.item_of(g.run_id)
             WHERE g.run_id = %L$$, :'rc'),
    $$VALUES ('running', 'review', 'review', 'pending', '1')$$,
    'it resumes at review with a new pending item for the same visit');

SELECT * FROM finish();
ROLLBACK;
