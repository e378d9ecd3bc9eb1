-- Twin test: fail() and the lease reaper decide "retry or fail for good" with
-- one rule. The same failure reached both ways — a holder reporting it at the
-- moment its lease has expired, and the reaper taking the expired lease —
-- must leave the same rows and the same transitions, up to what is
-- documented to differ: the reaper bumps the fencing token (the holder's
-- token is then stale), records its own error text, and names its event
-- lease_expired where fail says retry_scheduled / failed.
BEGIN;
SELECT plan(8);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge.define_workflow(jsonb_build_object('name', 'twin_' || p, 'tasks', jsonb_build_array(
    jsonb_build_object('key', 'first', 'queue', 'twin_' || p, 'max_attempts', 2, 'backoff', '2 seconds'),
    jsonb_build_object('key', 'second', 'queue', 'twin_' || p, 'depends_on', jsonb_build_array('first')),
    jsonb_build_object('key', 'third', 'queue', 'twin_' || p, 'depends_on', jsonb_build_array('second')))))
FROM unnest(ARRAY['fail', 'reap']) AS p;

CREATE TEMP TABLE twin (path text PRIMARY KEY, run_id uuid NOT NULL, queue text NOT NULL);
INSERT INTO twin VALUES ('fail', flowforge.start_run('twin_fail'), 'twin_fail'),
                        ('reap', flowforge.start_run('twin_reap'), 'twin_reap');
CREATE TEMP TABLE held (path text, task_run_id uuid, fencing_token bigint);
CREATE FUNCTION pg_temp.claim_ready() RETURNS void LANGUAGE sql AS $$
    DELETE FROM held;
    INSERT INTO held
    SELECT t.path, c.task_run_id, c.fencing_token
    FROM twin t CROSS JOIN LATERAL flowforge.claim(ARRAY[t.queue], 'twin-worker', '30 seconds', 100) c;
$$;
-- The rows, without what is documented to differ (fencing token, error text).
CREATE FUNCTION pg_temp.tasks_of(p_path text)
RETURNS TABLE (task_key text, state text, attempt int, max_attempts int, remaining_deps int, output jsonb,
               lease_expires_at timestamptz, ready_at timestamptz, started_at timestamptz, finished_at timestamptz)
LANGUAGE sql AS $$
    SELECT tr.task_key, tr.state, tr.attempt, tr.max_attempts, tr.remaining_deps, tr.output,
           tr.lease_expires_at, tr.ready_at, tr.started_at, tr.finished_at
    FROM flowforge.task_run tr JOIN twin t ON t.run_id = tr.workflow_run_id
    WHERE t.path = p_path ORDER BY tr.task_key
$$;
CREATE FUNCTION pg_temp.run_of(p_path text)
RETURNS TABLE (state text, tasks_total int, tasks_remaining int, tasks_failed int, finished_at timestamptz)
LANGUAGE sql AS $$
    SELECT r.state, r.tasks_total, r.tasks_remaining, r.tasks_failed, r.finished_at
    FROM flowforge.workflow_run r JOIN twin t ON t.run_id = r.id WHERE t.path = p_path
$$;
-- Transitions as "task_key:from->to@attempt", in append order.
CREATE FUNCTION pg_temp.transitions_of(p_path text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(coalesce(tr.task_key, 'run') || ':' || coalesce(e.from_state, '-') || '->' || coalesce(e.to_state, '-')
                     || '@' || coalesce(e.attempt::text, '-') ORDER BY e.seq)
    FROM flowforge.task_run_event e JOIN twin t ON t.run_id = e.workflow_run_id
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    WHERE t.path = p_path
$$;

-- Attempt 1 fails with attempts left: back to ready after the backoff.
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:00:31+00');  -- both leases (30 s) have expired
SELECT flowforge.fail(task_run_id, fencing_token, 'worker gave up', true) FROM held WHERE path = 'fail';
SELECT is(flowforge.reap_expired_leases(), 1, 'the reaper takes the one expired lease left');
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('fail')$$, $$SELECT * FROM pg_temp.tasks_of('reap')$$,
    'retry: identical task rows (ready again, attempt 2, same ready_at)');
SELECT is((SELECT ready_at FROM pg_temp.tasks_of('reap') WHERE task_key = 'first'), '2030-01-01 00:00:33+00'::timestamptz,
    'both wait the backoff of 2 seconds');

-- Attempt 2 fails for good: dependents skipped, the run failed — the same way.
SELECT flowforge_test.set_clock('2030-01-01 00:00:33+00');
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:01:04+00');
SELECT flowforge.fail(task_run_id, fencing_token, 'worker gave up', true) FROM held WHERE path = 'fail';
SELECT is(flowforge.reap_expired_leases(), 1, 'the reaper takes the second expired lease');
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('fail')$$, $$SELECT * FROM pg_temp.tasks_of('reap')$$,
    'failed for good: identical task rows (first failed, second and third skipped)');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('fail')$$, $$SELECT * FROM pg_temp.run_of('reap')$$,
    'failed for good: identical run rows');
SELECT is(pg_temp.transitions_of('fail'), pg_temp.transitions_of('reap'), 'the same transitions in the same order');
SELECT is((SELECT state FROM pg_temp.run_of('reap')), 'failed', 'and the run failed (the twins are not both stuck)');

SELECT * FROM finish();
ROLLBACK;
