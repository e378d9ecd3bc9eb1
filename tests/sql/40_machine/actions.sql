-- Actions: entering an action state queues one work item and suspends the
-- machine; the item's end (complete_work, the last fail_work, the reaper)
-- takes on_done / on_error (or fails the run) and then applies the events
-- that were queued meanwhile, in arrival order.
BEGIN;
SELECT plan(67);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge.define_workflow($${"name": "act", "kind": "statemachine", "initial": "idle", "context": {"n": 0, "pings": 0},
  "states": {
    "idle":    {"on": {"go": "work", "early": "idle"}},
    "work":    {"action": {"task": "pack", "queue": "act_q", "priority": 3, "max_attempts": 2, "backoff": "5 seconds"},
                "on_done": "rest", "on_error": "trouble"},
    "rest":    {"on": {"ping": [{"target": "rest", "assign": {"pings": "$.context.pings + 1", "last": "$.event.i"}}],
                       "again": "work2", "finish": "done"}},
    "work2":   {"action": {"task": "repack", "queue": "act_q"}, "on_done": "rest"},
    "trouble": {"on": {"finish": "done"}},
    "done":    {"final": true}}}$$) AS act \gset
SELECT flowforge.define_workflow($${"name": "act_fatal", "kind": "statemachine", "initial": "idle",
  "states": {"idle": {"on": {"go": "work"}},
             "work": {"action": {"task": "pack_fatal", "queue": "act_q", "max_attempts": 1}, "on_done": "done"},
             "done": {"final": true}}}$$) \gset
SELECT flowforge.define_workflow($${"name": "act_final", "kind": "statemachine", "initial": "work",
  "states": {"work": {"action": {"task": "pack_final", "queue": "act_q"}, "on_done": "done", "on_error": "idle"},
             "idle": {"on": {"go": "work"}},
             "done": {"final": true}}}$$) \gset

-- ============================================================ entering an action state
SELECT flowforge.start_run('act', '{"order": 7}') AS r \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(flowforge.send_event(:'r', 'go') ->> 'suspended', 'true', 'entering the action state suspends the machine');
SELECT flowforge_test.action_item(:'r') AS item \gset
SELECT results_eq(
    format($$SELECT engine_kind::text, task_name::text, queue::text, priority, max_retries, status::text, payload, run_id,
                    next_attempt_at, backoff
             FROM flowforge.work_item WHERE run_id = %L$$, :'r'),
    format($$VALUES ('statemachine', 'pack', 'act_q', 3, 1, 'pending',
                     '{"state": "work", "context": {"n": 0, "pings": 0, "order": 7}}'::jsonb, %L::uuid,
                     '2030-01-01 00:00:01+00'::timestamptz, interval '5 seconds')$$, :'r'),
    'one work item: engine statemachine, the action''s task name, payload {state, context}, its queue, priority, '
    'retries (max_attempts - 1) and backoff, ready now');
SELECT is((SELECT task_id FROM flowforge.work_item WHERE id = :'item'),
          (SELECT t.id FROM flowforge.task t WHERE t.workflow_id = :'act' AND t.key = 'work'),
    'the item belongs to the state''s task row');
SELECT results_eq(format($$SELECT kind, task_key, to_state FROM flowforge.run_events(%L) WHERE work_item_id IS NOT NULL$$, :'r'),
    $$VALUES ('created', 'pack', 'pending')$$, 'event created for the item, under its task name');
SELECT is(flowforge.send_event(:'r', 'ping', '{"i": 1}') ->> 'outcome', 'queued', 'while it runs, events are queued');

-- claim_work, as a worker of the machine engine only.
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(queues => ARRAY['act_q'], agent => 'graph-agent',
                                                           engine_kinds => ARRAY['graph'])),
    0, 'a worker of another engine is not given the action');
SELECT * FROM flowforge.claim_work(queues => ARRAY['act_q'], agent => 'm-agent', lease => '30 seconds', batch => 5,
                                   engine_kinds => ARRAY['statemachine']) \gset c_
SELECT results_eq(format($$SELECT %L::uuid, %L::uuid, %L::text, %L::text, %s, %L::jsonb$$, :'c_work_item_id', :'c_run_id',
                         :'c_engine_kind', :'c_task_name', :'c_attempt', :'c_payload'),
    format($$VALUES (%L::uuid, %L::uuid, 'statemachine', 'pack', 1, '{"state": "work", "context": {"n": 0, "pings": 0, "order": 7}}'::jsonb)$$,
           :'item', :'r'),
    'claim_work(engine_kinds => ARRAY[''statemachine'']) returns the action: its run, engine, task, attempt 1, payload');
SELECT isnt(flowforge.heartbeat_work(:'c_work_item_id', :'c_fencing_token', '1 minute'), NULL, 'the holder can heartbeat it');
SELECT is(flowforge_test.machine_state(:'r'), 'work', 'a claimed action keeps the machine where it is');

-- complete_work: an object output is merged into the context, then on_done, then the queue.
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge.complete_work(%L, %s, '{"n": 5, "box": "B-1"}')$$, :'c_work_item_id', :'c_fencing_token'),
    'complete_work of the action');
SELECT results_eq(format($$SELECT state::text, suspended, action_item_id, context FROM flowforge.machine_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('rest', false, NULL::uuid, '{"n": 5, "box": "B-1", "pings": 1, "last": 1, "order": 7}'::jsonb)$$,
    'the output''s keys merged into the context (n replaced), on_done entered, the queued ping applied');
SELECT results_eq(format($$SELECT n, cause::text, outcome::text, event::text, from_state::text, to_state::text, detail
                           FROM flowforge.machine_transition WHERE run_id = %L AND n >= 3 ORDER BY n$$, :'r'),
    format($$VALUES (3::bigint, 'action_done', 'entered', NULL, 'work', 'rest',
                     jsonb_build_object('work_item_id', %L::uuid, 'task', 'pack', 'attempts', 1)),
                    (4, 'event', 'entered', 'ping', 'rest', 'rest',
                     '{"candidate": 1, "queued": true, "received_at": "2030-01-01T00:00:01+00:00"}'::jsonb)$$, :'item'),
    'history: on_done entered by action_done (item, task, attempts), then the queued event, marked queued with its arrival');
SELECT is((SELECT status::text FROM flowforge.work_item WHERE id = :'item'), 'completed', 'the item is completed');

-- Outputs that are not objects.
CREATE FUNCTION pg_temp.done_with(p_output jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := flowforge.start_run('act');
BEGIN
    PERFORM flowforge.send_event(v_run, 'go');
    PERFORM flowforge_test.finish_action(v_run, p_output);
    RETURN (SELECT jsonb_build_object('state', m.state, 'context', m.context) FROM flowforge.machine_run m WHERE m.run_id = v_run);
END;
$$;
SELECT is(pg_temp.done_with('"box-7"'), '{"state": "rest", "context": {"n": 0, "pings": 0, "work": "box-7"}}'::jsonb,
    'a string output is stored under the state''s name');
SELECT is(pg_temp.done_with('[1, 2]'), '{"state": "rest", "context": {"n": 0, "pings": 0, "work": [1, 2]}}'::jsonb,
    'a list output too');
SELECT is(pg_temp.done_with('42'), '{"state": "rest", "context": {"n": 0, "pings": 0, "work": 42}}'::jsonb, 'a number too');
SELECT is(pg_temp.done_with(NULL), '{"state": "rest", "context": {"n": 0, "pings": 0}}'::jsonb,
    'no output: the context is unchanged, on_done still taken');
SELECT is(pg_temp.done_with('{}'), '{"state": "rest", "context": {"n": 0, "pings": 0}}'::jsonb, 'an empty object adds nothing');

-- ============================================================ failures and retries
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.start_run('act') AS rf \gset
SELECT flowforge.send_event(:'rf', 'go') ->> 'state' AS ignored \gset
SELECT flowforge_test.action_item(:'rf') AS fitem \gset
SELECT work_item_id AS f1, fencing_token AS ftok1 FROM flowforge_test.claim_action(:'rf') \gset
SELECT lives_ok(format($$SELECT flowforge.fail_work(%L, %s, 'printer jam')$$, :'f1', :'ftok1'), 'fail_work with a retry left');
SELECT results_eq(format($$SELECT status::text, retry_count, next_attempt_at, error FROM flowforge.work_item WHERE id = %L$$, :'fitem'),
    $$VALUES ('pending', 1, '2030-01-02 00:00:05+00'::timestamptz, 'printer jam')$$,
    'the item is pending again after its backoff, attempt 2 to come');
SELECT results_eq(format($$SELECT state::text, status::text, suspended, action_item_id FROM flowforge.machine_run WHERE run_id = %L$$, :'rf'),
    format($$VALUES ('work', 'running', true, %L::uuid)$$, :'fitem'),
    'a retried attempt leaves the machine suspended on the same item');
SELECT is(flowforge.send_event(:'rf', 'ping', '{"i": 9}') ->> 'outcome', 'queued', 'events still queue meanwhile');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['act_q'], 'early-bird', engine_kinds => ARRAY['statemachine'])), 0,
    'nobody gets it before the backoff ends');
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT work_item_id AS f2, fencing_token AS ftok2, attempt AS fatt2 FROM flowforge_test.claim_action(:'rf') \gset
SELECT is(:'fatt2'::int, 2, 'after the backoff, attempt 2 is claimed');
SELECT lives_ok(format($$SELECT flowforge.fail_work(%L, %s, 'printer on fire')$$, :'f2', :'ftok2'), 'the last attempt fails');
SELECT results_eq(format($$SELECT state::text, status::text, live, suspended, failure FROM flowforge.machine_run WHERE run_id = %L$$, :'rf'),
    $$VALUES ('trouble', 'running', true, false, NULL::text)$$,
    'retries exhausted: on_error entered, the machine goes on');
SELECT results_eq(format($$SELECT cause::text, outcome::text, from_state::text, to_state::text, detail FROM flowforge.machine_transition
                           WHERE run_id = %L AND n = 3$$, :'rf'),
    format($$VALUES ('action_error', 'entered', 'work', 'trouble',
                     jsonb_build_object('work_item_id', %L::uuid, 'task', 'pack', 'attempts', 2, 'error', 'printer on fire'))$$, :'fitem'),
    'the history entry of on_error carries the error and the attempts');
SELECT results_eq(format($$SELECT n, outcome::text, event::text, detail ->> 'reason', (detail ->> 'queued')::boolean
                           FROM flowforge.machine_transition WHERE run_id = %L AND n = 4$$, :'rf'),
    $$VALUES (4::bigint, 'refused', 'ping',
              'state "trouble" has no transition for event "ping" (it accepts: finish)', true)$$,
    'the event queued meanwhile is refused by the state on_error led to (recorded, not raised)');
SELECT is((SELECT status::text FROM flowforge.work_item WHERE id = :'fitem'), 'failed', 'the item failed for good');

-- fail_work retryable => false: no retry, whatever is left.
SELECT flowforge.start_run('act') AS rnr \gset
SELECT flowforge.send_event(:'rnr', 'go') ->> 'state' AS ignored \gset
SELECT work_item_id AS nr, fencing_token AS nrtok FROM flowforge_test.claim_action(:'rnr') \gset
SELECT flowforge.fail_work(:'nr', :'nrtok', 'bad address', retryable => false) AS ignored \gset
SELECT is(flowforge_test.machine_state(:'rnr'), 'trouble', 'a non-retryable failure takes on_error at once, a retry left or not');

-- Without on_error the run fails, the error in failure and a reason naming the action and state.
SELECT flowforge.start_run('act_fatal') AS rx \gset
SELECT flowforge.send_event(:'rx', 'go') ->> 'state' AS ignored \gset
SELECT flowforge_test.advance_clock('3 seconds') \gset
SELECT flowforge_test.fail_action(:'rx', 'the truck is gone') AS ignored \gset
SELECT results_eq(format($$SELECT state::text, status::text, live, suspended, failure, reason, finished_at FROM flowforge.machine_run
                           WHERE run_id = %L$$, :'rx'),
    $$VALUES ('work', 'failed', false, false, 'the truck is gone',
              'action "pack_fatal" of state "work" failed after 1 attempt(s)', '2030-01-02 00:00:08+00'::timestamptz)$$,
    'no on_error: the run failed, failure = the error, reason naming the action and the state');
SELECT results_eq(format($$SELECT cause::text, outcome::text, from_state::text, to_state::text, detail FROM flowforge.machine_transition
                           WHERE run_id = %L ORDER BY n DESC LIMIT 1$$, :'rx'),
    $$VALUES ('action_error', 'stopped', 'work', NULL::text,
              '{"status": "failed", "reason": "action \"pack_fatal\" of state \"work\" failed after 1 attempt(s)", "failure": "the truck is gone"}'::jsonb)$$,
    'the history ends with a stopped entry');
SELECT results_eq(format($$SELECT kind, from_state, to_state, detail FROM flowforge.run_events(%L) WHERE kind IN ('machine_stopped', 'run_failed') ORDER BY seq$$, :'rx'),
    $$VALUES ('machine_stopped', 'work', 'work',
              '{"n": 3, "cause": "action_error", "status": "failed", "reason": "action \"pack_fatal\" of state \"work\" failed after 1 attempt(s)", "failure": "the truck is gone"}'::jsonb),
             ('run_failed', 'running', 'failed',
              '{"error": "the truck is gone", "state": "work", "reason": "action \"pack_fatal\" of state \"work\" failed after 1 attempt(s)"}'::jsonb)$$,
    'run_events: machine_stopped, then run_failed with the error');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'rx'), '2030-01-02 00:00:08+00'::timestamptz,
    'the directory row records the end');

-- ============================================================ the reaper
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.start_run('act') AS rr \gset
SELECT flowforge.send_event(:'rr', 'go') ->> 'state' AS ignored \gset
SELECT flowforge_test.action_item(:'rr') AS ritem \gset
SELECT work_item_id AS rr1, fencing_token AS rrtok1 FROM flowforge_test.claim_action(:'rr', 'slow-agent', '10 seconds') \gset
SELECT flowforge_test.advance_clock('10 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 0, 'nothing is reaped at the instant the lease ends');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 1, 'past the lease, tick() reaps the action');
SELECT results_eq(format($$SELECT status::text, retry_count, error FROM flowforge.work_item WHERE id = %L$$, :'ritem'),
    $$VALUES ('pending', 1, 'lease expired (held by slow-agent)')$$, 'the expired lease counts as a failed attempt');
SELECT results_eq(format($$SELECT state::text, suspended FROM flowforge.machine_run WHERE run_id = %L$$, :'rr'),
    $$VALUES ('work', true)$$, 'the machine is still suspended on its action');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'rr1', :'rrtok1'), 'FF004', NULL,
    'the reaped holder''s complete_work: FF004');
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT work_item_id AS rr2 FROM flowforge_test.claim_action(:'rr', 'slow-agent', '10 seconds') \gset
SELECT flowforge_test.advance_clock('11 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 1, 'the last attempt''s lease expires too');
SELECT results_eq(format($$SELECT state::text, suspended, (SELECT detail ->> 'error' FROM flowforge.machine_transition t
                                                            WHERE t.run_id = m.run_id ORDER BY n DESC LIMIT 1)
                           FROM flowforge.machine_run m WHERE run_id = %L$$, :'rr'),
    $$VALUES ('trouble', false, 'lease expired (held by slow-agent)')$$,
    'reaped with no attempt left: on_error, the reaper''s error in the history');

-- ============================================================ the queue on resume
-- Arrival order; a queued event the resumed state does not accept is refused and the machine goes on.
SELECT flowforge_test.set_clock('2030-01-04 00:00:00+00') \gset
SELECT flowforge.start_run('act') AS rq \gset
SELECT flowforge.send_event(:'rq', 'go') ->> 'state' AS ignored \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.send_event(:'rq', 'ping', '{"i": 1}', 'p-1') ->> 'outcome' AS ignored \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.send_event(:'rq', 'early', '{}', 'e-1') ->> 'outcome' AS ignored \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.send_event(:'rq', 'ping', '{"i": 2}', 'p-2') ->> 'outcome' AS ignored \gset
SELECT results_eq(format($$SELECT seq, event::text, event_id::text FROM flowforge.machine_event_queue WHERE run_id = %L ORDER BY seq$$, :'rq'),
    $$VALUES (1::bigint, 'ping', 'p-1'), (2, 'early', 'e-1'), (3, 'ping', 'p-2')$$, 'setup: three events queued in arrival order');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.finish_action(:'rq', '{}') AS ignored \gset
SELECT is(flowforge_test.history_of(:'rq'),
    E'1 start entered - -->idle\n2 event entered go idle->work\n3 action_done entered - work->rest\n'
    '4 event entered ping rest->rest\n5 event refused early rest->-\n6 event entered ping rest->rest',
    'on resume the queued events are applied in arrival order, the one rest does not accept refused in between');
SELECT results_eq(format($$SELECT event_id::text, payload, detail FROM flowforge.machine_transition WHERE run_id = %L AND n = 5$$, :'rq'),
    $$VALUES ('e-1', '{}'::jsonb, '{"reason": "state \"rest\" has no transition for event \"early\" (it accepts: again, finish, ping)",
                                   "queued": true, "received_at": "2030-01-04T00:00:02+00:00"}'::jsonb)$$,
    'the refused entry: outcome refused, detail queued true, the reason and its arrival time');
SELECT results_eq(format($$SELECT state::text, live, suspended, context -> 'pings', context -> 'last' FROM flowforge.machine_run WHERE run_id = %L$$, :'rq'),
    $$VALUES ('rest', true, false, '2'::jsonb, '2'::jsonb)$$, 'both pings applied, each once, the last one last');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_queue WHERE run_id = :'rq'), 0, 'the queue is empty');
SELECT results_eq(format($$SELECT kind, from_state, to_state, detail ->> 'event' FROM flowforge.run_events(%L)
                           WHERE kind = 'event_refused'$$, :'rq'),
    $$VALUES ('event_refused', 'rest', 'rest', 'early')$$, 'run_events has the event_refused row');
SELECT results_eq(format($$SELECT created_at FROM flowforge.machine_transition WHERE run_id = %L AND n >= 3 ORDER BY n$$, :'rq'),
    $$VALUES ('2030-01-04 00:00:04+00'::timestamptz), ('2030-01-04 00:00:04+00'), ('2030-01-04 00:00:04+00'), ('2030-01-04 00:00:04+00')$$,
    'all of it in the transaction that resumed the machine (its time)');

-- Resuming into another action state: the events after it keep waiting.
SELECT flowforge.start_run('act') AS rq2 \gset
SELECT flowforge.send_event(:'rq2', 'go') ->> 'state' AS ignored \gset
SELECT flowforge.send_event(:'rq2', 'ping', '{"i": 1}') ->> 'outcome' AS ignored \gset
SELECT flowforge.send_event(:'rq2', 'again') ->> 'outcome' AS ignored \gset
SELECT flowforge.send_event(:'rq2', 'ping', '{"i": 3}') ->> 'outcome' AS ignored \gset
SELECT flowforge.send_event(:'rq2', 'finish') ->> 'outcome' AS ignored \gset
SELECT flowforge_test.finish_action(:'rq2') AS ignored \gset
SELECT results_eq(format($$SELECT state::text, suspended, context -> 'pings' FROM flowforge.machine_run WHERE run_id = %L$$, :'rq2'),
    $$VALUES ('work2', true, '1'::jsonb)$$, 'ping applied, then again entered work2: suspended again on its action');
SELECT results_eq(format($$SELECT seq, event::text, payload FROM flowforge.machine_event_queue WHERE run_id = %L ORDER BY seq$$, :'rq2'),
    $$VALUES (3::bigint, 'ping', '{"i": 3}'::jsonb), (4, 'finish', '{}'::jsonb)$$,
    'the events after it stay queued, in order, with their sequence numbers');
SELECT is((SELECT task_name::text FROM flowforge.work_item WHERE id = flowforge_test.action_item(:'rq2')), 'repack',
    'a new work item for work2''s action');
SELECT flowforge_test.finish_action(:'rq2') AS ignored \gset
SELECT results_eq(format($$SELECT state::text, status::text, context -> 'pings', context -> 'last' FROM flowforge.machine_run WHERE run_id = %L$$, :'rq2'),
    $$VALUES ('done', 'succeeded', '2'::jsonb, '3'::jsonb)$$, 'when work2 ends, the rest apply: ping, then finish into the final state');
SELECT is(flowforge_test.history_of(:'rq2'),
    E'1 start entered - -->idle\n2 event entered go idle->work\n3 action_done entered - work->rest\n'
    '4 event entered ping rest->rest\n5 event entered again rest->work2\n6 action_done entered - work2->rest\n'
    '7 event entered ping rest->rest\n8 event entered finish rest->done',
    'every event once, in arrival order, across two resumes');

-- Entering a final state with events still queued refuses them.
SELECT flowforge.start_run('act') AS rq3 \gset
SELECT flowforge.send_event(:'rq3', 'go') ->> 'state' AS ignored \gset
SELECT flowforge.send_event(:'rq3', 'finish') ->> 'outcome' AS ignored \gset
SELECT flowforge.send_event(:'rq3', 'ping', '{"i": 1}', 'late-1') ->> 'outcome' AS ignored \gset
SELECT flowforge.send_event(:'rq3', 'again') ->> 'outcome' AS ignored \gset
SELECT flowforge_test.finish_action(:'rq3') AS ignored \gset
SELECT is(flowforge_test.history_of(:'rq3'),
    E'1 start entered - -->idle\n2 event entered go idle->work\n3 action_done entered - work->rest\n'
    '4 event entered finish rest->done\n5 event refused ping done->-\n6 event refused again done->-',
    'finish entered the final state; the events queued after it are refused, in order');
SELECT results_eq(format($$SELECT detail ->> 'reason', (detail ->> 'queued')::boolean FROM flowforge.machine_transition
                           WHERE run_id = %L AND outcome = 'refused' ORDER BY n$$, :'rq3'),
    $$VALUES ('the run succeeded', true), ('the run succeeded', true)$$, 'with the reason the run succeeded');
SELECT results_eq(format($$SELECT status::text, live, reason FROM flowforge.machine_run WHERE run_id = %L$$, :'rq3'),
    $$VALUES ('succeeded', false, 'reached final state "done"')$$, 'the machine succeeded');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_queue WHERE run_id = :'rq3'), 0, 'and its queue is empty');

-- on_done straight into a final state, with an event queued; the initial action runs at start.
SELECT flowforge.start_run('act_final') AS rq4 \gset
SELECT results_eq(format($$SELECT state::text, suspended FROM flowforge.machine_run WHERE run_id = %L$$, :'rq4'),
    $$VALUES ('work', true)$$, 'an initial action state: its action is queued by start_run');
SELECT is(flowforge.send_event(:'rq4', 'go', '{}', 'g-1') ->> 'outcome', 'queued', 'an event another state accepts is queued');
SELECT flowforge_test.finish_action(:'rq4', '{"ok": true}') AS ignored \gset
SELECT is(flowforge_test.history_of(:'rq4'),
    E'1 start entered - -->work\n2 action_done entered - work->done\n3 event refused go done->-',
    'on_done entered the final state; the queued event was refused');
SELECT results_eq(format($$SELECT status::text, context FROM flowforge.machine_run WHERE run_id = %L$$, :'rq4'),
    $$VALUES ('succeeded', '{"ok": true}'::jsonb)$$, 'succeeded, with the output in its context');
SELECT results_eq(format($$SELECT kind FROM flowforge.run_events(%L) WHERE work_item_id IS NULL ORDER BY seq$$, :'rq4'),
    $$VALUES ('run_started'), ('state_entered'), ('state_entered'), ('event_refused'), ('run_succeeded')$$,
    'run-level events: started, two states entered, the refusal, run_succeeded');

-- ============================================================ stale holders
-- The previous attempt's holder cannot complete a retried item.
SELECT flowforge.start_run('act') AS rs \gset
SELECT flowforge.send_event(:'rs', 'go') ->> 'state' AS ignored \gset
SELECT work_item_id AS s1, fencing_token AS stok1 FROM flowforge_test.claim_action(:'rs') \gset
SELECT flowforge.fail_work(:'s1', :'stok1', 'once') AS ignored \gset
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT work_item_id AS s2, fencing_token AS stok2 FROM flowforge_test.claim_action(:'rs') \gset
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'s1', :'stok1'), 'FF004', NULL,
    'the first attempt''s token after the item was claimed again: FF004');
SELECT is(flowforge_test.machine_state(:'rs'), 'work', 'and the machine did not move');
SELECT lives_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'s2', :'stok2'), 'the current holder completes');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'s2', :'stok2'), 'FF005', NULL,
    'completing twice: FF005');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id = :'rs' AND cause = 'action_done'), 1,
    'on_done was taken once');

SELECT * FROM finish();
ROLLBACK;
