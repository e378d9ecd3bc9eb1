-- The transition matrix: every task state x every holder write (heartbeat,
-- complete, fail) x (current token, stale token), every run state x
-- (cancel_run, retry_run), and every allowed transition's event.
BEGIN;
SELECT plan(94);
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

-- Events since a mark, per task of one run ("(run)" for run-level events):
-- how many, and each as "kind from->to".
CREATE TEMP TABLE mark (seq bigint);
CREATE FUNCTION pg_temp.mark() RETURNS void LANGUAGE sql AS $$
    DELETE FROM mark;
    INSERT INTO mark SELECT coalesce(max(seq), 0) FROM flowforge.task_run_event;
$$;
CREATE FUNCTION pg_temp.since_mark(p_run uuid) RETURNS TABLE (task text, events bigint, transitions text)
LANGUAGE sql AS $$
    SELECT coalesce(tr.task_key::text, '(run)') COLLATE "C", count(*),
           string_agg(format('%s %s->%s', e.kind, coalesce(e.from_state, 'none'), e.to_state), ', ' ORDER BY e.seq)
    FROM flowforge.task_run_event e
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    WHERE e.workflow_run_id = p_run AND e.seq > (SELECT seq FROM mark)
    GROUP BY 1 ORDER BY 1
$$;

-- =========================================================== task matrix
-- Workflow mx: p -> q, both on queue qm.
SELECT flowforge.define_workflow($${"name": "mx", "tasks": [
    {"key": "p", "queue": "qm", "backoff": "1 second"},
    {"key": "q", "queue": "qm", "depends_on": ["p"]}]}$$) \gset

-- A task run in the given state, reached through the API, in a fresh run.
CREATE FUNCTION pg_temp.make_task(p_state text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := flowforge.start_run('mx');
    v_p uuid;
    v_q uuid;
    v_token bigint;
BEGIN
    SELECT id INTO v_p FROM flowforge.task_run WHERE workflow_run_id = v_run AND task_key = 'p';
    SELECT id INTO v_q FROM flowforge.task_run WHERE workflow_run_id = v_run AND task_key = 'q';
    IF p_state = 'pending' THEN
        RETURN v_q;
    END IF;
    SELECT c.fencing_token INTO v_token FROM pg_temp.claim_one(v_run, 'p') c;
    CASE p_state
        WHEN 'running' THEN NULL;
        WHEN 'ready' THEN PERFORM flowforge.fail(v_p, v_token, 'again', true);
        WHEN 'succeeded' THEN PERFORM flowforge.complete(v_p, v_token, '{"done": true}');
        WHEN 'failed' THEN PERFORM flowforge.fail(v_p, v_token, 'fatal', false);
        WHEN 'cancelled' THEN PERFORM flowforge.cancel_run(v_run, 'matrix');
        WHEN 'skipped' THEN PERFORM flowforge.fail(v_p, v_token, 'fatal', false); RETURN v_q;
    END CASE;
    RETURN v_p;
END;
$$;

-- The expected outcome of every cell, written out.
CREATE TEMP TABLE expect (state text, op text, token text, outcome text);
INSERT INTO expect VALUES
    ('pending',   'heartbeat', 'current', 'FF005'), ('pending',   'heartbeat', 'stale', 'FF004'),
    ('pending',   'complete',  'current', 'FF005'), ('pending',   'complete',  'stale', 'FF004'),
    ('pending',   'fail',      'current', 'FF005'), ('pending',   'fail',      'stale', 'FF004'),
    ('ready',     'heartbeat', 'current', 'FF005'), ('ready',     'heartbeat', 'stale', 'FF004'),
    ('ready',     'complete',  'current', 'FF005'), ('ready',     'complete',  'stale', 'FF004'),
    ('ready',     'fail',      'current', 'FF005'), ('ready',     'fail',      'stale', 'FF004'),
    ('running',   'heartbeat', 'current', 'no event (lease extended)'),
                                                    ('running',   'heartbeat', 'stale', 'FF004'),
    ('running',   'complete',  'current', 'completed running->succeeded'),
                                                    ('running',   'complete',  'stale', 'FF004'),
    ('running',   'fail',      'current', 'retry_scheduled running->ready'),
                                                    ('running',   'fail',      'stale', 'FF004'),
    ('succeeded', 'heartbeat', 'current', 'FF005'), ('succeeded', 'heartbeat', 'stale', 'FF004'),
    ('succeeded', 'complete',  'current', 'FF005'), ('succeeded', 'complete',  'stale', 'FF004'),
    ('succeeded', 'fail',      'current', 'FF005'), ('succeeded', 'fail',      'stale', 'FF004'),
    ('failed',    'heartbeat', 'current', 'FF005'), ('failed',    'heartbeat', 'stale', 'FF004'),
    ('failed',    'complete',  'current', 'FF005'), ('failed',    'complete',  'stale', 'FF004'),
    ('failed',    'fail',      'current', 'FF005'), ('failed',    'fail',      'stale', 'FF004'),
    ('cancelled', 'heartbeat', 'current', 'FF005'), ('cancelled', 'heartbeat', 'stale', 'FF004'),
    ('cancelled', 'complete',  'current', 'FF005'), ('cancelled', 'complete',  'stale', 'FF004'),
    ('cancelled', 'fail',      'current', 'FF005'), ('cancelled', 'fail',      'stale', 'FF004'),
    ('skipped',   'heartbeat', 'current', 'FF005'), ('skipped',   'heartbeat', 'stale', 'FF004'),
    ('skipped',   'complete',  'current', 'FF005'), ('skipped',   'complete',  'stale', 'FF004'),
    ('skipped',   'fail',      'current', 'FF005'), ('skipped',   'fail',      'stale', 'FF004');

-- One subject per state for the refused cells (a refusal changes nothing).
CREATE TEMP TABLE subject AS
SELECT s.state, pg_temp.make_task(s.state) AS id
FROM (VALUES ('pending'), ('ready'), ('running'), ('succeeded'), ('failed'), ('cancelled'), ('skipped')) s(state);
-- What each subject looks like before the matrix runs.
CREATE TEMP TABLE before AS
SELECT s.state AS subject_state, tr.state, tr.fencing_token, tr.attempt, tr.lease_expires_at, tr.output, tr.error,
       (SELECT count(*) FROM flowforge.task_run_event e WHERE e.task_run_id = tr.id) AS events
FROM subject s JOIN flowforge.task_run tr ON tr.id = s.id;

SELECT is((SELECT count(*)::int FROM expect), 42, 'the matrix has 7 states x 3 operations x 2 tokens');
SELECT set_eq('SELECT subject_state, state::text FROM before',
    $$VALUES ('pending', 'pending'), ('ready', 'ready'), ('running', 'running'), ('succeeded', 'succeeded'),
             ('failed', 'failed'), ('cancelled', 'cancelled'), ('skipped', 'skipped')$$,
    'setup: one task run in each of the 7 states, reached through the API');

-- The stale token: the one before the current (the previous holder's), or,
-- for a task never claimed (token 0), a token that was never issued.
CREATE FUNCTION pg_temp.token_for(p_id uuid, p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT CASE WHEN p_kind = 'current' THEN tr.fencing_token
                WHEN tr.fencing_token > 0 THEN tr.fencing_token - 1
                ELSE tr.fencing_token + 1 END
    FROM flowforge.task_run tr WHERE tr.id = p_id
$$;

CREATE FUNCTION pg_temp.run_matrix() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_cell record;
    v_id uuid;
    v_sql text;
    v_what text;
    v_got text;
BEGIN
    FOR v_cell IN SELECT * FROM expect ORDER BY state, op, token LOOP
        v_what := format('%s x %s with the %s token', v_cell.state, v_cell.op, v_cell.token);
        IF v_cell.outcome LIKE 'FF%' THEN
            SELECT id INTO v_id FROM subject WHERE state = v_cell.state;
        ELSE
            v_id := pg_temp.make_task(v_cell.state);   -- an allowed write changes it: a fresh one per cell
        END IF;
        v_sql := format(CASE v_cell.op
                            WHEN 'heartbeat' THEN 'SELECT flowforge.heartbeat(%L, %s)'
                            WHEN 'complete' THEN 'SELECT flowforge.complete(%L, %s, ''{"r": 1}'')'
                            WHEN 'fail' THEN 'SELECT flowforge.fail(%L, %s, ''boom'')' END,
                        v_id, pg_temp.token_for(v_id, v_cell.token));
        IF v_cell.outcome LIKE 'FF%' THEN
            RETURN NEXT throws_ok(v_sql, v_cell.outcome::char(5), NULL::text, v_what || ': ' || v_cell.outcome);
        ELSE
            PERFORM pg_temp.mark();
            EXECUTE v_sql;
            SELECT coalesce(string_agg(format('%s %s->%s', e.kind, e.from_state, e.to_state), ', ' ORDER BY e.seq),
                            'no event (lease extended)')
              INTO v_got
            FROM flowforge.task_run_event e WHERE e.task_run_id = v_id AND e.seq > (SELECT seq FROM mark);
            IF v_cell.op = 'heartbeat' AND v_got = 'no event (lease extended)'
               AND (SELECT lease_expires_at FROM flowforge.task_run WHERE id = v_id) IS NULL THEN
                v_got := 'heartbeat lost the lease';
            END IF;
            RETURN NEXT is(v_got, v_cell.outcome, v_what || ': allowed, ' || v_cell.outcome);
        END IF;
    END LOOP;
END;
$$;
SELECT * FROM pg_temp.run_matrix();

SELECT results_eq(
    $$SELECT b.subject_state, tr.state::text, tr.fencing_token, tr.attempt, tr.lease_expires_at, tr.output, tr.error,
             (SELECT count(*) FROM flowforge.task_run_event e WHERE e.task_run_id = tr.id)
      FROM before b JOIN subject s ON s.state = b.subject_state JOIN flowforge.task_run tr ON tr.id = s.id
      ORDER BY b.subject_state$$,
    $$SELECT subject_state, state::text, fencing_token, attempt, lease_expires_at, output, error, events
      FROM before ORDER BY subject_state$$,
    'every refused write left its task run and its history exactly as they were');

-- A running task past its timeout: the current token's heartbeat is refused like a lost lease.
SELECT flowforge.define_workflow('{"name": "mxt", "tasks": [{"key": "k", "queue": "qmt", "timeout": "5 seconds"}]}') \gset
SELECT flowforge.start_run('mxt') AS mxt \gset
SELECT task_run_id AS tk, fencing_token AS ttok FROM pg_temp.claim_one(:'mxt', 'k') \gset
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'tk', :'ttok'), 'FF004', NULL,
    'running past its timeout x heartbeat with the current token: FF004');
SELECT flowforge_test.set_clock('2030-01-01 00:00:00+00') \gset

-- ============================================================ run matrix
CREATE FUNCTION pg_temp.make_run(p_state text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := flowforge.start_run('mx');
    v_token bigint;
    v_id uuid;
BEGIN
    CASE p_state
        WHEN 'running' THEN NULL;
        WHEN 'pending' THEN
            -- A DAG run is running from the start; pending (admitted, not
            -- started) is reserved, so the test sets it directly.
            UPDATE flowforge.workflow_run SET state = 'pending', started_at = NULL WHERE id = v_run;
        WHEN 'succeeded' THEN
            SELECT c.task_run_id, c.fencing_token INTO v_id, v_token FROM pg_temp.claim_one(v_run, 'p') c;
            PERFORM flowforge.complete(v_id, v_token, '{}');
            SELECT c.task_run_id, c.fencing_token INTO v_id, v_token FROM pg_temp.claim_one(v_run, 'q') c;
            PERFORM flowforge.complete(v_id, v_token, '{}');
        WHEN 'failed' THEN
            SELECT c.task_run_id, c.fencing_token INTO v_id, v_token FROM pg_temp.claim_one(v_run, 'p') c;
            PERFORM flowforge.fail(v_id, v_token, 'fatal', false);
        WHEN 'cancelled' THEN
            PERFORM flowforge.cancel_run(v_run);
    END CASE;
    RETURN v_run;
END;
$$;

CREATE TEMP TABLE run_expect (state text, op text, outcome text, state_after text);
INSERT INTO run_expect VALUES
    ('pending',   'cancel_run', 'run_cancelled pending->cancelled', 'cancelled'),
    ('running',   'cancel_run', 'run_cancelled running->cancelled', 'cancelled'),
    ('succeeded', 'cancel_run', 'FF005', 'succeeded'),
    ('failed',    'cancel_run', 'FF005', 'failed'),
    ('cancelled', 'cancel_run', 'FF005', 'cancelled'),
    ('pending',   'retry_run',  'FF005', 'pending'),
    ('running',   'retry_run',  'FF005', 'running'),
    ('succeeded', 'retry_run',  'FF005', 'succeeded'),
    ('failed',    'retry_run',  'run_retried failed->running', 'running'),
    ('cancelled', 'retry_run',  'run_retried cancelled->running', 'running');

CREATE FUNCTION pg_temp.run_run_matrix() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_cell record;
    v_run uuid;
    v_sql text;
    v_what text;
    v_got text;
BEGIN
    FOR v_cell IN SELECT * FROM run_expect ORDER BY op, state LOOP
        v_run := pg_temp.make_run(v_cell.state);
        v_what := format('run %s x %s', v_cell.state, v_cell.op);
        v_sql := format('SELECT flowforge.%s(%L)', v_cell.op, v_run);
        RETURN NEXT is(flowforge_test.run_state(v_run), v_cell.state, v_what || ': setup reached ' || v_cell.state);
        PERFORM pg_temp.mark();
        IF v_cell.outcome LIKE 'FF%' THEN
            RETURN NEXT throws_ok(v_sql, v_cell.outcome::char(5), NULL::text, v_what || ': ' || v_cell.outcome);
        ELSE
            EXECUTE v_sql;
            SELECT string_agg(format('%s %s->%s', e.kind, e.from_state, e.to_state), ', ' ORDER BY e.seq) INTO v_got
            FROM flowforge.task_run_event e
            WHERE e.workflow_run_id = v_run AND e.task_run_id IS NULL AND e.seq > (SELECT seq FROM mark);
            RETURN NEXT is(v_got, v_cell.outcome, v_what || ': allowed, exactly one run event ' || v_cell.outcome);
        END IF;
        RETURN NEXT is(flowforge_test.run_state(v_run), v_cell.state_after, v_what || ': the run is ' || v_cell.state_after);
    END LOOP;
END;
$$;
SELECT * FROM pg_temp.run_run_matrix();

-- ==================================== every allowed transition: one event each
-- Diamond tdia (a -> b, c -> d) on queue qt, 2 attempts, 1s backoff.
SELECT flowforge_test.set_clock('2030-02-01 00:00:00+00') \gset
-- Leases left by the matrices above have long expired: reap them now, so the
-- reaper counts below see only this section's tasks.
SELECT flowforge.reap_expired_leases() AS leftovers \gset
SELECT flowforge_test.define_diamond('tdia', '{"queue": "qt", "max_attempts": 2, "backoff": "1 second"}') \gset

SELECT pg_temp.mark();
SELECT flowforge.start_run('tdia') AS r \gset
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_started none->running'), ('a', 1, 'created none->ready'),
             ('b', 1, 'created none->pending'), ('c', 1, 'created none->pending'), ('d', 1, 'created none->pending')$$,
    'start_run: run_started, and created ->ready / ->pending, one per task');

SELECT pg_temp.mark();
SELECT task_run_id AS ta, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'a') \gset
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('a', 1::bigint, 'claimed ready->running')$$, 'claim: one event, claimed ready->running');

SELECT pg_temp.mark();
SELECT flowforge.fail(:'ta', :'tok', 'transient');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('a', 1::bigint, 'retry_scheduled running->ready')$$, 'fail with attempts left: one event, retry_scheduled running->ready');

SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS ta, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'a') \gset
SELECT pg_temp.mark();
SELECT flowforge.complete(:'ta', :'tok', '{"a": 1}');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('a', 1::bigint, 'completed running->succeeded'), ('b', 1, 'released pending->ready'), ('c', 1, 'released pending->ready')$$,
    'complete: completed running->succeeded, and released pending->ready for each freed dependent');

SELECT task_run_id AS tb, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'b') \gset
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT pg_temp.mark();
SELECT is(flowforge.reap_expired_leases(), 1, 'setup: the reaper reaps b');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('b', 1::bigint, 'lease_expired running->ready')$$, 'reaper with attempts left: lease_expired running->ready');

SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS tb, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'b') \gset
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT pg_temp.mark();
SELECT is(flowforge.reap_expired_leases(), 1, 'setup: the reaper reaps b again');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('b', 1::bigint, 'lease_expired running->failed'), ('d', 1, 'skipped pending->skipped')$$,
    'reaper with no attempts left: lease_expired running->failed, and skipped pending->skipped downstream');

SELECT task_run_id AS tc, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'c') \gset
SELECT pg_temp.mark();
SELECT flowforge.fail(:'tc', :'tok', 'fatal', false);
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_failed running->failed'), ('c', 1, 'failed running->failed')$$,
    'fail for good, last task: failed running->failed, and run_failed');

SELECT pg_temp.mark();
SELECT flowforge.retry_run(:'r');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_retried failed->running'), ('b', 1, 'retried failed->ready'),
             ('c', 1, 'retried failed->ready'), ('d', 1, 'retried skipped->pending')$$,
    'retry_run of a failed run: retried failed->ready / skipped->pending, and run_retried');

SELECT task_run_id AS tb, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'b') \gset
SELECT pg_temp.mark();
SELECT flowforge.cancel_run(:'r');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_cancelled running->cancelled'), ('b', 1, 'cancelled running->cancelled'),
             ('c', 1, 'cancelled ready->cancelled'), ('d', 1, 'cancelled pending->cancelled')$$,
    'cancel_run: cancelled from running, ready and pending, and run_cancelled');

SELECT pg_temp.mark();
SELECT flowforge.retry_run(:'r');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_retried cancelled->running'), ('b', 1, 'retried cancelled->ready'),
             ('c', 1, 'retried cancelled->ready'), ('d', 1, 'retried cancelled->pending')$$,
    'retry_run of a cancelled run: retried cancelled->ready / ->pending, and run_retried');

SELECT task_run_id AS tb, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'b') \gset
SELECT pg_temp.mark();
SELECT flowforge.complete(:'tb', :'tok', '{"b": 1}');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('b', 1::bigint, 'completed running->succeeded')$$, 'complete with a dependent still waiting: one event only');
SELECT task_run_id AS tc, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'c') \gset
SELECT flowforge.complete(:'tc', :'tok', '{"c": 1}');
SELECT task_run_id AS td, fencing_token AS tok FROM pg_temp.claim_one(:'r', 'd') \gset
SELECT pg_temp.mark();
SELECT flowforge.complete(:'td', :'tok', '{"d": 1}');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'r'),
    $$VALUES ('(run)', 1::bigint, 'run_succeeded running->succeeded'), ('d', 1, 'completed running->succeeded')$$,
    'complete of the last task: completed, and run_succeeded');

-- Timeouts: reaped as timed_out.
SELECT flowforge.define_workflow('{"name": "tout", "tasks": [{"key": "k", "queue": "qto", "timeout": "5 seconds", "max_attempts": 2, "backoff": "1 second"}]}') \gset
SELECT flowforge.start_run('tout') AS tr \gset
SELECT task_run_id AS tk, fencing_token AS tok FROM pg_temp.claim_one(:'tr', 'k') \gset
SELECT flowforge_test.advance_clock('6 seconds') \gset
SELECT pg_temp.mark();
SELECT is(flowforge.reap_expired_leases(), 1, 'setup: the reaper reaps the timed-out task');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'tr'),
    $$VALUES ('k', 1::bigint, 'timed_out running->ready')$$, 'timeout with attempts left: timed_out running->ready');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS tk, fencing_token AS tok FROM pg_temp.claim_one(:'tr', 'k') \gset
SELECT flowforge_test.advance_clock('6 seconds') \gset
SELECT pg_temp.mark();
SELECT is(flowforge.reap_expired_leases(), 1, 'setup: the reaper reaps it again');
SELECT results_eq(format('SELECT * FROM pg_temp.since_mark(%L)', :'tr'),
    $$VALUES ('(run)', 1::bigint, 'run_failed running->failed'), ('k', 1, 'timed_out running->failed')$$,
    'timeout with no attempts left: timed_out running->failed, and run_failed');

SELECT * FROM finish();
ROLLBACK;
