-- send_event: outcomes applied / queued / duplicate and what it returns;
-- named arguments; every refusal (FF012: no transition, every guard false,
-- the run ended, not a machine, an event no state accepts while suspended)
-- writes nothing; FF001 / FF003 / FF009 for bad calls; duplicates by event_id.
BEGIN;
SELECT plan(76);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge_test.define_order('order', '{"queue": "se_q"}') \gset
-- An action with no on_error and one attempt: its failure fails the run.
SELECT flowforge.define_workflow($${"name": "fragile", "kind": "statemachine", "initial": "idle",
    "states": {"idle": {"on": {"go": "work"}},
               "work": {"action": {"task": "fragile_task", "queue": "se_q", "max_attempts": 1}, "on_done": "done"},
               "done": {"final": true}}}$$) \gset
SELECT flowforge_test.define_single('se_dag', '{"queue": "se_dag_q"}') \gset
SELECT flowforge.define_workflow($${"name": "se_graph", "kind": "graph", "start": "a", "nodes": [{"key": "a", "queue": "se_graph_q"},
    {"key": "b", "final": true}], "edges": [{"from": "a", "to": "b"}]}$$) \gset

-- A refused call: FF012 (or the given code) with the message, and the run's footprint unchanged.
CREATE FUNCTION pg_temp.refused(p_run uuid, p_call text, p_code text, p_message text, p_what text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_before jsonb := flowforge_test.machine_footprint(p_run);
    v_events bigint := (SELECT count(*) FROM flowforge.task_run_event);
    v_transitions bigint := (SELECT count(*) FROM flowforge.machine_transition);
    v_seen bigint := (SELECT count(*) FROM flowforge.machine_event_seen);
    v_queued bigint := (SELECT count(*) FROM flowforge.machine_event_queue);
BEGIN
    RETURN NEXT throws_ok(p_call, p_code, p_message, p_what || ': ' || p_code);
    RETURN NEXT ok(flowforge_test.machine_footprint(p_run) IS NOT DISTINCT FROM v_before
                   AND (SELECT count(*) FROM flowforge.task_run_event) = v_events
                   AND (SELECT count(*) FROM flowforge.machine_transition) = v_transitions
                   AND (SELECT count(*) FROM flowforge.machine_event_seen) = v_seen
                   AND (SELECT count(*) FROM flowforge.machine_event_queue) = v_queued,
                   p_what || ': nothing written (history, transitions, seen ids, queue, run_events, the run row)');
END;
$$;

-- ------------------------------------------------------------------ applied
SELECT flowforge.start_run('order', '{"customer": "ada"}') AS r1 \gset
SELECT flowforge_test.advance_clock('10 seconds') \gset
SELECT is(flowforge.send_event(:'r1', 'paid', '{"amount": 150}', 'pay-1'),
    '{"outcome": "applied", "state": "shipping", "live": true, "suspended": true}'::jsonb,
    'applied: the returned document has the outcome, the state now, live and suspended (an action state: suspended)');
SELECT results_eq(
    format($$SELECT n, cause::text, outcome::text, event::text, event_id::text, payload, from_state::text, to_state::text,
                    detail, created_at
             FROM flowforge.machine_transition WHERE run_id = %L ORDER BY n$$, :'r1'),
    $$VALUES (1::bigint, 'start', 'entered', NULL, NULL, NULL::jsonb, NULL, 'awaiting_payment', NULL::jsonb,
              '2030-01-01 00:00:00+00'::timestamptz),
             (2, 'event', 'entered', 'paid', 'pay-1', '{"amount": 150}', 'awaiting_payment', 'shipping', '{"candidate": 1}',
              '2030-01-01 00:00:10+00')$$,
    'the history has the state entered, the event, its id, payload and time');
SELECT results_eq(
    format($$SELECT state::text, context, transitions, history_length, live, suspended FROM flowforge.machine_run
             WHERE run_id = %L$$, :'r1'),
    $$VALUES ('shipping', '{"total": 100, "customer": "ada", "paid_amount": 150}'::jsonb, 2::bigint, 2::bigint, true, true)$$,
    'the run moved: state, context assigned, counters, suspended on the action');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_seen WHERE run_id = :'r1' AND event_id = 'pay-1'), 1,
    'the event id is recorded as seen (one key)');
SELECT results_eq(
    format($$SELECT kind, from_state, to_state, detail FROM flowforge.run_events(%L) WHERE kind = 'state_entered'
             ORDER BY seq$$, :'r1'),
    $$VALUES ('state_entered', NULL, 'awaiting_payment', '{"n": 1, "cause": "start"}'::jsonb),
             ('state_entered', 'awaiting_payment', 'shipping',
              '{"n": 2, "cause": "event", "event": "paid", "event_id": "pay-1", "candidate": 1}')$$,
    'run_events has a state_entered row per transition');

-- ------------------------------------------------------------------- queued
SELECT is(flowforge.send_event(:'r1', 'give_up', '{"why": "slow"}', 'q-1'),
    '{"outcome": "queued", "state": "shipping", "live": true, "suspended": true}'::jsonb,
    'an event sent while the action runs is queued; the machine stays where it is');
SELECT results_eq(format($$SELECT seq, event::text, payload, event_id::text, received_at FROM flowforge.machine_event_queue
                           WHERE run_id = %L$$, :'r1'),
    $$VALUES (1::bigint, 'give_up', '{"why": "slow"}'::jsonb, 'q-1', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the queue holds it with its payload, id and arrival time');
SELECT is(flowforge.send_event(:'r1', 'retry') ->> 'outcome', 'queued', 'a second event without an id is queued too');
SELECT results_eq(format($$SELECT seq, event::text FROM flowforge.machine_event_queue WHERE run_id = %L ORDER BY seq$$, :'r1'),
    $$VALUES (1::bigint, 'give_up'), (2, 'retry')$$, 'in arrival order');
SELECT is((SELECT history_length FROM flowforge.machine_run WHERE run_id = :'r1'), 2::bigint,
    'queueing adds nothing to the history (it is recorded when applied or refused)');

-- ---------------------------------------------------------------- duplicates
SELECT flowforge_test.machine_footprint(:'r1') AS fp \gset
SELECT is(flowforge.send_event(:'r1', 'paid', '{"amount": 150}', 'pay-1'),
    '{"outcome": "duplicate", "state": "shipping", "live": true, "suspended": true}'::jsonb,
    'an applied event''s id again: duplicate, with the state now');
SELECT is(flowforge.send_event(:'r1', 'give_up', '{}', 'q-1') ->> 'outcome', 'duplicate', 'a queued event''s id again: duplicate');
SELECT is(flowforge.send_event(:'r1', 'cancel', '{}', 'pay-1') ->> 'outcome', 'duplicate',
    'the id decides, whatever the event: another event under a seen id is a duplicate');
SELECT is(flowforge.send_event(:'r1', 'bogus', '{}', 'pay-1') ->> 'outcome', 'duplicate',
    'even an event no state accepts, under a seen id, is a duplicate (a redelivery is never judged again)');
SELECT is(flowforge_test.machine_footprint(:'r1'), :'fp'::jsonb, 'duplicates changed nothing (queue, history, seen ids, events)');
SELECT flowforge.start_run('order') AS r1b \gset
SELECT is(flowforge.send_event(:'r1b', 'paid', '{"amount": 100}', 'pay-1') ->> 'outcome', 'applied',
    'event ids are per run: the same id on another run is applied');

-- ------------------------------------------------------ named arguments, defaults
SELECT flowforge.start_run('order') AS r2 \gset
SELECT is(flowforge.send_event(run_id => :'r2', event => 'paid', payload => '{"amount": 100}', event_id => 'n-1'),
    '{"outcome": "applied", "state": "shipping", "live": true, "suspended": true}'::jsonb,
    'named arguments: send_event(run_id => ..., event => ..., payload => ..., event_id => ...)');
SELECT flowforge.start_run('order') AS r3 \gset
SELECT is(flowforge.send_event(run_id => :'r3', event => 'cancel'),
    '{"outcome": "applied", "state": "cancelled", "live": false, "suspended": false}'::jsonb,
    'payload and event_id default: a final state is entered, live false');
SELECT results_eq(format($$SELECT payload, event_id FROM flowforge.machine_transition WHERE run_id = %L AND n = 2$$, :'r3'),
    $$VALUES ('{}'::jsonb, NULL::varchar)$$, 'the default payload is {} and no id is recorded');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_seen WHERE run_id = :'r3'), 0, 'an event without an id records no seen row');
SELECT flowforge.start_run('order') AS r4 \gset
SELECT is(flowforge.send_event(:'r4', 'cancel', NULL) ->> 'outcome', 'applied', 'a NULL payload is the empty object');

-- ================================================================ FF012
SELECT flowforge.start_run('order') AS rest \gset
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'retry', '{}', 'x-1')$$, :'rest'), 'FF012',
    'event "retry" refused: state "awaiting_payment" has no transition for event "retry" (it accepts: cancel, paid)',
    'an event the state has no transition for (another state''s)');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '{"amount": 50}', 'x-2')$$, :'rest'), 'FF012',
    'event "paid" refused: no guard of event "paid" holds in state "awaiting_payment"',
    'every guard false (amount below the total)');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '{}', 'x-3')$$, :'rest'), 'FF012',
    'event "paid" refused: no guard of event "paid" holds in state "awaiting_payment"',
    'every guard false (no amount at all: unknown, does not hold)');
SELECT is(flowforge.send_event(:'rest', 'paid', '{"amount": 100}', 'x-2') ->> 'outcome', 'applied',
    'a refused event recorded no id: the same id, sent again with an acceptable payload, is judged again and applied');

-- Suspended: an event no state of the machine accepts could never apply.
SELECT * FROM pg_temp.refused(:'r1', format($$SELECT flowforge.send_event(%L, 'bogus', '{}', 'x-4')$$, :'r1'), 'FF012',
    'event "bogus" refused: no state of machine "order" accepts it',
    'while suspended, an event no state accepts');

-- Ended: succeeded (a final state), failed (an action, no on_error), cancelled.
SELECT * FROM pg_temp.refused(:'r3', format($$SELECT flowforge.send_event(%L, 'paid', '{"amount": 500}', 'x-5')$$, :'r3'), 'FF012',
    'event "paid" refused: the run has ended (succeeded: reached final state "cancelled")', 'a succeeded machine');
SELECT flowforge.start_run('fragile') AS rfail \gset
SELECT flowforge.send_event(:'rfail', 'go') AS ignored \gset
SELECT flowforge_test.fail_action(:'rfail', 'disk full');
SELECT is(flowforge_test.machine_status(:'rfail'), 'failed', 'setup: the fragile machine failed');
SELECT * FROM pg_temp.refused(:'rfail', format($$SELECT flowforge.send_event(%L, 'go', '{}', 'x-6')$$, :'rfail'), 'FF012',
    'event "go" refused: the run has ended (failed: action "fragile_task" of state "work" failed after 1 attempt(s))',
    'a failed machine');
SELECT flowforge.start_run('order') AS rcan \gset
SELECT flowforge.cancel_run(:'rcan', 'customer left');
SELECT * FROM pg_temp.refused(:'rcan', format($$SELECT flowforge.send_event(%L, 'paid', '{"amount": 500}', 'x-7')$$, :'rcan'), 'FF012',
    'event "paid" refused: the run has ended (cancelled: customer left)', 'a cancelled machine');
SELECT * FROM pg_temp.refused(:'rcan', format($$SELECT flowforge.send_event(%L, 'cancel')$$, :'rcan'), 'FF012', NULL,
    'a cancelled machine, an event its state would accept');

-- Not a machine.
SELECT flowforge.start_run('se_dag') AS rdag \gset
SELECT count(*) AS dag_events FROM flowforge.task_run_event e
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    WHERE e.workflow_run_id = :'rdag' OR tr.workflow_run_id = :'rdag' \gset
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'paid', '{}', 'x-8')$$, :'rdag'), 'FF012',
    format('event "paid" refused: run %s is a dag run, and only statemachine runs take events', :'rdag'),
    'a DAG run: FF012');
SELECT is((SELECT count(*) FROM flowforge.task_run_event e LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
           WHERE e.workflow_run_id = :'rdag' OR tr.workflow_run_id = :'rdag'), :'dag_events'::bigint,
    'a DAG run: nothing written to its history');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_seen WHERE run_id = :'rdag'), 0, 'nor a seen id');
SELECT flowforge.start_run('se_graph') AS rgraph \gset
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'paid')$$, :'rgraph'), 'FF012',
    format('event "paid" refused: run %s is a graph run, and only statemachine runs take events', :'rgraph'),
    'a graph run: FF012');

-- ============================================================ FF001 / FF003 / FF009
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'paid')$$, gen_random_uuid()), 'FF001', NULL, 'an unknown run: FF001');
SELECT throws_ok($$SELECT flowforge.send_event(NULL, 'paid')$$, 'FF001', NULL, 'a NULL run id: FF001');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, '1paid')$$, :'rest'), 'FF003',
    'event must be a name of 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter, got ''1paid''',
    'an event name starting with a digit');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'is paid')$$, :'rest'), 'FF003', NULL,
    'an event name with a space');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, '')$$, :'rest'), 'FF003', NULL,
    'an empty event name');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, NULL)$$, :'rest'), 'FF003',
    'event must be a name of 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter, got NULL', 'a NULL event');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, %L)$$, :'rest', 'e' || repeat('x', 200)),
    'FF003', NULL, 'an event name of 201 characters');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '[1, 2]')$$, :'rest'), 'FF003',
    'event payload must be a JSON object, got array', 'a payload that is an array');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '"100"')$$, :'rest'), 'FF003',
    'event payload must be a JSON object, got string', 'a payload that is a string');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', 'null'::jsonb)$$, :'rest'), 'FF003',
    'event payload must be a JSON object, got null', 'a payload that is JSON null');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '{"amount": 500}', '')$$, :'rest'),
    'FF003', 'event_id must be 1 to 200 characters', 'an empty event_id');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', '{"amount": 500}', %L)$$, :'rest',
                                              repeat('i', 201)), 'FF003', 'event_id must be 1 to 200 characters',
    'an event_id of 201 characters');
SELECT is(flowforge.send_event(:'r2', 'retry', '{}', repeat('i', 200)) ->> 'outcome', 'queued', 'an event_id of 200 characters is fine');
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', %L::jsonb)$$, :'rest',
                                              repeat('{"a": ', 70) || '1' || repeat('}', 70)), 'FF009',
    'event payload is nested more than 64 levels deep', 'a payload nested 70 levels deep');
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT * FROM pg_temp.refused(:'rest', format($$SELECT flowforge.send_event(%L, 'paid', jsonb_build_object('blob', repeat('x', 2000)))$$,
                                              :'rest'), 'FF009', NULL, 'a payload over max_payload_bytes');

-- =========================================================== duplicates after the end
SELECT flowforge.start_run('order') AS rend \gset
SELECT flowforge.send_event(:'rend', 'cancel', '{}', 'c-1') AS ignored \gset
SELECT is(flowforge.send_event(:'rend', 'cancel', '{}', 'c-1'),
    '{"outcome": "duplicate", "state": "cancelled", "live": false, "suspended": false}'::jsonb,
    'the id of the event that ended the machine, again: duplicate, not FF012');
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'cancel', '{}', 'c-2')$$, :'rend'), 'FF012', NULL,
    'a new id on the ended machine: FF012');
SELECT flowforge.cancel_run(:'r1b');
SELECT is(flowforge.send_event(:'r1b', 'paid', '{}', 'pay-1') ->> 'outcome', 'duplicate',
    'after cancel_run, a seen id is still a duplicate');

-- A queued event refused when the run ended: its id stays seen.
SELECT flowforge_test.finish_action(:'r1', '{"tracking": "T1"}') AS ignored \gset
SELECT results_eq(format($$SELECT state::text, status::text, live FROM flowforge.machine_run WHERE run_id = %L$$, :'r1'),
    $$VALUES ('delivered', 'succeeded', false)$$, 'setup: the action ended, delivered');
SELECT results_eq(format($$SELECT n, outcome::text, event::text, event_id::text FROM flowforge.machine_transition
                           WHERE run_id = %L AND n > 2 ORDER BY n$$, :'r1'),
    $$VALUES (3::bigint, 'entered', NULL, NULL), (4, 'refused', 'give_up', 'q-1'), (5, 'refused', 'retry', NULL)$$,
    'setup: delivered entered, then the two queued events refused (the run succeeded)');
SELECT is(flowforge.send_event(:'r1', 'give_up', '{}', 'q-1'),
    '{"outcome": "duplicate", "state": "delivered", "live": false, "suspended": false}'::jsonb,
    'a queued event''s id, refused from the queue, is still a duplicate after the end');

SELECT * FROM finish();
ROLLBACK;
