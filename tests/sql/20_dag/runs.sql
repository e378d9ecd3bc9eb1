-- Runs: start_run, idempotency, cancel_run, retry_run, run_events.
BEGIN;
SELECT plan(64);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Claim exactly one given task through flowforge.claim: the target is lifted
-- to the top priority for the one call, so other ready tasks stay ready.
CREATE FUNCTION pg_temp.claim_one(p_run uuid, p_key text, p_lease interval DEFAULT '30 seconds')
RETURNS TABLE (task_run_id uuid, fencing_token bigint, attempt integer, input jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_target record;
    v_claimed record;
BEGIN
    SELECT tr.id, tr.queue, tr.priority INTO v_target
    FROM flowforge.task_run tr WHERE tr.workflow_run_id = p_run AND tr.task_key = p_key;
    UPDATE flowforge.task_run tr SET priority = -2147483648 WHERE tr.id = v_target.id;  -- lower first
    SELECT * INTO v_claimed FROM flowforge.claim(ARRAY[v_target.queue::text], 'test-worker', p_lease, 1);
    UPDATE flowforge.task_run tr SET priority = v_target.priority WHERE tr.id = v_target.id;
    IF v_claimed.task_run_id IS DISTINCT FROM v_target.id THEN
        RAISE EXCEPTION 'claim_one: wanted %/% (%), claim returned %', p_run, p_key, v_target.id, v_claimed.task_run_id;
    END IF;
    RETURN QUERY SELECT v_claimed.task_run_id, v_claimed.fencing_token, v_claimed.attempt, v_claimed.input,
                        v_claimed.lease_expires_at;
END;
$$;

SELECT flowforge_test.define_diamond() AS diamond_id \gset
SELECT flowforge_test.define_single() AS single_id \gset

-- ------------------------------------------------------------------ start_run
SELECT flowforge.start_run(workflow => 'diamond', input => '{"n": 7}') AS run \gset
SELECT isnt(:'run'::uuid, NULL, 'start_run (named arguments) returns the run id');
SELECT results_eq(
    format($$SELECT workflow_id, state::text, input::jsonb, tasks_total, tasks_remaining, tasks_failed, started_at, finished_at
             FROM flowforge.workflow_run WHERE id = %L$$, :'run'),
    format($$VALUES (%L::uuid, 'running', '{"n": 7}'::jsonb, 4, 4, 0,
              '2030-01-01 00:00:00+00'::timestamptz, NULL::timestamptz)$$, :'diamond_id'),
    'the run is running from the start, with 4 tasks to go');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, remaining_deps::int, attempt::int, fencing_token::bigint, ready_at
             FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'run'),
    $$VALUES ('a', 'ready', 0, 1, 0::bigint, '2030-01-01 00:00:00+00'::timestamptz),
             ('b', 'pending', 1, 1, 0::bigint, NULL),
             ('c', 'pending', 1, 1, 0::bigint, NULL),
             ('d', 'pending', 2, 1, 0::bigint, NULL)$$,
    'one task_run per task: the root ready, the others pending with remaining_deps = number of dependencies');
SELECT results_eq(
    format($$SELECT e.kind::text, tr.task_key::text, e.from_state::text, e.to_state::text
             FROM flowforge.task_run_event e LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
             WHERE e.workflow_run_id = %L ORDER BY e.seq$$, :'run'),
    $$VALUES ('run_started', NULL, NULL, 'running'),
             ('created', 'a', NULL, 'ready'), ('created', 'b', NULL, 'pending'),
             ('created', 'c', NULL, 'pending'), ('created', 'd', NULL, 'pending')$$,
    'events: run_started, then one created per task with its first state');
SELECT isnt(flowforge.start_run('single'), flowforge.start_run('single'), 'without a key, every start_run makes a new run');

-- Input must be an object; nothing is written when it is not.
SELECT count(*) AS runs_before FROM flowforge.workflow_run \gset
SELECT throws_ok($$SELECT flowforge.start_run('diamond', '[1, 2]')$$, 'FF003', NULL, 'input an array: FF003');
SELECT throws_ok($$SELECT flowforge.start_run('diamond', '"text"')$$, 'FF003', NULL, 'input a string: FF003');
SELECT throws_ok($$SELECT flowforge.start_run('diamond', 'null'::jsonb)$$, 'FF003', NULL, 'input JSON null: FF003');
SELECT throws_ok($$SELECT flowforge.start_run('diamond', '{}', '')$$, 'FF003', NULL, 'an empty idempotency key: FF003');
SELECT throws_ok($$SELECT flowforge.start_run('no_such_workflow')$$, 'FF001', NULL, 'an unknown workflow: FF001');
SELECT throws_ok($$SELECT flowforge.start_run(NULL)$$, 'FF001', NULL, 'a NULL workflow name: FF001');
SELECT is((SELECT count(*) FROM flowforge.workflow_run), :'runs_before'::bigint, 'refused starts wrote no run');

-- ---------------------------------------------------------------- idempotency
SELECT flowforge.start_run('diamond', '{"order": 1, "x": [1, 2]}', 'req-1') AS idem \gset
SELECT count(*) AS runs_before FROM flowforge.workflow_run \gset
SELECT count(*) AS events_before FROM flowforge.task_run_event \gset
SELECT is(flowforge.start_run('diamond', '{"order": 1, "x": [1, 2]}', 'req-1'), :'idem'::uuid,
    'same key, same input: the first run''s id');
SELECT is(flowforge.start_run(workflow => 'diamond', input => '{"x": [1, 2], "order": 1}', idempotency_key => 'req-1'),
    :'idem'::uuid, 'same key, same input written in another key order: the first run''s id');
SELECT is((SELECT count(*) FROM flowforge.workflow_run), :'runs_before'::bigint, 'a repeated start made no second run');
SELECT is((SELECT count(*) FROM flowforge.task_run_event), :'events_before'::bigint, 'a repeated start wrote no event');
SELECT throws_ok($$SELECT flowforge.start_run('diamond', '{"order": 2}', 'req-1')$$, 'FF006', NULL,
    'same key, different input: FF006');
SELECT throws_ok($$SELECT flowforge.start_run('single', '{"order": 1, "x": [1, 2]}', 'req-1')$$, 'FF006', NULL,
    'same key, same input, different workflow: FF006');
SELECT is((SELECT count(*) FROM flowforge.workflow_run), :'runs_before'::bigint, 'a conflicting key made no run');
SELECT isnt(flowforge.start_run('diamond', '{"order": 1, "x": [1, 2]}', 'req-2'), :'idem'::uuid,
    'another key starts another run');

-- ----------------------------------------------------------------- cancel_run
-- a succeeded, b running (held under token tok_b), c ready, d pending.
SELECT flowforge.start_run('diamond') AS crun \gset
SELECT task_run_id AS ca, fencing_token AS tok_a FROM pg_temp.claim_one(:'crun', 'a') \gset
SELECT flowforge.complete(:'ca', :'tok_a', '{"a": 1}');
SELECT task_run_id AS cb, fencing_token AS tok_b FROM pg_temp.claim_one(:'crun', 'b') \gset
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'operator said so')$$, :'crun'), 'cancel_run of a running run');
SELECT results_eq(
    format($$SELECT state::text, reason, finished_at, tasks_remaining FROM flowforge.workflow_run WHERE id = %L$$, :'crun'),
    $$VALUES ('cancelled', 'operator said so', '2030-01-01 00:00:05+00'::timestamptz, 0)$$,
    'the run is cancelled, with its reason and finish time');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, output, lease_expires_at FROM flowforge.task_run
             WHERE workflow_run_id = %L ORDER BY task_key$$, :'crun'),
    $$VALUES ('a', 'succeeded', '{"a": 1}'::jsonb, NULL::timestamptz),
             ('b', 'cancelled', NULL, NULL), ('c', 'cancelled', NULL, NULL), ('d', 'cancelled', NULL, NULL)$$,
    'every unfinished task is cancelled; the succeeded one keeps its output');
SELECT is((SELECT fencing_token::bigint FROM flowforge.task_run WHERE id = :'cb'), :'tok_b'::bigint + 1,
    'the running task''s fencing token was bumped');
SELECT is((SELECT fencing_token::bigint FROM flowforge.task_run WHERE workflow_run_id = :'crun' AND task_key = 'c'), 0::bigint,
    'a task nobody held keeps its token');
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, '{}')$$, :'cb', :'tok_b'), 'FF004', NULL,
    'the holder''s complete after cancel: FF004');
SELECT throws_ok(format($$SELECT flowforge.heartbeat(%L, %s)$$, :'cb', :'tok_b'), 'FF004', NULL,
    'the holder''s heartbeat after cancel: FF004');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'boom')$$, :'cb', :'tok_b'), 'FF004', NULL,
    'the holder''s fail after cancel: FF004');
SELECT results_eq(
    format($$SELECT tr.task_key::text, e.from_state::text, e.to_state::text FROM flowforge.task_run_event e
             JOIN flowforge.task_run tr ON tr.id = e.task_run_id
             WHERE e.workflow_run_id = %L AND e.kind = 'cancelled' ORDER BY tr.task_key$$, :'crun'),
    $$VALUES ('b', 'running', 'cancelled'), ('c', 'ready', 'cancelled'), ('d', 'pending', 'cancelled')$$,
    'one cancelled event per cancelled task, from its state');
SELECT results_eq(
    format($$SELECT from_state::text, to_state::text, detail ->> 'reason' FROM flowforge.task_run_event
             WHERE workflow_run_id = %L AND task_run_id IS NULL AND kind = 'run_cancelled'$$, :'crun'),
    $$VALUES ('running', 'cancelled', 'operator said so')$$, 'one run_cancelled event');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, :'crun'), 'FF005', NULL, 'cancelling twice: FF005');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, gen_random_uuid()), 'FF001', NULL, 'cancel_run of a random id: FF001');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, gen_random_uuid()), 'FF001', NULL, 'retry_run of a random id: FF001');
SELECT throws_ok(format($$SELECT * FROM flowforge.run_events(%L)$$, gen_random_uuid()), 'FF001', NULL, 'run_events of a random id: FF001');

-- ------------------------------------------------------------------ retry_run
-- Diamond: a succeeds, b fails for good (d skipped), c succeeds -> run failed.
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.start_run('diamond', '{"n": 1}') AS rrun \gset
SELECT task_run_id AS ra, fencing_token AS tok FROM pg_temp.claim_one(:'rrun', 'a') \gset
SELECT flowforge.complete(:'ra', :'tok', '{"a": "out"}');
SELECT task_run_id AS rb, fencing_token AS tok FROM pg_temp.claim_one(:'rrun', 'b') \gset
SELECT flowforge.fail(:'rb', :'tok', 'bad input', retryable => false);
SELECT task_run_id AS rc, fencing_token AS tok FROM pg_temp.claim_one(:'rrun', 'c') \gset
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rrun'), 'FF005', NULL, 'retry_run of a running run: FF005');
SELECT flowforge.complete(:'rc', :'tok', '{"c": "out"}');
SELECT is(flowforge_test.run_state(:'rrun'), 'failed', 'setup: the run failed once nothing was left');
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rrun'), 'retry_run of a failed run');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, attempt::int, remaining_deps::int, output, error, finished_at IS NULL
             FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'rrun'),
    $$VALUES ('a', 'succeeded', 1, 0, '{"a": "out"}'::jsonb, NULL, false),
             ('b', 'ready', 2, 0, NULL, NULL, true),
             ('c', 'succeeded', 1, 0, '{"c": "out"}'::jsonb, NULL, false),
             ('d', 'pending', 2, 1, NULL, NULL, true)$$,
    'the failed task is ready and the skipped one pending on it, both attempt + 1; succeeded tasks keep their output');
SELECT is((SELECT ready_at FROM flowforge.task_run WHERE id = :'rb'), '2030-01-02 00:01:00+00'::timestamptz,
    'the retried task is ready now');
SELECT results_eq(
    format($$SELECT state::text, finished_at, tasks_remaining, tasks_failed FROM flowforge.workflow_run WHERE id = %L$$, :'rrun'),
    $$VALUES ('running', NULL::timestamptz, 2, 0)$$, 'the run is running again with 2 tasks to go');
SELECT results_eq(
    format($$SELECT tr.task_key::text, e.from_state::text, e.to_state::text, e.attempt FROM flowforge.task_run_event e
             JOIN flowforge.task_run tr ON tr.id = e.task_run_id
             WHERE e.workflow_run_id = %L AND e.kind = 'retried' ORDER BY tr.task_key$$, :'rrun'),
    $$VALUES ('b', 'failed', 'ready', 2), ('d', 'skipped', 'pending', 2)$$, 'one retried event per task that goes again');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'rrun' AND task_run_id IS NULL
              AND kind = 'run_retried' AND from_state = 'failed' AND to_state = 'running'), 1, 'one run_retried event');
SELECT task_run_id AS rb, fencing_token AS tok, input AS rb_input FROM pg_temp.claim_one(:'rrun', 'b') \gset
SELECT is(:'rb_input'::jsonb, '{"run": {"n": 1}, "deps": {"a": {"a": "out"}}}'::jsonb,
    'the retried task is given the run input and its kept dependency output');
SELECT flowforge.complete(:'rb', :'tok', '{"b": "out"}');
SELECT is(flowforge_test.task_state(:'rrun', 'd'), 'ready', 'after the retried task succeeds, its dependent is released');
SELECT task_run_id AS rd, fencing_token AS tok FROM pg_temp.claim_one(:'rrun', 'd') \gset
SELECT flowforge.complete(:'rd', :'tok', '{"d": "out"}');
SELECT results_eq(
    format($$SELECT state::text, tasks_remaining, tasks_failed, finished_at FROM flowforge.workflow_run WHERE id = %L$$, :'rrun'),
    $$VALUES ('succeeded', 0, 0, '2030-01-02 00:01:00+00'::timestamptz)$$, 'the retried run then succeeds');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rrun'), 'FF005', NULL, 'retry_run of a succeeded run: FF005');

-- The root fails: every other task was skipped; retry brings each back, waiting on its upstream.
SELECT flowforge.start_run('diamond') AS r2 \gset
SELECT task_run_id AS r2a, fencing_token AS tok FROM pg_temp.claim_one(:'r2', 'a') \gset
SELECT flowforge.fail(:'r2a', :'tok', 'fatal', false);
SELECT results_eq(
    format($$SELECT task_key::text, state::text FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'r2'),
    $$VALUES ('a', 'failed'), ('b', 'skipped'), ('c', 'skipped'), ('d', 'skipped')$$,
    'setup: the root failed for good and every dependent was skipped');
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'r2'), 'retry_run after the root failed');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, remaining_deps::int, attempt::int, max_attempts
             FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'r2'),
    $$VALUES ('a', 'ready', 0, 2, 4), ('b', 'pending', 1, 2, 4), ('c', 'pending', 1, 2, 4), ('d', 'pending', 2, 2, 4)$$,
    'the root is ready, the rest pending on their upstream; attempt + 1 with a fresh budget of max_attempts');

-- A cancelled run can be retried too.
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'crun'), 'retry_run of a cancelled run');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, attempt::int FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'crun'),
    $$VALUES ('a', 'succeeded', 1), ('b', 'ready', 2), ('c', 'ready', 2), ('d', 'pending', 2)$$,
    'cancelled tasks of a cancelled run go again; the succeeded one stays');
SELECT is(flowforge_test.run_state(:'crun'), 'running', 'the retried cancelled run is running');

-- ----------------------------------------------------------------- run_events
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.start_run('single') AS erun \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS e1, fencing_token AS tok FROM pg_temp.claim_one(:'erun', 'only') \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.fail(:'e1', :'tok', 'flaky', false);
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.retry_run(:'erun');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS e1, fencing_token AS tok FROM pg_temp.claim_one(:'erun', 'only') \gset
SELECT flowforge.complete(:'e1', :'tok', '{"ok": true}');
SELECT results_eq(
    format($$SELECT kind, task_key, from_state, to_state, attempt, created_at FROM flowforge.run_events(%L)$$, :'erun'),
    $$VALUES ('run_started', NULL, NULL, 'running', NULL, '2030-01-03 00:00:00+00'::timestamptz),
             ('created', 'only', NULL, 'ready', 1, '2030-01-03 00:00:00+00'),
             ('claimed', 'only', 'ready', 'running', 1, '2030-01-03 00:00:01+00'),
             ('failed', 'only', 'running', 'failed', 1, '2030-01-03 00:00:02+00'),
             ('run_failed', NULL, 'running', 'failed', NULL, '2030-01-03 00:00:02+00'),
             ('retried', 'only', 'failed', 'ready', 2, '2030-01-03 00:00:03+00'),
             ('run_retried', NULL, 'failed', 'running', NULL, '2030-01-03 00:00:03+00'),
             ('claimed', 'only', 'ready', 'running', 2, '2030-01-03 00:00:04+00'),
             ('completed', 'only', 'running', 'succeeded', 2, '2030-01-03 00:00:04+00'),
             ('run_succeeded', NULL, 'running', 'succeeded', NULL, '2030-01-03 00:00:04+00')$$,
    'run_events: the whole history, oldest first, run-level events included');
SELECT is((SELECT bool_and(seq > prev) FROM (
              SELECT seq, lag(seq) OVER (ORDER BY ord) AS prev
              FROM flowforge.run_events(:'erun') WITH ORDINALITY AS e(seq, created_at, task_run_id, task_key, kind,
                   from_state, to_state, attempt, fencing_token, detail, ord)) s WHERE prev IS NOT NULL),
    true, 'run_events rows come in seq order');
SELECT is((SELECT count(*)::int FROM flowforge.run_events(:'erun') WHERE task_run_id IS NULL), 4,
    'run-level events have task_run_id NULL');
SELECT is((SELECT count(*)::int FROM flowforge.run_events(:'run')), 5, 'run_events of another run holds only that run''s events');

-- History is append-only.
SELECT throws_ok(format($$UPDATE flowforge.task_run_event SET kind = 'edited' WHERE workflow_run_id = %L$$, :'erun'), 'FF011', NULL,
    'an event row cannot be updated: FF011');
SELECT throws_ok(format($$DELETE FROM flowforge.task_run_event WHERE workflow_run_id = %L$$, :'erun'), 'FF011', NULL,
    'an event row cannot be deleted: FF011');

-- --------------------------------------- another organization's run is not found
-- A run of another organization, made through a login of its own (since 0034
-- a run cannot be moved between organizations by hand: its keys and its
-- definition's hold it in its own). Named per backend: roles are cluster-wide.
SELECT 'runs_login_' || pg_backend_pid() AS runs_login \gset
CREATE ROLE :"runs_login" LOGIN;
SELECT flowforge.create_organization('other', 'Other org') \gset
SELECT flowforge.add_member('other', :'runs_login', 'owner') \gset
SELECT spec AS diamond_spec FROM flowforge.workflow WHERE name = 'diamond' ORDER BY version DESC LIMIT 1 \gset
SET LOCAL SESSION AUTHORIZATION :"runs_login";
SELECT flowforge.define_workflow(:'diamond_spec') \gset
SELECT flowforge.start_run('diamond', '{"tenant": "other"}') AS orun \gset
RESET SESSION AUTHORIZATION;
SELECT gen_random_uuid() AS nobody \gset
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', :'orun'), 'FF001', format('run %s not found', :'orun'),
    'cancel_run of another organization''s run: FF001, "run <id> not found"');
SELECT throws_ok(format('SELECT flowforge.cancel_run(%L)', :'nobody'), 'FF001', format('run %s not found', :'nobody'),
    'cancel_run of a random id: the same code and the same message');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'orun'), 'FF001', format('run %s not found', :'orun'),
    'retry_run of another organization''s run: FF001, same message');
-- The operator (this superuser session) reads any organization's run; its writes stay
-- in the default organization (above). Tenants never reach another organization's run:
-- tests/py/test_tenancy.py, with real logins.
SELECT lives_ok(format('SELECT * FROM flowforge.run_events(%L)', :'orun'),
    'run_events of another organization''s run, as the operator: no FF001');
SELECT throws_ok(format('SELECT * FROM flowforge.run_events(%L)', :'nobody'), 'FF001', format('run %s not found', :'nobody'),
    'run_events of a random id, as the operator: FF001');
SELECT is(flowforge_test.run_state(:'orun'), 'running', 'the other organization''s run was not touched');

SELECT * FROM finish();
ROLLBACK;
