-- Machine runs: start_run, and every (machine status, operation) pair —
-- {running resting, running suspended, succeeded, failed, cancelled} x
-- {send_event, cancel_run, retry_run, get_run, run_events, list_runs} — with
-- cancel of a suspended machine (its holder refused FF004), retry (a new
-- work item, timers from now), the directory's ended_at, and the history's
-- append-only rows.
BEGIN;
SELECT plan(76);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge.define_workflow($${"name": "rm", "kind": "statemachine", "initial": "idle", "context": {"base": 1, "x": "def"},
  "states": {
    "idle": {"on": {"go": "work", "finish": "done", "poke": "idle"}, "after": [{"delay": "1 hour", "target": "done"}]},
    "work": {"action": {"task": "rm_task", "queue": "rm_q", "max_attempts": 1}, "on_done": "idle"},
    "done": {"final": true}}}$$) AS rm \gset
SELECT flowforge.define_workflow('{"name": "rm_instant", "kind": "statemachine", "initial": "done", "context": {"a": 1},
                                   "states": {"done": {"final": true}}}') AS instant \gset
SELECT flowforge.define_workflow($${"name": "rm_busy", "kind": "statemachine", "initial": "work",
  "states": {"work": {"action": {"task": "rm_busy_task", "queue": "rm_q"}, "on_done": "done"}, "done": {"final": true}}}$$) AS busy \gset

-- ==================================================================== start_run
SELECT flowforge.start_run(workflow => 'rm', input => '{"x": "in", "y": 2}') AS r0 \gset
SELECT results_eq(
    format($$SELECT definition_id, state::text, status::text, live, suspended, context, input, transitions, history_length,
                    started_at, finished_at, failure, reason
             FROM flowforge.machine_run WHERE run_id = %L$$, :'r0'),
    format($$VALUES (%L::uuid, 'idle', 'running', true, false, '{"base": 1, "x": "in", "y": 2}'::jsonb, '{"x": "in", "y": 2}'::jsonb,
                     1::bigint, 1::bigint, '2030-01-01 00:00:00+00'::timestamptz, NULL::timestamptz, NULL::text, NULL::text)$$, :'rm'),
    'start_run: in initial, running and live, context = the definition''s context || the input (the input''s keys win)');
SELECT results_eq(format($$SELECT n, cause::text, outcome::text, event, from_state, to_state::text, created_at
                           FROM flowforge.machine_transition WHERE run_id = %L$$, :'r0'),
    $$VALUES (1::bigint, 'start', 'entered', NULL::varchar, NULL::varchar, 'idle', '2030-01-01 00:00:00+00'::timestamptz)$$,
    'history entry 1: initial entered, cause start');
SELECT results_eq(format($$SELECT kind, detail ->> 'initial' FROM flowforge.run_events(%L) ORDER BY seq$$, :'r0'),
    $$VALUES ('run_started', 'idle'), ('state_entered', NULL)$$, 'events run_started (naming initial) and state_entered');
SELECT results_eq(format($$SELECT target::text, entered, fire_at FROM flowforge.machine_timer WHERE run_id = %L$$, :'r0'),
    $$VALUES ('done', 1::bigint, '2030-01-01 01:00:00+00'::timestamptz)$$, 'initial''s timer is set from the start');
SELECT results_eq(format($$SELECT engine_kind::text, definition_id, ended_at FROM flowforge.engine_run WHERE run_id = %L$$, :'r0'),
    format($$VALUES ('statemachine', %L::uuid, NULL::timestamptz)$$, :'rm'), 'the run is in the directory, live');

SELECT flowforge.start_run('rm_busy') AS rb \gset
SELECT results_eq(format($$SELECT state::text, suspended, (SELECT count(*)::int FROM flowforge.work_item w WHERE w.run_id = m.run_id)
                           FROM flowforge.machine_run m WHERE run_id = %L$$, :'rb'),
    $$VALUES ('work', true, 1)$$, 'an initial action state: its action runs at start (one work item, suspended)');

SELECT flowforge.start_run('rm_instant', '{"b": 2}') AS ri \gset
SELECT results_eq(format($$SELECT state::text, status::text, live, suspended, reason, finished_at, context FROM flowforge.machine_run
                           WHERE run_id = %L$$, :'ri'),
    $$VALUES ('done', 'succeeded', false, false, 'reached final state "done"', '2030-01-01 00:00:00+00'::timestamptz,
              '{"a": 1, "b": 2}'::jsonb)$$,
    'an initial final state: the run ends at once, succeeded');
SELECT results_eq(format($$SELECT kind FROM flowforge.run_events(%L) ORDER BY seq$$, :'ri'),
    $$VALUES ('run_started'), ('state_entered'), ('run_succeeded')$$, 'started, entered, succeeded');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'ri'), '2030-01-01 00:00:00+00'::timestamptz,
    'its directory row is ended');

-- ================================================================== the subjects
-- One run per status, reached through the API. A suspended one's action is held.
CREATE TEMP TABLE held (run uuid, item uuid, token bigint);
CREATE FUNCTION pg_temp.make_run(p_status text) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := flowforge.start_run('rm');
    v_claimed record;
BEGIN
    CASE p_status
        WHEN 'resting' THEN NULL;
        WHEN 'suspended' THEN
            PERFORM flowforge.send_event(v_run, 'go');
            SELECT * INTO v_claimed FROM flowforge_test.claim_action(v_run, 'holder');
            INSERT INTO held VALUES (v_run, v_claimed.work_item_id, v_claimed.fencing_token);
        WHEN 'succeeded' THEN PERFORM flowforge.send_event(v_run, 'finish');
        WHEN 'failed' THEN
            PERFORM flowforge.send_event(v_run, 'go');
            PERFORM flowforge_test.fail_action(v_run, 'broken');
        WHEN 'cancelled' THEN PERFORM flowforge.cancel_run(v_run, 'matrix');
    END CASE;
    RETURN v_run;
END;
$$;
CREATE TEMP TABLE subject AS
SELECT s.status, pg_temp.make_run(s.status) AS run
FROM (VALUES ('resting'), ('suspended'), ('succeeded'), ('failed'), ('cancelled')) s(status);
SELECT set_eq($$SELECT s.status, m.status::text AS run_status, m.live, m.suspended FROM subject s JOIN flowforge.machine_run m ON m.run_id = s.run$$,
    $$VALUES ('resting', 'running', true, false), ('suspended', 'running', true, true), ('succeeded', 'succeeded', false, false),
             ('failed', 'failed', false, false), ('cancelled', 'cancelled', false, false)$$,
    'setup: one machine in each status (live and suspended as the status says)');
CREATE FUNCTION pg_temp.run_of(p_status text) RETURNS uuid LANGUAGE sql AS $$ SELECT run FROM subject WHERE status = p_status $$;
SELECT pg_temp.run_of('resting') AS resting, pg_temp.run_of('suspended') AS suspended, pg_temp.run_of('succeeded') AS succeeded,
       pg_temp.run_of('failed') AS failed, pg_temp.run_of('cancelled') AS cancelled \gset
SELECT flowforge_test.advance_clock('10 minutes') \gset

-- ================================================================ x get_run
SELECT results_eq(
    $$SELECT s.status, g ->> 'kind', g ->> 'state', g ->> 'machine_state', (g ->> 'live')::boolean, (g ->> 'suspended')::boolean,
             g ->> 'reason', g ->> 'failure', (g ->> 'ended_at') IS NOT NULL
      FROM subject s CROSS JOIN LATERAL flowforge.get_run(s.run) g ORDER BY s.status$$,
    $$VALUES ('cancelled', 'statemachine', 'cancelled', 'idle', false, false, 'matrix', NULL, true),
             ('failed', 'statemachine', 'failed', 'work', false, false, 'action "rm_task" of state "work" failed after 1 attempt(s)', 'broken', true),
             ('resting', 'statemachine', 'running', 'idle', true, false, NULL, NULL, false),
             ('succeeded', 'statemachine', 'succeeded', 'done', false, false, 'reached final state "done"', NULL, true),
             ('suspended', 'statemachine', 'running', 'work', true, true, NULL, NULL, false)$$,
    'get_run x every status: kind, state (the status), machine_state, live, suspended, reason, failure, ended_at');
SELECT flowforge.send_event(:'suspended', 'poke', '{"p": 1}', 'poke-1') ->> 'outcome' AS ignored \gset
SELECT results_eq(format($$SELECT g -> 'context', g -> 'history' -> 0 ->> 'cause', g -> 'history' -> 1 ->> 'event',
                                  jsonb_array_length(g -> 'history'), (g ->> 'history_length')::int, (g ->> 'transitions')::int,
                                  (g -> 'queued' -> 0) - 'received_at', jsonb_array_length(g -> 'timers'),
                                  g -> 'items' -> 0 ->> 'task', g -> 'items' -> 0 ->> 'status', g -> 'items' -> 0 ->> 'agent',
                                  g ->> 'action_item_id' = g -> 'items' -> 0 ->> 'id'
                           FROM flowforge.get_run(%L) g$$, :'suspended'),
    $$VALUES ('{"base": 1, "x": "def"}'::jsonb, 'start', 'go', 2, 2, 2,
              '{"seq": 1, "event": "poke", "event_id": "poke-1", "payload": {"p": 1}}'::jsonb, 0,
              'rm_task', 'dispatched', 'holder', true)$$,
    'get_run of a suspended machine: context, history (oldest first), counters, the queued event, no timers, its action item');
SELECT results_eq(format($$SELECT g -> 'timers', (g -> 'history' -> 0) - 'at', g -> 'queued', g -> 'items' FROM flowforge.get_run(%L) g$$, :'resting'),
    $$VALUES ('[{"target": "done", "delay": "01:00:00", "fire_at": "2030-01-01T01:00:00+00:00"}]'::jsonb,
              '{"n": 1, "cause": "start", "outcome": "entered", "to": "idle"}'::jsonb, '[]'::jsonb, '[]'::jsonb)$$,
    'get_run of a resting machine: its pending timer, a history entry as the seed shows it, nothing queued, no items');

-- ================================================================ x run_events
SELECT results_eq(
    $$SELECT s.status, string_agg(e.kind, ',' ORDER BY e.seq) FILTER (WHERE e.work_item_id IS NULL)
      FROM subject s CROSS JOIN LATERAL flowforge.run_events(s.run) e GROUP BY s.status ORDER BY s.status$$,
    $$VALUES ('cancelled', 'run_started,state_entered,machine_stopped,run_cancelled'),
             ('failed', 'run_started,state_entered,state_entered,machine_stopped,run_failed'),
             ('resting', 'run_started,state_entered'),
             ('succeeded', 'run_started,state_entered,state_entered,run_succeeded'),
             ('suspended', 'run_started,state_entered,state_entered')$$,
    'run_events x every status: the run-level history (state_entered per entry, machine_stopped for a stop, run_<status>)');
SELECT results_eq(format($$SELECT kind, task_key FROM flowforge.run_events(%L) WHERE work_item_id IS NOT NULL ORDER BY seq$$, :'failed'),
    $$VALUES ('created', 'rm_task'), ('claimed', 'rm_task'), ('failed', 'rm_task')$$,
    'and the action item''s own events, under its task name');

-- ================================================================ x list_runs
SELECT results_eq(
    $$SELECT s.status, l.kind, l.state, l.workflow_name, l.tasks_total, l.finished_at IS NOT NULL
      FROM subject s JOIN flowforge.list_runs('rm', max_rows => 100) l ON l.id = s.run ORDER BY s.status$$,
    $$VALUES ('cancelled', 'statemachine', 'cancelled', 'rm', NULL::int, true), ('failed', 'statemachine', 'failed', 'rm', NULL, true),
             ('resting', 'statemachine', 'running', 'rm', NULL, false), ('succeeded', 'statemachine', 'succeeded', 'rm', NULL, true),
             ('suspended', 'statemachine', 'running', 'rm', NULL, false)$$,
    'list_runs x every status: kind statemachine, state = the status, no DAG counters');
SELECT set_eq($$SELECT id FROM flowforge.list_runs('rm', 'failed')$$, format('VALUES (%L::uuid)', :'failed'),
    'list_runs(with_state => failed) finds the failed machine');
SELECT ok((SELECT count(*) FROM flowforge.list_runs(with_state => 'running', max_rows => 1000) l WHERE l.id IN (:'resting', :'suspended')) = 2,
    'list_runs(with_state => running) has the resting and the suspended one');

-- ================================================================ x send_event
SELECT is(flowforge.send_event(:'resting', 'poke') ->> 'outcome', 'applied', 'resting x send_event: applied');
SELECT is(flowforge.send_event(:'suspended', 'finish') ->> 'outcome', 'queued', 'suspended x send_event: queued');
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'poke')$$, :'succeeded'), 'FF012', NULL, 'succeeded x send_event: FF012');
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'poke')$$, :'failed'), 'FF012', NULL, 'failed x send_event: FF012');
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'poke')$$, :'cancelled'), 'FF012', NULL, 'cancelled x send_event: FF012');

-- ================================================================ x retry_run (refused)
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'resting'), 'FF005',
    format('retry_run refused: run %s is running', :'resting'), 'resting x retry_run: FF005');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'suspended'), 'FF005', NULL, 'suspended x retry_run: FF005');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'succeeded'), 'FF005',
    format('retry_run refused: run %s is succeeded', :'succeeded'), 'succeeded x retry_run: FF005 (a final state is not retried)');

-- ================================================================ x cancel_run (refused)
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, :'succeeded'), 'FF005',
    format('cancel_run refused: run %s is already succeeded', :'succeeded'), 'succeeded x cancel_run: FF005');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, :'failed'), 'FF005', NULL, 'failed x cancel_run: FF005');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, :'cancelled'), 'FF005',
    format('cancel_run refused: run %s is already cancelled', :'cancelled'), 'cancelled x cancel_run: FF005 (cancelling twice)');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, gen_random_uuid()), 'FF001', NULL, 'cancel_run of an unknown run: FF001');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, gen_random_uuid()), 'FF001', NULL, 'retry_run of an unknown run: FF001');
SELECT throws_ok(format($$SELECT flowforge.get_run(%L)$$, gen_random_uuid()), 'FF001', NULL, 'get_run of an unknown run: FF001');

-- ================================================================ resting x cancel_run
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'not needed')$$, :'resting'), 'resting x cancel_run');
SELECT results_eq(format($$SELECT status::text, state::text, live, reason, finished_at FROM flowforge.machine_run WHERE run_id = %L$$, :'resting'),
    $$VALUES ('cancelled', 'idle', false, 'not needed', '2030-01-01 00:11:00+00'::timestamptz)$$,
    'cancelled in the state it rested in, with the reason and the time');
SELECT is((SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id = :'resting'), 0, 'its timers are gone');
SELECT results_eq(format($$SELECT cause::text, outcome::text, from_state::text, to_state, detail FROM flowforge.machine_transition
                           WHERE run_id = %L ORDER BY n DESC LIMIT 1$$, :'resting'),
    $$VALUES ('cancel', 'stopped', 'idle', NULL::varchar, '{"status": "cancelled", "reason": "not needed"}'::jsonb)$$,
    'a stopped entry in the history');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'resting'), '2030-01-01 00:11:00+00'::timestamptz,
    'the directory row is ended');
SELECT throws_ok(format($$SELECT flowforge.cancel_run(%L)$$, :'resting'), 'FF005', NULL, 'cancelling it again: FF005');

-- ============================================================= suspended x cancel_run
SELECT item AS sitem, token AS stoken FROM held WHERE run = :'suspended' \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'stop the truck')$$, :'suspended'), 'suspended x cancel_run');
SELECT results_eq(format($$SELECT status::text, state::text, live, suspended, action_item_id FROM flowforge.machine_run WHERE run_id = %L$$, :'suspended'),
    $$VALUES ('cancelled', 'work', false, false, NULL::uuid)$$, 'the machine is cancelled, no longer suspended');
SELECT results_eq(format($$SELECT status::text, fencing_token, lease_expires_at FROM flowforge.work_item WHERE id = %L$$, :'sitem'),
    format($$VALUES ('cancelled', %s::bigint, NULL::timestamptz)$$, :'stoken'::bigint + 1),
    'its action''s work item is cancelled, the fencing token moved on');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'sitem', :'stoken'), 'FF004', NULL,
    'the holder''s complete_work after cancel: FF004');
SELECT throws_ok(format($$SELECT flowforge.heartbeat_work(%L, %s)$$, :'sitem', :'stoken'), 'FF004', NULL,
    'the holder''s heartbeat_work after cancel: FF004');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, %s, 'late')$$, :'sitem', :'stoken'), 'FF004', NULL,
    'the holder''s fail_work after cancel: FF004');
SELECT is(flowforge_test.history_of(:'suspended'),
    E'1 start entered - -->idle\n2 event entered go idle->work\n3 cancel stopped - work->-\n'
    '4 event refused poke work->-\n5 event refused finish work->-',
    'the history: stopped, then the two queued events refused');
SELECT results_eq(format($$SELECT detail ->> 'reason' FROM flowforge.machine_transition WHERE run_id = %L AND outcome = 'refused' ORDER BY n$$, :'suspended'),
    $$VALUES ('the run cancelled'), ('the run cancelled')$$, 'refused because the run was cancelled');
SELECT results_eq(format($$SELECT kind, from_state, to_state FROM flowforge.run_events(%L) WHERE kind IN ('cancelled', 'run_cancelled') ORDER BY seq$$, :'suspended'),
    $$VALUES ('cancelled', 'dispatched', 'cancelled'), ('run_cancelled', 'running', 'cancelled')$$,
    'events: the item cancelled from dispatched, the run cancelled');
SELECT is(flowforge.send_event(:'suspended', 'poke', '{}', 'poke-1') ->> 'outcome', 'duplicate',
    'the refused queued event''s id is still a duplicate');

-- =============================================================== failed x retry_run
SELECT (SELECT w.id FROM flowforge.work_item w WHERE w.run_id = :'failed') AS old_item \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'failed'), 'failed x retry_run');
SELECT results_eq(format($$SELECT status::text, state::text, live, suspended, failure, reason, finished_at FROM flowforge.machine_run WHERE run_id = %L$$, :'failed'),
    $$VALUES ('running', 'work', true, true, NULL::text, NULL::text, NULL::timestamptz)$$,
    'running again, in the state it failed in, suspended on its action; failure and reason cleared');
SELECT results_eq(format($$SELECT id <> %L, status::text, retry_count, max_retries, created_at FROM flowforge.work_item
                           WHERE id = (SELECT action_item_id FROM flowforge.machine_run WHERE run_id = %L)$$, :'old_item', :'failed'),
    $$VALUES (true, 'pending', 0, 0, '2030-01-01 00:11:00+00'::timestamptz)$$,
    'the action runs again as a new work item with a fresh attempt budget');
SELECT is((SELECT status::text FROM flowforge.work_item WHERE id = :'old_item'), 'failed', 'the old item stays failed');
SELECT results_eq(format($$SELECT cause::text, outcome::text, from_state::text, to_state::text, detail FROM flowforge.machine_transition
                           WHERE run_id = %L ORDER BY n DESC LIMIT 1$$, :'failed'),
    $$VALUES ('retry', 'entered', 'work', 'work', '{"was": "failed"}'::jsonb)$$, 'history: the state re-entered, cause retry');
SELECT results_eq(format($$SELECT kind, from_state, to_state, detail ->> 'state' FROM flowforge.run_events(%L) WHERE kind = 'run_retried'$$, :'failed'),
    $$VALUES ('run_retried', 'failed', 'running', 'work')$$, 'event run_retried');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'failed'), NULL, 'the directory row is live again (ended_at cleared)');
SELECT is((flowforge.resolve_run(:'failed') ->> 'engine_kind'), 'statemachine', 'resolve_run: a statemachine run');
SELECT flowforge_test.finish_action(:'failed', '{"fixed": true}') AS ignored \gset
SELECT results_eq(format($$SELECT status::text, state::text, context -> 'fixed' FROM flowforge.machine_run WHERE run_id = %L$$, :'failed'),
    $$VALUES ('running', 'idle', 'true'::jsonb)$$, 'the retried action completes and the machine goes on');
SELECT throws_ok(format($$SELECT flowforge.retry_run(%L)$$, :'failed'), 'FF005', NULL, 'retrying it while running again: FF005');

-- ============================================================ cancelled x retry_run
SELECT flowforge_test.advance_clock('5 minutes') \gset
SELECT transitions AS ctrans FROM flowforge.machine_run WHERE run_id = :'cancelled' \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'cancelled'), 'cancelled x retry_run (it rested)');
SELECT results_eq(format($$SELECT status::text, state::text, live, suspended, reason, transitions FROM flowforge.machine_run WHERE run_id = %L$$, :'cancelled'),
    format($$VALUES ('running', 'idle', true, false, NULL::text, %s::bigint)$$, :'ctrans'::bigint + 1),
    'running again, resting in the state it was cancelled in (entered again: transitions + 1)');
SELECT results_eq(format($$SELECT target::text, entered, fire_at FROM flowforge.machine_timer WHERE run_id = %L$$, :'cancelled'),
    format($$VALUES ('done', %s::bigint, '2030-01-01 01:16:00+00'::timestamptz)$$, :'ctrans'::bigint + 1),
    'its timer starts again from the retry (now + 1 hour), stamped with the new entry');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'cancelled'), NULL, 'the directory row is live again');
SELECT is(flowforge.send_event(:'cancelled', 'finish') ->> 'state', 'done', 'and it takes events again');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'cancelled'), '2030-01-01 00:16:00+00'::timestamptz,
    'its second end is recorded in the directory');

-- A machine cancelled while suspended, retried: its action runs again.
SELECT flowforge.start_run('rm') AS rcs \gset
SELECT flowforge.send_event(:'rcs', 'go') ->> 'state' AS ignored \gset
SELECT flowforge_test.action_item(:'rcs') AS rcs_item \gset
SELECT flowforge.cancel_run(:'rcs') AS ignored \gset
SELECT is((SELECT status::text FROM flowforge.work_item WHERE id = :'rcs_item'), 'cancelled', 'setup: a pending action cancelled');
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rcs'), 'retry_run of a machine cancelled while suspended');
SELECT results_eq(format($$SELECT state::text, suspended, action_item_id <> %L FROM flowforge.machine_run WHERE run_id = %L$$, :'rcs_item', :'rcs'),
    $$VALUES ('work', true, true)$$, 'it is suspended on a new work item for the same action');
SELECT results_eq(format($$SELECT detail FROM flowforge.machine_transition WHERE run_id = %L ORDER BY n DESC LIMIT 1$$, :'rcs'),
    $$VALUES ('{"was": "cancelled"}'::jsonb)$$, 'the retry entry says it was cancelled');

-- ================================================================ the history is append-only
SELECT throws_ok(format($$UPDATE flowforge.machine_transition SET to_state = 'done' WHERE run_id = %L$$, :'r0'), 'FF011', NULL,
    'UPDATE of machine_transition: FF011');
SELECT throws_ok(format($$DELETE FROM flowforge.machine_transition WHERE run_id = %L$$, :'r0'), 'FF011', NULL,
    'DELETE of machine_transition: FF011');
SELECT throws_ok($$TRUNCATE flowforge.machine_transition$$, 'FF011', NULL, 'TRUNCATE of machine_transition: FF011');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id = :'r0'), 1, 'the rows are still there');

-- ================================================================ idempotency keys
SELECT flowforge.start_run('rm', '{"k": 1}', 'rm-key-1') AS rk \gset
SELECT is(flowforge.start_run('rm', '{"k": 1}', 'rm-key-1'), :'rk'::uuid, 'the same key and input: the first machine''s id');
SELECT is((SELECT count(*)::int FROM flowforge.machine_run WHERE idempotency_key = 'rm-key-1'), 1, 'one machine for the key');
SELECT throws_ok($$SELECT flowforge.start_run('rm', '{"k": 2}', 'rm-key-1')$$, 'FF006', NULL, 'the same key, another input: FF006');
-- The key's row must survive the commit: its foreign key is checked then (made immediate here).
-- (It referenced workflow_run, DAG runs only, until 0018 pointed it at the run directory.)
SELECT lives_ok($$SET CONSTRAINTS flowforge.idempotency_key_run_fkey IMMEDIATE$$,
    'a machine started with an idempotency key passes the key''s foreign key check (as at commit)');

SELECT * FROM finish();
ROLLBACK;
