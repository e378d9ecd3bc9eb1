-- The timer duty (tick() "timers_fired"): a machine's "after" timers are rows
-- with a due time; tick fires one exactly when due, once, and never when the
-- machine left the state meanwhile or re-entered it (compare-and-set on the
-- entry's transition count); the earliest due wins; cancel removes them; a
-- daemon's tick(engine_id) fires only the timers of the organizations it serves.
BEGIN;
SELECT plan(44);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge.define_workflow($${"name": "tm", "kind": "statemachine", "initial": "wait",
  "states": {
    "wait":    {"on": {"pay": "paid", "ping": "wait", "hold": "held"},
                "after": [{"delay": "10 minutes", "target": "late"}, {"delay": "1 hour", "target": "expired"}]},
    "held":    {"on": {"release": "wait"}},
    "late":    {"on": {"pay": "paid"}, "after": [{"delay": "1 day", "target": "expired"}]},
    "paid":    {"final": true},
    "expired": {"final": true}}}$$) AS tm \gset
-- The same timers listed the other way round.
SELECT flowforge.define_workflow($${"name": "tm_rev", "kind": "statemachine", "initial": "wait",
  "states": {
    "wait":    {"on": {"pay": "paid"},
                "after": [{"delay": "1 hour", "target": "expired"}, {"delay": "10 minutes", "target": "late"}]},
    "late":    {"on": {"pay": "paid"}},
    "paid":    {"final": true}, "expired": {"final": true}}}$$) AS tm_rev \gset
-- A timer into an action state.
SELECT flowforge.define_workflow($${"name": "tm_act", "kind": "statemachine", "initial": "wait",
  "states": {
    "wait": {"on": {"pay": "done"}, "after": [{"delay": "5 minutes", "target": "work"}]},
    "work": {"action": {"task": "tm_task", "queue": "tm_q"}, "on_done": "done"},
    "done": {"final": true}}}$$) AS tm_act \gset

CREATE FUNCTION pg_temp.fired() RETURNS int LANGUAGE sql AS $$ SELECT (flowforge.tick() ->> 'timers_fired')::int $$;
-- Between sections: no machine of an earlier one keeps timers that would fire later.
CREATE FUNCTION pg_temp.stop_all() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid;
BEGIN
    FOR v_run IN SELECT run_id FROM flowforge.machine_run WHERE status = 'running' LOOP
        PERFORM flowforge.cancel_run(v_run, 'next section');
    END LOOP;
END;
$$;

-- ====================================================== exactly when due, once
SELECT flowforge.start_run('tm') AS r1 \gset
SELECT results_eq(format($$SELECT position, target::text, delay, entered, fire_at FROM flowforge.machine_timer
                           WHERE run_id = %L ORDER BY position$$, :'r1'),
    $$VALUES (1, 'late', interval '10 minutes', 1::bigint, '2030-01-01 00:10:00+00'::timestamptz),
             (2, 'expired', interval '1 hour', 1::bigint, '2030-01-01 01:00:00+00'::timestamptz)$$,
    'entering wait set its two timers as rows: due times from the entry, stamped with the entry''s transition count');
SELECT flowforge_test.set_clock('2030-01-01 00:09:59.999999+00') \gset
SELECT is(pg_temp.fired(), 0, 'a microsecond before it is due: tick fires nothing');
SELECT is(flowforge_test.machine_state(:'r1'), 'wait', 'the machine still waits');
SELECT flowforge_test.set_clock('2030-01-01 00:10:00+00') \gset
SELECT is(pg_temp.fired(), 1, 'exactly when due: tick fires it (timers_fired 1)');
SELECT is(flowforge_test.machine_state(:'r1'), 'late', 'the machine took the timer''s transition');
SELECT results_eq(format($$SELECT n, cause::text, outcome::text, event, from_state::text, to_state::text, detail, created_at
                           FROM flowforge.machine_transition WHERE run_id = %L AND n = 2$$, :'r1'),
    $$VALUES (2::bigint, 'timer', 'entered', NULL::varchar, 'wait', 'late',
              '{"delay": "00:10:00", "timer": 1, "due_at": "2030-01-01T00:10:00+00:00"}'::jsonb, '2030-01-01 00:10:00+00'::timestamptz)$$,
    'the history: late entered by the timer (its delay, position and due time)');
SELECT results_eq(format($$SELECT kind, from_state, to_state, detail ->> 'cause' FROM flowforge.run_events(%L) ORDER BY seq DESC LIMIT 1$$, :'r1'),
    $$VALUES ('state_entered', 'wait', 'late', 'timer')$$, 'and run_events a state_entered row with cause timer');
SELECT results_eq(format($$SELECT position, target::text, entered, fire_at FROM flowforge.machine_timer WHERE run_id = %L$$, :'r1'),
    $$VALUES (1, 'expired', 2::bigint, '2030-01-02 00:10:00+00'::timestamptz)$$,
    'wait''s other timer is gone; late''s own timer is set from the firing, for the new entry');
SELECT is(pg_temp.fired(), 0, 'a second tick at the same time fires nothing: a timer fires once');
SELECT flowforge_test.set_clock('2030-01-01 02:00:00+00') \gset
SELECT is(pg_temp.fired(), 0, 'past wait''s second timer''s due time: nothing (it left wait)');
SELECT is(flowforge_test.machine_state(:'r1'), 'late', 'still late');
SELECT flowforge_test.set_clock('2030-01-02 00:10:00+00') \gset
SELECT is(pg_temp.fired(), 1, 'late''s timer fires when it is due');
SELECT results_eq(format($$SELECT state::text, status::text, live, reason FROM flowforge.machine_run WHERE run_id = %L$$, :'r1'),
    $$VALUES ('expired', 'succeeded', false, 'reached final state "expired"')$$, 'into a final state: the run ends');
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id = :'r1'), 0, 'no timer is left');

-- ====================================================== the earliest wins
SELECT flowforge_test.set_clock('2030-02-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm') AS r2 \gset
SELECT flowforge.start_run('tm_rev') AS r2r \gset
SELECT flowforge_test.set_clock('2030-02-01 02:00:00+00') \gset
SELECT is(pg_temp.fired(), 2, 'a late tick, both timers of both machines due: one firing per machine');
SELECT is(flowforge_test.machine_state(:'r2'), 'late', 'the earliest due (10 minutes) won over the 1 hour one');
SELECT is(flowforge_test.machine_state(:'r2r'), 'late', 'also when it is listed second');
SELECT results_eq(format($$SELECT created_at, detail ->> 'due_at' FROM flowforge.machine_transition WHERE run_id = %L AND cause = 'timer'$$, :'r2'),
    $$VALUES ('2030-02-01 02:00:00+00'::timestamptz, '2030-02-01T00:10:00+00:00')$$,
    'the entry is made when tick ran, and records when the timer was due');
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id IN (:'r2', :'r2r') AND target = 'expired'
           AND fire_at < '2030-02-01 02:00:00+00'), 0, 'the losing timers are gone');
SELECT pg_temp.stop_all() AS ignored \gset

-- ====================================================== never after the machine left
SELECT flowforge_test.set_clock('2030-03-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm') AS r3 \gset
SELECT flowforge.start_run('tm') AS r3h \gset
SELECT flowforge_test.set_clock('2030-03-01 00:05:00+00') \gset
SELECT flowforge.send_event(:'r3', 'pay') ->> 'state' AS ignored \gset
SELECT flowforge.send_event(:'r3h', 'hold') ->> 'state' AS ignored \gset
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id IN (:'r3', :'r3h')), 0,
    'an event that leaves the state deletes its timers (into a final state and into a state without timers alike)');
SELECT flowforge_test.set_clock('2030-03-01 03:00:00+00') \gset
SELECT is(pg_temp.fired(), 0, 'past both due times: nothing fires');
SELECT results_eq(format($$SELECT run_id, state::text FROM flowforge.machine_run WHERE run_id IN (%L, %L) ORDER BY state$$, :'r3', :'r3h'),
    format($$VALUES (%L::uuid, 'held'), (%L::uuid, 'paid')$$, :'r3h', :'r3'), 'the machines stay where the events took them');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id IN (:'r3', :'r3h') AND cause = 'timer'), 0,
    'no timer entry in their history');
-- Back into the state: its timers start again from then.
SELECT flowforge.send_event(:'r3h', 'release') ->> 'state' AS ignored \gset
SELECT results_eq(format($$SELECT target::text, fire_at FROM flowforge.machine_timer WHERE run_id = %L ORDER BY position$$, :'r3h'),
    $$VALUES ('late', '2030-03-01 03:10:00+00'::timestamptz), ('expired', '2030-03-01 04:00:00+00')$$,
    'entering wait again sets its timers from the new entry');
SELECT pg_temp.stop_all() AS ignored \gset

-- ====================================================== re-entry resets the timers
SELECT flowforge_test.set_clock('2030-04-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm') AS r4 \gset
SELECT flowforge_test.set_clock('2030-04-01 00:08:00+00') \gset
SELECT flowforge.send_event(:'r4', 'ping') ->> 'state' AS ignored \gset
SELECT results_eq(format($$SELECT target::text, entered, fire_at FROM flowforge.machine_timer WHERE run_id = %L ORDER BY position$$, :'r4'),
    $$VALUES ('late', 2::bigint, '2030-04-01 00:18:00+00'::timestamptz), ('expired', 2::bigint, '2030-04-01 01:08:00+00')$$,
    're-entering wait (ping) replaced the timers: due from the new entry, stamped with it');
SELECT flowforge_test.set_clock('2030-04-01 00:10:00+00') \gset
SELECT is(pg_temp.fired(), 0, 'when the first entry''s timer would have been due: nothing fires');
SELECT is(flowforge_test.machine_state(:'r4'), 'wait', 'the machine still waits');
SELECT flowforge_test.set_clock('2030-04-01 00:18:00+00') \gset
SELECT is(pg_temp.fired(), 1, 'the new entry''s timer fires when it is due');
SELECT is(flowforge_test.machine_state(:'r4'), 'late', 'into late');

-- Compare-and-set: a timer row of an earlier entry (left behind, or read by a
-- tick that raced the event) never fires, and is dropped.
SELECT flowforge.start_run('tm') AS r5 \gset
SELECT flowforge.send_event(:'r5', 'ping') ->> 'state' AS ignored \gset
INSERT INTO flowforge.machine_timer (organization_id, run_id, entered, position, target, delay, fire_at)
SELECT organization_id, run_id, transitions - 1, 1, 'expired', interval '1 minute', '2030-04-01 00:00:00+00'
FROM flowforge.machine_run WHERE run_id = :'r5';
SELECT is(pg_temp.fired(), 0, 'a due timer stamped with an earlier entry does not fire');
SELECT results_eq(format($$SELECT state::text, transitions FROM flowforge.machine_run WHERE run_id = %L$$, :'r5'),
    $$VALUES ('wait', 2::bigint)$$, 'the machine did not move');
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id = :'r5' AND entered = 1), 0, 'the stale timer was deleted');
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id = :'r5' AND entered = 2), 2, 'the current entry''s timers stay');
SELECT pg_temp.stop_all() AS ignored \gset

-- ====================================================== cancel removes them
SELECT flowforge_test.set_clock('2030-05-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm') AS r6 \gset
SELECT flowforge.cancel_run(:'r6') AS ignored \gset
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id = :'r6'), 0, 'cancel_run deletes the machine''s timers');
SELECT flowforge_test.set_clock('2030-05-01 02:00:00+00') \gset
SELECT is(pg_temp.fired(), 0, 'nothing fires for a cancelled machine');
SELECT is(flowforge_test.machine_status(:'r6'), 'cancelled', 'it stays cancelled');

-- ====================================================== a timer into an action state
SELECT flowforge_test.set_clock('2030-06-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm_act') AS r7 \gset
SELECT flowforge_test.set_clock('2030-06-01 00:05:00+00') \gset
SELECT is(pg_temp.fired(), 1, 'the timer fires');
SELECT results_eq(format($$SELECT m.state::text, m.suspended, w.task_name::text, w.status::text, w.payload
                           FROM flowforge.machine_run m JOIN flowforge.work_item w ON w.id = m.action_item_id WHERE m.run_id = %L$$, :'r7'),
    $$VALUES ('work', true, 'tm_task', 'pending', '{"state": "work", "context": {}}'::jsonb)$$,
    'into an action state: its action is queued and the machine suspended, in the tick''s transaction');
SELECT pg_temp.stop_all() AS ignored \gset

-- ====================================================== tick(engine_id): only the organizations it serves
SELECT flowforge_test.set_clock('2030-07-01 00:00:00+00') \gset
SELECT flowforge.start_run('tm') AS r8 \gset
INSERT INTO flowforge.organization (slug, name) VALUES ('tm-other', 'Timer test organization');
-- Another live daemon holds the default organization (where r8 lives).
INSERT INTO flowforge.engine (organization_id, engine_id, status, generation, lease_expires_at, heartbeat_at)
VALUES ('00000000-0000-0000-0000-000000000001', 'other-daemon', 'serving', 1, '2030-07-01 02:00:00+00', '2030-07-01 00:10:00+00');
SELECT flowforge_test.set_clock('2030-07-01 00:10:00+00') \gset
SELECT flowforge.tick('me') AS t1 \gset
SELECT ok(NOT (:'t1'::jsonb -> 'serving') ? '00000000-0000-0000-0000-000000000001'
          AND (:'t1'::jsonb -> 'serving') ? (SELECT id::text FROM flowforge.organization WHERE slug = 'tm-other'),
    'setup: daemon "me" serves the other organization, not the default one');
SELECT is((:'t1'::jsonb ->> 'timers_fired')::int, 0, 'tick(engine_id) does not fire a due timer of an organization it does not serve');
SELECT is(flowforge_test.machine_state(:'r8'), 'wait', 'the machine still waits');
-- The other daemon dies: its heartbeat and lease lapse, "me" takes the default organization over.
UPDATE flowforge.engine SET heartbeat_at = '2030-07-01 00:00:00+00', lease_expires_at = '2030-07-01 00:05:00+00'
WHERE engine_id = 'other-daemon';
SELECT flowforge.tick('me') AS t2 \gset
SELECT ok((:'t2'::jsonb -> 'serving') ? '00000000-0000-0000-0000-000000000001', 'setup: now "me" serves the default organization');
SELECT is((:'t2'::jsonb ->> 'timers_fired')::int, 1, 'and its tick fires the timer');
SELECT is(flowforge_test.machine_state(:'r8'), 'late', 'the machine moved');

SELECT * FROM finish();
ROLLBACK;
