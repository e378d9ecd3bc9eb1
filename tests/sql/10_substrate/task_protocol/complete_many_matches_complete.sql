-- Twin test: complete() and complete_many() are two copies of one rule
-- (complete_many is the set-based fast path). Driving the same scenario
-- through each must leave the same task_run and workflow_run rows and the
-- same sequence of events. Two copies of a diamond live on separate queues,
-- so claims of one never take tasks of the other.
BEGIN;
SELECT plan(10);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_diamond('twin_one', '{"queue": "twin_one"}');
SELECT flowforge_test.define_diamond('twin_many', '{"queue": "twin_many"}');

CREATE TEMP TABLE twin (path text PRIMARY KEY, run_id uuid NOT NULL, queue text NOT NULL);
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_one', '{"n": 1}'), 'twin_one'),
                        ('many', flowforge.start_run('twin_many', '{"n": 1}'), 'twin_many');

-- Claim whatever is ready on both paths; remember the claims by task key.
CREATE TEMP TABLE held (path text, task_key text, task_run_id uuid, fencing_token bigint);
CREATE FUNCTION pg_temp.claim_ready() RETURNS void LANGUAGE sql AS $$
    DELETE FROM held;
    INSERT INTO held
    SELECT t.path, c.task_key, c.task_run_id, c.fencing_token
    FROM twin t CROSS JOIN LATERAL flowforge.claim(ARRAY[t.queue], 'twin-worker', '30 seconds', 100) c;
$$;
-- Complete the given keys: one complete() each on path "one", one complete_many() on path "many".
CREATE FUNCTION pg_temp.finish(p_keys text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_held record;
BEGIN
    FOR v_held IN SELECT * FROM held WHERE path = 'one' AND task_key = ANY (p_keys) ORDER BY task_key LOOP
        PERFORM flowforge.complete(v_held.task_run_id, v_held.fencing_token, jsonb_build_object('key', v_held.task_key));
    END LOOP;
    PERFORM flowforge.complete_many(
        (SELECT array_agg(task_run_id ORDER BY task_key) FROM held WHERE path = 'many' AND task_key = ANY (p_keys)),
        (SELECT array_agg(fencing_token ORDER BY task_key) FROM held WHERE path = 'many' AND task_key = ANY (p_keys)),
        (SELECT array_agg(jsonb_build_object('key', task_key) ORDER BY task_key) FROM held
          WHERE path = 'many' AND task_key = ANY (p_keys)));
END;
$$;
-- Everything about a path's rows but its ids and queue name.
CREATE FUNCTION pg_temp.tasks_of(p_path text)
RETURNS TABLE (task_key text, state text, attempt int, max_attempts int, fencing_token bigint, remaining_deps int,
               output jsonb, error text, lease_owner text, lease_expires_at timestamptz, ready_at timestamptz,
               started_at timestamptz, finished_at timestamptz)
LANGUAGE sql AS $$
    SELECT tr.task_key, tr.state, tr.attempt, tr.max_attempts, tr.fencing_token, tr.remaining_deps, tr.output, tr.error,
           tr.lease_owner, tr.lease_expires_at, tr.ready_at, tr.started_at, tr.finished_at
    FROM flowforge.task_run tr JOIN twin t ON t.run_id = tr.workflow_run_id
    WHERE t.path = p_path ORDER BY tr.task_key
$$;
CREATE FUNCTION pg_temp.run_of(p_path text)
RETURNS TABLE (state text, tasks_total int, tasks_remaining int, tasks_failed int, reason text,
               started_at timestamptz, finished_at timestamptz)
LANGUAGE sql AS $$
    SELECT r.state, r.tasks_total, r.tasks_remaining, r.tasks_failed, r.reason, r.started_at, r.finished_at
    FROM flowforge.workflow_run r JOIN twin t ON t.run_id = r.id WHERE t.path = p_path
$$;
-- The history as "kind:task_key:to_state" in append order (run-level events as "kind:run").
-- Rows one statement touches (b and c released together, or claimed together
-- at equal priority and ready time) come back in no defined order, so events
-- of one kind at one moment are compared as a set (sorted by task key) while
-- the order between kinds and moments is kept.
CREATE FUNCTION pg_temp.events_of(p_path text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(x.label ORDER BY x.created_at, x.first_seq, x.label)
    FROM (SELECT e.kind || ':' || coalesce(tr.task_key, 'run') || ':' || coalesce(e.to_state, '-') AS label,
                 e.created_at, min(e.seq) OVER (PARTITION BY e.created_at, e.kind) AS first_seq
          FROM flowforge.task_run_event e JOIN twin t ON t.run_id = e.workflow_run_id
          LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
          WHERE t.path = p_path) x
$$;

-- Step 1: the root.
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:00:01+00');
SELECT pg_temp.finish(ARRAY['a']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('many')$$,
    'after the root: identical task rows');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('many')$$,
    'after the root: identical run rows');

-- Step 2: both branches in one go (complete_many releases the join from two completions at once).
SELECT flowforge_test.set_clock('2030-01-01 00:00:02+00');
SELECT pg_temp.claim_ready();
SELECT is((SELECT count(*)::int FROM held), 4, 'fixture: b and c claimed on both paths');
SELECT flowforge_test.set_clock('2030-01-01 00:00:03+00');
SELECT pg_temp.finish(ARRAY['b', 'c']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('many')$$,
    'after both branches: identical task rows (the join released once on each path)');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('many')$$,
    'after both branches: identical run rows');

-- Step 3: the join; the run settles.
SELECT flowforge_test.set_clock('2030-01-01 00:00:04+00');
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:00:05+00');
SELECT pg_temp.finish(ARRAY['d']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('many')$$,
    'after the join: identical task rows');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('many')$$,
    'after the join: identical run rows');
SELECT is(pg_temp.events_of('one'), pg_temp.events_of('many'), 'the same events in the same order');
SELECT is((SELECT state FROM pg_temp.run_of('many')), 'succeeded', 'and the run succeeded (the twins are not both stuck)');

-- A run that already has a failed task: the last success settles it as failed, on both paths.
SELECT flowforge_test.define_diamond('twin_fail_one', '{"queue": "twin_fail_one", "max_attempts": 1}');
SELECT flowforge_test.define_diamond('twin_fail_many', '{"queue": "twin_fail_many", "max_attempts": 1}');
DELETE FROM twin;
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_fail_one'), 'twin_fail_one'),
                        ('many', flowforge.start_run('twin_fail_many'), 'twin_fail_many');
SELECT pg_temp.claim_ready();
SELECT pg_temp.finish(ARRAY['a']);
SELECT pg_temp.claim_ready();
SELECT flowforge.fail(task_run_id, fencing_token, 'boom', false) FROM held WHERE task_key = 'b';
SELECT flowforge_test.set_clock('2030-01-01 00:00:06+00');
SELECT pg_temp.finish(ARRAY['c']);
SELECT results_eq(
    $$SELECT * FROM pg_temp.tasks_of('one') UNION ALL SELECT NULL, state, tasks_total, tasks_remaining, tasks_failed::bigint,
             NULL, NULL, reason, NULL, started_at, finished_at, NULL, NULL FROM pg_temp.run_of('one')$$,
    $$SELECT * FROM pg_temp.tasks_of('many') UNION ALL SELECT NULL, state, tasks_total, tasks_remaining, tasks_failed::bigint,
             NULL, NULL, reason, NULL, started_at, finished_at, NULL, NULL FROM pg_temp.run_of('many')$$,
    'a failed branch, then the other completes: identical rows, the run failed on both paths');

SELECT * FROM finish();
ROLLBACK;
