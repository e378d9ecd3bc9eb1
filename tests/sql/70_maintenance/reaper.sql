-- Periodic duties: reap_expired_leases (leases, timeouts) and tick().
-- The reaper sees every running task, so each scenario leaves none running.
BEGIN;
SELECT plan(46);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------- an expired lease, attempts left
SELECT flowforge.define_workflow($${"name": "rp", "tasks": [
    {"key": "k", "queue": "qr", "max_attempts": 2, "backoff": "1 second"}]}$$) \gset
SELECT flowforge.start_run('rp') AS r1 \gset
SELECT task_run_id AS k1, fencing_token AS tok1 FROM flowforge.claim(ARRAY['qr'], 'worker-a', '30 seconds') \gset

SELECT is(flowforge.reap_expired_leases(), 0, 'nothing is reaped while the lease runs');
SELECT flowforge_test.advance_clock('30 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 0, 'nothing is reaped at the very instant the lease ends');
SELECT is(flowforge_test.task_state(:'r1', 'k'), 'running', 'the task is still running');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'once past the lease, the task is reaped');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, fencing_token::bigint, lease_expires_at, ready_at, error
             FROM flowforge.task_run WHERE id = %L$$, :'k1'),
    format($$VALUES ('ready', 2, %s::bigint, NULL::timestamptz, '2030-01-01 00:00:31.001+00'::timestamptz,
                     'lease expired (held by worker-a)')$$, :'tok1'::bigint + 1),
    'reaped with attempts left: ready after backoff, attempt + 1, fencing token bumped, lease cleared');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, fencing_token, attempt
             FROM flowforge.task_run_event WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'k1'),
    format($$VALUES ('lease_expired', 'running', 'ready', %s::bigint, 2)$$, :'tok1'::bigint + 1),
    'event lease_expired running->ready under the new token');
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, '{"late": true}')$$, :'k1', :'tok1'), 'FF004', NULL,
    'the reaped holder''s complete: FF004');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'k1', :'tok1'), 'FF004', NULL,
    'the reaped holder''s heartbeat: FF004');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'late')$$, :'k1', :'tok1'), 'FF004', NULL,
    'the reaped holder''s fail: FF004');
SELECT is(flowforge_test.run_state(:'r1'), 'running', 'the run goes on');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT results_eq(
    format($$SELECT task_run_id, attempt, fencing_token FROM flowforge.claim(ARRAY['qr'], 'worker-b', '30 seconds')$$),
    format($$VALUES (%L::uuid, 2, %s::bigint)$$, :'k1', :'tok1'::bigint + 2),
    'after the backoff another worker claims attempt 2 under a newer token');

-- ------------------------------------------- an expired lease, no attempts left
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'the last attempt''s lease expires too');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, finished_at IS NOT NULL FROM flowforge.task_run WHERE id = %L$$, :'k1'),
    $$VALUES ('failed', 2, true)$$, 'no attempts left: failed');
SELECT is(flowforge_test.run_state(:'r1'), 'failed', 'its run failed');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE task_run_id = :'k1'
           AND kind = 'lease_expired' AND from_state = 'running' AND to_state = 'failed'), 1,
    'event lease_expired running->failed');

-- Dependents of a task reaped for good are skipped.
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge_test.define_diamond('rpd', '{"queue": "qrd", "max_attempts": 1}') \gset
SELECT flowforge.start_run('rpd') AS r2 \gset
SELECT task_run_id AS a2 FROM flowforge.claim(ARRAY['qrd'], 'w', '10 seconds') \gset
SELECT flowforge_test.advance_clock('11 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'the root''s lease is reaped');
SELECT results_eq(
    format($$SELECT task_key::text, state::text FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'r2'),
    $$VALUES ('a', 'failed'), ('b', 'skipped'), ('c', 'skipped'), ('d', 'skipped')$$,
    'reaped with no attempts left: failed, every dependent skipped');
SELECT results_eq(
    format($$SELECT state::text, tasks_remaining, tasks_failed FROM flowforge.workflow_run WHERE id = %L$$, :'r2'),
    $$VALUES ('failed', 0, 1)$$, 'and the run failed');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'r2' AND task_run_id IS NULL
           AND kind = 'run_failed'), 1, 'one run_failed event');

-- -------------------------------------------------------------------- timeout
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "to", "tasks": [
    {"key": "k", "queue": "qto", "timeout": "5 seconds", "backoff": "1 second"}]}$$) \gset
SELECT flowforge.start_run('to') AS r3 \gset
SELECT task_run_id AS t3, fencing_token AS tok3, lease_expires_at AS lease3
FROM flowforge.claim(ARRAY['qto'], 'w', '30 seconds') \gset
SELECT is(:'lease3'::timestamptz, '2030-01-03 00:00:05+00'::timestamptz, 'setup: the 30s lease is capped at the 5s timeout');
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 0, 'not reaped at exactly 5s');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'a task with timeout 5s claimed with lease 30s is reaped just after 5s');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, detail ->> 'error'
             FROM flowforge.task_run_event WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'t3'),
    $$VALUES ('timed_out', 'running', 'ready', 'timed out after 00:00:05')$$, 'event timed_out');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, fencing_token::bigint FROM flowforge.task_run WHERE id = %L$$, :'t3'),
    format($$VALUES ('ready', 2, %s::bigint)$$, :'tok3'::bigint + 1), 'a timed-out task goes back to ready like a lost lease');
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s)$$, :'t3', :'tok3'), 'FF004', NULL,
    'the timed-out holder''s complete: FF004');

-- A timeout is measured from the claim, so heartbeats cannot outlive it.
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS t3, fencing_token AS tok3 FROM flowforge.claim(ARRAY['qto'], 'w', '2 seconds') \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(flowforge.heartbeat(:'t3', :'tok3', '2 seconds'), '2030-01-03 00:00:09.001+00'::timestamptz, 'heartbeat at 1s: lease to 3s');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT is(flowforge.heartbeat(:'t3', :'tok3', '2 seconds'), '2030-01-03 00:00:11.001+00'::timestamptz, 'heartbeat at 3s: lease to 5s (the timeout)');
SELECT flowforge_test.advance_clock('2001 milliseconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'heartbeaten all along, it is still reaped when its timeout passes');
SELECT is((SELECT kind::text FROM flowforge.task_run_event WHERE task_run_id = :'t3' ORDER BY seq DESC LIMIT 1), 'timed_out',
    'as timed_out');

-- ------------------------------------------------ a heartbeaten task is not reaped
SELECT flowforge_test.set_clock('2030-01-04 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "hbr", "tasks": [{"key": "k", "queue": "qhb"}]}') \gset
SELECT flowforge.start_run('hbr') AS r4 \gset
SELECT task_run_id AS t4, fencing_token AS tok4 FROM flowforge.claim(ARRAY['qhb'], 'w', '30 seconds') \gset
SELECT flowforge_test.advance_clock('20 seconds') \gset
SELECT is(flowforge.heartbeat(:'t4', :'tok4', '30 seconds'), '2030-01-04 00:00:50+00'::timestamptz, 'heartbeat at 20s');
SELECT flowforge_test.advance_clock('20 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 0, 'past the first lease but within the heartbeaten one: not reaped');
SELECT results_eq(format($$SELECT state::text, fencing_token::bigint FROM flowforge.task_run WHERE id = %L$$, :'t4'),
    format($$VALUES ('running', %s::bigint)$$, :'tok4'), 'still running under the same token');
SELECT lives_ok(format($$SELECT flowforge.complete(%L, %s, '{"ok": true}')$$, :'t4', :'tok4'),
    'the holder completes normally');
SELECT flowforge_test.advance_clock('1 hour') \gset
SELECT is(flowforge.reap_expired_leases(), 0, 'a completed task is never reaped');
SELECT is(flowforge_test.task_state(:'r4', 'k'), 'succeeded', 'it stays succeeded');

-- ------------------------------------------------- max_rows and expiry order
SELECT flowforge_test.set_clock('2030-01-05 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "many", "tasks": [
    {"key": "k1", "queue": "qmany"}, {"key": "k2", "queue": "qmany"}, {"key": "k3", "queue": "qmany"}]}$$) \gset
SELECT flowforge.start_run('many') AS r5 \gset
CREATE TEMP TABLE held AS SELECT * FROM flowforge.claim(ARRAY['qmany'], 'w', '30 seconds', 1) c;
SELECT flowforge_test.advance_clock('1 second') \gset
INSERT INTO held SELECT * FROM flowforge.claim(ARRAY['qmany'], 'w', '30 seconds', 2) c;
SELECT is((SELECT count(*)::int FROM held), 3, 'setup: three tasks held, the first a second earlier');
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT is(flowforge.reap_expired_leases(max_rows => 1), 1, 'max_rows 1 reaps one');
SELECT is((SELECT state::text FROM flowforge.task_run WHERE id = (SELECT task_run_id FROM held ORDER BY lease_expires_at LIMIT 1)),
    'ready', 'the one whose lease expired first');
SELECT is(flowforge.reap_expired_leases(1), 1, 'max_rows limits each call');
SELECT is(flowforge.reap_expired_leases(5), 1, 'the last one');
SELECT is(flowforge.reap_expired_leases(5), 0, 'then nothing is left to reap');
SELECT throws_ok('SELECT flowforge.reap_expired_leases(0)', 'FF003', NULL, 'max_rows 0: FF003');
SELECT throws_ok('SELECT flowforge.reap_expired_leases(NULL)', 'FF003', NULL, 'max_rows NULL: FF003');

-- ----------------------------------------------------------------------- tick
SELECT flowforge_test.set_clock('2030-01-06 00:00:00+00') \gset
SELECT flowforge.start_run('hbr') AS r6 \gset
SELECT task_run_id AS t6 FROM flowforge.claim(ARRAY['qhb'], 'w', '5 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped')::int, 0, 'tick() before expiry: {"reaped": 0}');
SELECT flowforge_test.advance_clock('6 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped')::int, 1, 'tick() reaps the expired lease: {"reaped": 1}');
SELECT is(flowforge_test.task_state(:'r6', 'k'), 'ready', 'tick''s reaping put the task back to ready');

SELECT * FROM finish();
ROLLBACK;
