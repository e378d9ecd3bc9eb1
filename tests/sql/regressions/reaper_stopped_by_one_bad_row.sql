-- Regression (issue 12): one tenant could stop the reaper for everyone. A
-- definition with "backoff": "1000000 years" was accepted; once such a task's
-- lease expired, now() + backoff overflowed (22008) inside the reaper's one
-- statement loop, so every reap_expired_leases() — and every tick() — failed,
-- and no expired lease of any organization was reaped again.
-- Now: the durations are bounded (FF002, and CHECK constraints), each
-- candidate is reaped in a subtransaction (a row that cannot be reaped fails
-- for good with the reason), and tick() runs each duty in its own.
BEGIN;
SELECT plan(9);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');

SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "forever", "tasks": [{"key": "t", "backoff": "1000000 years", "max_backoff": "1000000 years"}]}')$$,
    'FF002', NULL, 'a backoff of a million years is refused at definition time');

-- Any other reason a row cannot be reaped: here the backoff computation itself
-- raises for the poisoned run (the test's stand-in for a bad row).
SELECT flowforge_test.define_single('poisoned', '{"queue": "pq_bad"}');
SELECT flowforge_test.define_single('healthy', '{"queue": "pq_ok"}');
SELECT flowforge.start_run('poisoned', '{"poison": true}') AS bad \gset
SELECT flowforge.start_run('healthy') AS good \gset
-- The bad lease expires first, so the reaper meets it first (the stand-in below
-- raises for every row while the bad one is still expired: with equal expiries
-- the order was the heap's, and the healthy row could be met first).
SELECT count(*) FROM flowforge.claim(ARRAY['pq_bad'], 'doomed-worker', '5 seconds', 10);
SELECT count(*) FROM flowforge.claim(ARRAY['pq_ok'], 'doomed-worker', '10 seconds', 10);
ALTER FUNCTION flowforge._backoff(interval, numeric, interval, integer) RENAME TO _backoff_real;
CREATE FUNCTION flowforge._backoff(p_backoff interval, p_factor numeric, p_max interval, p_attempt integer) RETURNS interval
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM flowforge.workflow_run r WHERE r.input ? 'poison' AND r.state = 'running'
               AND EXISTS (SELECT 1 FROM flowforge.task_run t WHERE t.workflow_run_id = r.id AND t.state = 'running'
                           AND t.lease_expires_at < flowforge.now() AND t.queue = 'pq_bad' AND t.attempt = p_attempt
                           AND t.max_attempts > p_attempt AND current_setting('test.poison', true) = 'on')) THEN
        RAISE EXCEPTION 'timestamp out of range' USING ERRCODE = '22008';
    END IF;
    RETURN flowforge._backoff_real(p_backoff, p_factor, p_max, p_attempt);
END;
$$;
SELECT set_config('test.poison', 'on', true);
SELECT flowforge_test.set_clock('2030-01-01 00:00:11+00');

SELECT lives_ok($$SELECT flowforge.reap_expired_leases()$$, 'the reaper does not fail because of one bad row');
SELECT is(flowforge_test.task_state(:'good', 'only'), 'ready', 'the healthy task was reaped back to ready');
SELECT is(flowforge_test.task_state(:'bad', 'only'), 'failed', 'the bad row failed for good instead of stopping the duty');
SELECT matches((SELECT error FROM flowforge.task_run WHERE workflow_run_id = :'bad'),
    '^could not be reaped \(22008: timestamp out of range\)', 'with the reason recorded on the task');
SELECT is(flowforge_test.run_state(:'bad'), 'failed', 'and its run settled');

-- tick(): a duty that fails says so and does not keep the others from running.
SELECT flowforge.start_run('healthy') AS good2 \gset
SELECT count(*) FROM flowforge.claim(ARRAY['pq_ok'], 'w', '10 seconds', 10);
SELECT flowforge_test.set_clock('2030-01-01 00:00:30+00');
ALTER FUNCTION flowforge._dispatch_due(integer, timestamptz, uuid[]) RENAME TO _dispatch_due_real;
CREATE FUNCTION flowforge._dispatch_due(p_limit integer, p_now timestamptz, p_orgs uuid[] DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'broken duty'; END; $$;
CREATE TEMP TABLE t AS SELECT flowforge.tick() AS r;
SELECT is((SELECT r -> 'reaped' FROM t), '1'::jsonb, 'tick() still reaps when another duty fails');
SELECT is((SELECT r -> 'errors' ->> 'dispatched' FROM t), 'broken duty', 'and reports the failed duty''s error');
SELECT is((SELECT r -> 'dispatched' FROM t), '0'::jsonb, 'the failed duty counts 0');

SELECT * FROM finish();
ROLLBACK;
