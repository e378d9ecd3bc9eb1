-- The work-item transition matrix: every item status (pending, dispatched,
-- completed, failed, cancelled) x every operation (heartbeat_work,
-- complete_work, fail_work retryable / not, with the current and a stale
-- fencing token; the reaper after the lease expired; cancel_run of its run).
-- An allowed cell appends exactly one event for the item (kind, from, to); a
-- refused one raises its code (FF004 stale token, FF005 not dispatched or run
-- finished) and changes nothing. Unknown ids are FF001.
BEGIN;
SELECT plan(63);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- One node, two attempts, then done: an item's fate is its run's.
SELECT flowforge_test.define_graph_single('wmx', '{"queue": "qwm", "max_attempts": 2, "backoff": "1 second"}') \gset

-- A work item in the given status, reached through the API, in a fresh run.
-- Held items are leased for an hour, so only a cell that wants a lapsed lease gets one.
CREATE FUNCTION pg_temp.make_item(p_status text, p_lease interval DEFAULT '1 hour') RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := flowforge.start_run('wmx');
    v_item uuid := flowforge_test.item_of(v_run);
    v_token bigint;
BEGIN
    IF p_status = 'pending' THEN
        RETURN v_item;
    END IF;
    SELECT c.fencing_token INTO v_token FROM flowforge_test.claim_item(v_item, 'holder', p_lease) c;
    CASE p_status
        WHEN 'dispatched' THEN NULL;
        WHEN 'completed' THEN PERFORM flowforge.complete_work(v_item, v_token, '{"done": true}');
        WHEN 'failed' THEN PERFORM flowforge.fail_work(v_item, v_token, 'fatal', false);
        WHEN 'cancelled' THEN PERFORM flowforge.cancel_run(v_run, 'matrix');
    END CASE;
    RETURN v_item;
END;
$$;

CREATE TEMP TABLE expect (status text, op text, token text, outcome text);
INSERT INTO expect
SELECT s, o, t, CASE WHEN t = 'stale' THEN 'FF004' ELSE 'FF005' END
FROM unnest(ARRAY['pending', 'completed', 'failed', 'cancelled']) AS s,
     unnest(ARRAY['heartbeat_work', 'complete_work', 'fail_work retryable', 'fail_work final']) AS o,
     unnest(ARRAY['current', 'stale']) AS t;
INSERT INTO expect VALUES
    ('dispatched', 'heartbeat_work',      'current', 'no event (lease extended)'),
    ('dispatched', 'heartbeat_work',      'stale',   'FF004'),
    ('dispatched', 'complete_work',       'current', 'completed dispatched->completed'),
    ('dispatched', 'complete_work',       'stale',   'FF004'),
    ('dispatched', 'fail_work retryable', 'current', 'retry_scheduled dispatched->pending'),
    ('dispatched', 'fail_work retryable', 'stale',   'FF004'),
    ('dispatched', 'fail_work final',     'current', 'failed dispatched->failed'),
    ('dispatched', 'fail_work final',     'stale',   'FF004'),
    ('pending',    'reap',       '-', 'no event (not reaped)'),
    ('dispatched', 'reap',       '-', 'lease_expired dispatched->pending'),
    ('completed',  'reap',       '-', 'no event (not reaped)'),
    ('failed',     'reap',       '-', 'no event (not reaped)'),
    ('cancelled',  'reap',       '-', 'no event (not reaped)'),
    ('pending',    'cancel_run', '-', 'cancelled pending->cancelled'),
    ('dispatched', 'cancel_run', '-', 'cancelled dispatched->cancelled'),
    ('completed',  'cancel_run', '-', 'FF005'),
    ('failed',     'cancel_run', '-', 'FF005'),
    ('cancelled',  'cancel_run', '-', 'FF005');

-- One subject per status for the refused cells (a refusal changes nothing).
CREATE TEMP TABLE subject AS
SELECT s.status, pg_temp.make_item(s.status) AS id
FROM (VALUES ('pending'), ('dispatched'), ('completed'), ('failed'), ('cancelled')) s(status);
CREATE TEMP TABLE before AS
SELECT s.status AS subject_status, w.*, (SELECT count(*) FROM flowforge.task_run_event e WHERE e.work_item_id = w.id) AS events
FROM subject s JOIN flowforge.work_item w ON w.id = s.id;

SELECT is((SELECT count(*)::int FROM expect), 50, 'the matrix: 5 statuses x (4 writes x 2 tokens + the reaper + cancel_run)');
SELECT set_eq('SELECT subject_status, status::text FROM before',
    $$VALUES ('pending', 'pending'), ('dispatched', 'dispatched'), ('completed', 'completed'), ('failed', 'failed'),
             ('cancelled', 'cancelled')$$,
    'setup: one work item in each of the 5 statuses, reached through the API');

-- The stale token: the previous holder's, or, for an item never claimed, one never issued.
CREATE FUNCTION pg_temp.token_for(p_id uuid, p_kind text) RETURNS bigint LANGUAGE sql AS $$
    SELECT CASE WHEN p_kind = 'current' THEN w.fencing_token
                WHEN w.fencing_token > 0 THEN w.fencing_token - 1
                ELSE w.fencing_token + 1 END
    FROM flowforge.work_item w WHERE w.id = p_id
$$;

CREATE FUNCTION pg_temp.run_matrix() RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_cell record;
    v_id uuid;
    v_sql text;
    v_what text;
    v_got text;
    v_mark bigint;
    v_lease timestamptz;
BEGIN
    FOR v_cell IN SELECT * FROM expect ORDER BY status, op, token LOOP
        v_what := format('%s x %s', v_cell.status, v_cell.op) || CASE WHEN v_cell.token = '-' THEN ''
                                                                      ELSE format(' with the %s token', v_cell.token) END;
        IF v_cell.outcome LIKE 'FF%' OR v_cell.outcome = 'no event (not reaped)' THEN
            SELECT s.id INTO v_id FROM subject s WHERE s.status = v_cell.status;
        ELSIF v_cell.op = 'reap' THEN
            v_id := pg_temp.make_item(v_cell.status, '30 seconds');  -- a lease the clock can pass
        ELSE
            v_id := pg_temp.make_item(v_cell.status);   -- an allowed operation changes it: a fresh one per cell
        END IF;
        v_sql := CASE v_cell.op
            WHEN 'heartbeat_work' THEN format('SELECT flowforge.heartbeat_work(%L, %s)', v_id, pg_temp.token_for(v_id, v_cell.token))
            WHEN 'complete_work' THEN format($f$SELECT flowforge.complete_work(%L, %s, '{"r": 1}')$f$, v_id, pg_temp.token_for(v_id, v_cell.token))
            WHEN 'fail_work retryable' THEN format($f$SELECT flowforge.fail_work(%L, %s, 'boom', true)$f$, v_id, pg_temp.token_for(v_id, v_cell.token))
            WHEN 'fail_work final' THEN format($f$SELECT flowforge.fail_work(%L, %s, 'boom', false)$f$, v_id, pg_temp.token_for(v_id, v_cell.token))
            WHEN 'reap' THEN 'SELECT flowforge.tick()'
            WHEN 'cancel_run' THEN format('SELECT flowforge.cancel_run(%L)', (SELECT w.run_id FROM flowforge.work_item w WHERE w.id = v_id))
        END;
        IF v_cell.outcome LIKE 'FF%' THEN
            RETURN NEXT throws_ok(v_sql, v_cell.outcome::char(5), NULL::text, v_what || ': ' || v_cell.outcome);
            CONTINUE;
        END IF;
        SELECT coalesce(max(e.seq), 0) INTO v_mark FROM flowforge.task_run_event e;
        IF v_cell.op = 'reap' THEN
            PERFORM flowforge_test.advance_clock('31 seconds');
        END IF;
        SELECT w.lease_expires_at INTO v_lease FROM flowforge.work_item w WHERE w.id = v_id;
        IF v_cell.op = 'heartbeat_work' THEN
            PERFORM flowforge_test.advance_clock('1 second');
        END IF;
        EXECUTE v_sql;
        PERFORM flowforge_test.set_clock('2030-01-01 00:00:00+00');
        SELECT coalesce(string_agg(format('%s %s->%s', e.kind, e.from_state, e.to_state), ', ' ORDER BY e.seq),
                        CASE WHEN v_cell.op = 'reap' THEN 'no event (not reaped)' ELSE 'no event (lease extended)' END)
          INTO v_got
        FROM flowforge.task_run_event e WHERE e.work_item_id = v_id AND e.seq > v_mark;
        IF v_cell.op = 'heartbeat_work' AND (SELECT w.lease_expires_at FROM flowforge.work_item w WHERE w.id = v_id)
                                            IS DISTINCT FROM '2030-01-01 00:00:31+00'::timestamptz THEN
            v_got := format('heartbeat left the lease at %s (was %s)',
                            (SELECT w.lease_expires_at FROM flowforge.work_item w WHERE w.id = v_id), v_lease);
        END IF;
        RETURN NEXT is(v_got, v_cell.outcome, v_what || CASE WHEN v_cell.outcome = 'no event (not reaped)' THEN ': tick(), '
                                                           ELSE ': allowed, ' END || v_cell.outcome);
    END LOOP;
END;
$$;
SELECT * FROM pg_temp.run_matrix();

SELECT results_eq(
    $$SELECT b.subject_status, w.status::text, w.fencing_token, w.retry_count, w.lease_expires_at, w.output, w.error,
             w.completed_at, w.next_attempt_at, (SELECT count(*) FROM flowforge.task_run_event e WHERE e.work_item_id = w.id)
      FROM before b JOIN flowforge.work_item w ON w.id = b.id ORDER BY b.subject_status$$,
    $$SELECT subject_status, status::text, fencing_token, retry_count, lease_expires_at, output, error, completed_at,
             next_attempt_at, events
      FROM before ORDER BY subject_status$$,
    'every refused write (and every tick that had nothing to reap) left its item and its history exactly as they were');

-- The cells' side effects on the run, where an item's fate is the run's.
SELECT make_item AS done_item FROM pg_temp.make_item('completed') \gset
SELECT results_eq(
    format($$SELECT g.status::text, e.ended_at IS NOT NULL FROM flowforge.work_item w
             JOIN flowforge.graph_run g ON g.run_id = w.run_id JOIN flowforge.engine_run e ON e.run_id = w.run_id
             WHERE w.id = %L$$, :'done_item'),
    $$VALUES ('succeeded', true)$$, 'complete_work of the only node: its run succeeded and ended');

-- The reaper on an item's last attempt, and on one past its timeout.
SELECT make_item AS last FROM pg_temp.make_item('dispatched', '30 seconds') \gset
SELECT flowforge.fail_work(:'last', fencing_token, 'transient') FROM flowforge.work_item WHERE id = :'last' \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:01+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge_test.claim_item(:'last', 'holder', '30 seconds')), 1, 'setup: the last attempt claimed');
SELECT max(seq) AS mark FROM flowforge.task_run_event \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:32+00') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int >= 1, true, 'tick() reaps the lapsed last attempt');
SELECT is((SELECT string_agg(format('%s %s->%s', kind, from_state, to_state), ', ' ORDER BY seq) FROM flowforge.task_run_event
           WHERE work_item_id = :'last' AND seq > :'mark'), 'lease_expired dispatched->failed',
          'dispatched (last attempt) x reap: lease_expired dispatched->failed');
SELECT results_eq(
    format($$SELECT g.status::text, g.error, w.fencing_token FROM flowforge.work_item w JOIN flowforge.graph_run g ON g.run_id = w.run_id
             WHERE w.id = %L$$, :'last'),
    $$VALUES ('failed', 'lease expired (held by holder)', 3::bigint)$$,
    'its run failed with the reaper''s reason; the reap moved the token on');

SELECT flowforge_test.set_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge_test.define_graph_single('wmx_timeout', '{"queue": "qwt", "max_attempts": 2, "timeout": "5 seconds"}') \gset
SELECT flowforge.start_run('wmx_timeout') AS rt \gset
SELECT work_item_id AS wt, fencing_token AS tt FROM flowforge.claim_work(ARRAY['qwt'], 'holder', '1 minute') \gset
SELECT is((SELECT lease_expires_at FROM flowforge.work_item WHERE id = :'wt'), '2030-01-01 00:00:05+00'::timestamptz,
          'setup: the lease is capped at the 5 second timeout');
SELECT max(seq) AS mark FROM flowforge.task_run_event \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:06+00') \gset
SELECT flowforge.tick() \gset
SELECT results_eq(
    format($$SELECT e.kind::text, e.from_state::text, e.to_state::text, e.detail ->> 'error' FROM flowforge.task_run_event e
             WHERE e.work_item_id = %L AND e.seq > %s$$, :'wt', :'mark'),
    $$VALUES ('timed_out', 'dispatched', 'pending', 'timed out after 00:00:05')$$,
    'dispatched past its timeout x reap: timed_out dispatched->pending');

-- Unknown ids.
SELECT throws_ok(format('SELECT flowforge.heartbeat_work(%L, 1)', gen_random_uuid()), 'FF001', NULL, 'heartbeat_work of an unknown item: FF001');
SELECT throws_ok(format('SELECT flowforge.complete_work(%L, 1)', gen_random_uuid()), 'FF001', NULL, 'complete_work of an unknown item: FF001');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, 1, 'x')$$, gen_random_uuid()), 'FF001', NULL, 'fail_work of an unknown item: FF001');

SELECT * FROM finish();
ROLLBACK;
