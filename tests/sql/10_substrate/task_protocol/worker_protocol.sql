-- The worker protocol: claim, heartbeat, complete, fail (fencing tokens, leases, retries, backoff).
-- Each scenario uses its own queue, so claims in one never take another's tasks.
BEGIN;
SELECT plan(92);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Events recorded for one task run.
CREATE FUNCTION pg_temp.events_of(p_task_run uuid) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM flowforge.task_run_event WHERE task_run_id = p_task_run
$$;

-- ------------------------------------------------------------- claim: batch
SELECT flowforge.define_workflow($${"name": "five", "tasks": [
    {"key": "t1", "queue": "q5"}, {"key": "t2", "queue": "q5"}, {"key": "t3", "queue": "q5"},
    {"key": "t4", "queue": "q5"}, {"key": "t5", "queue": "q5"}]}$$) \gset
SELECT flowforge.start_run('five') AS five \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['q5'], 'w1', '30 seconds', 2)), 2,
    '5 ready tasks, batch 2: claim returns 2 rows');
SELECT results_eq(
    format($$SELECT state::text, count(*)::int FROM flowforge.task_run WHERE workflow_run_id = %L GROUP BY state ORDER BY state$$, :'five'),
    $$VALUES ('ready', 3), ('running', 2)$$, 'exactly 2 became running, 3 stay ready');
SELECT is((SELECT count(*)::int FROM flowforge.claim(queues => ARRAY['q5'], worker => 'w2', batch => 10)), 3,
    'batch 10 takes the remaining 3 (named arguments)');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['q5'], 'w3')), 0, 'nothing ready: no rows');

SELECT flowforge.define_workflow($${"name": "twoq", "tasks": [
    {"key": "x1", "queue": "qa"}, {"key": "x2", "queue": "qa"}, {"key": "x3", "queue": "qa"},
    {"key": "y1", "queue": "qb"}, {"key": "y2", "queue": "qb"}, {"key": "y3", "queue": "qb"}]}$$) \gset
SELECT flowforge.start_run('twoq') AS twoq \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qa', 'qb'], 'w1', '30 seconds', 2)), 2,
    'two queues with 3 ready each, batch 2: claim returns 2 rows');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE workflow_run_id = :'twoq' AND state = 'running'), 2,
    'and exactly 2 tasks are running (no over-claim across queues)');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'twoq' AND kind = 'claimed'), 2,
    'one claimed event per claimed task');

-- ------------------------------------------------- claim: priority, then age
SELECT flowforge.define_workflow($${"name": "prio", "tasks": [
    {"key": "lo", "queue": "qp", "priority": 0}, {"key": "hi", "queue": "qp", "priority": 10}]}$$) \gset
SELECT flowforge.start_run('prio') AS p1 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge.start_run('prio') AS p2 \gset
CREATE TEMP TABLE claim_order (n serial, run uuid, key text);
INSERT INTO claim_order (run, key) SELECT workflow_run_id, task_key FROM flowforge.claim(ARRAY['qp'], 'w', '30 seconds', 1);
INSERT INTO claim_order (run, key) SELECT workflow_run_id, task_key FROM flowforge.claim(ARRAY['qp'], 'w', '30 seconds', 1);
INSERT INTO claim_order (run, key) SELECT workflow_run_id, task_key FROM flowforge.claim(ARRAY['qp'], 'w', '30 seconds', 1);
INSERT INTO claim_order (run, key) SELECT workflow_run_id, task_key FROM flowforge.claim(ARRAY['qp'], 'w', '30 seconds', 1);
SELECT results_eq(
    'SELECT run, key FROM claim_order ORDER BY n',
    format($$VALUES (%L::uuid, 'lo'), (%L::uuid, 'lo'), (%L::uuid, 'hi'), (%L::uuid, 'hi')$$, :'p1', :'p2', :'p1', :'p2'),
    'one at a time: lowest priority number first (issue 13: one meaning of priority in every engine), then the longest ready');

SELECT flowforge.define_workflow($${"name": "crossq", "tasks": [
    {"key": "low", "queue": "qx", "priority": 1}, {"key": "high", "queue": "qy", "priority": 5}]}$$) \gset
SELECT flowforge.start_run('crossq') AS xq \gset
SELECT is((SELECT task_key FROM flowforge.claim(ARRAY['qx', 'qy'], 'w', '30 seconds', 1)), 'low',
    'across queues, the lowest priority number is claimed first');

-- ------------------------------------------------------ claim: queue filter
SELECT flowforge.define_workflow('{"name": "elsewhere", "tasks": [{"key": "e", "queue": "elsewhere"}]}') \gset
SELECT flowforge.start_run('elsewhere') AS ew \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['q5', 'qa'], 'w', '30 seconds', 100)
           WHERE workflow_run_id = :'ew'), 0, 'a task of another queue is not claimed');
SELECT is(flowforge_test.task_state(:'ew', 'e'), 'ready', 'it stays ready');
SELECT is((SELECT task_key FROM flowforge.claim(ARRAY['elsewhere'], 'w')), 'e', 'claiming its queue takes it');

-- --------------------------------------------- claim: ready_at in the future
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "later", "tasks": [{"key": "l", "queue": "ql", "backoff": "1 second"}]}') \gset
SELECT flowforge.start_run('later') AS lr \gset
SELECT task_run_id AS l1, fencing_token AS ltok FROM flowforge.claim(ARRAY['ql'], 'w') \gset
SELECT flowforge.fail(:'l1', :'ltok', 'try later');
SELECT is((SELECT ready_at FROM flowforge.task_run WHERE id = :'l1'), '2030-01-02 00:00:01+00'::timestamptz,
    'setup: the retry is ready one second from now');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['ql'], 'w')), 0, 'not claimed before its ready_at');
SELECT flowforge_test.advance_clock('999 milliseconds') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['ql'], 'w')), 0, 'not claimed a millisecond before');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is((SELECT task_run_id FROM flowforge.claim(ARRAY['ql'], 'w')), :'l1'::uuid, 'claimed once the clock reaches it');

-- ------------------------------------------------ claim: what it sets/returns
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "claimset", "tasks": [{"key": "k", "queue": "qc"}]}') \gset
SELECT flowforge.start_run('claimset', '{"who": "me"}') AS cr \gset
SELECT * FROM flowforge.claim(ARRAY['qc'], 'worker-7', '45 seconds', 1) \gset c_
SELECT results_eq(
    format($$SELECT %L::uuid, %L::text, %L::int, %L::bigint, %L::jsonb, %L::timestamptz$$,
           :'c_workflow_run_id', :'c_task_key', :'c_attempt', :'c_fencing_token', :'c_input', :'c_lease_expires_at'),
    format($$VALUES (%L::uuid, 'k', 1, 1::bigint, '{"run": {"who": "me"}, "deps": {}}'::jsonb,
                     '2030-01-03 00:00:45+00'::timestamptz)$$, :'cr'),
    'claim returns the run, key, attempt 1, fencing token 1, the input and lease = now + lease');
SELECT results_eq(
    format($$SELECT state::text, fencing_token::bigint, lease_owner::text, lease_expires_at, started_at
             FROM flowforge.task_run WHERE id = %L$$, :'c_task_run_id'),
    $$VALUES ('running', 1::bigint, 'worker-7', '2030-01-03 00:00:45+00'::timestamptz, '2030-01-03 00:00:00+00'::timestamptz)$$,
    'the row is running, token bumped 0 -> 1, leased to the worker until now + lease');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, fencing_token, attempt, detail ->> 'worker'
             FROM flowforge.task_run_event WHERE task_run_id = %L AND kind = 'claimed'$$, :'c_task_run_id'),
    $$VALUES ('claimed', 'ready', 'running', 1::bigint, 1, 'worker-7')$$, 'one claimed event');

SELECT flowforge.define_workflow('{"name": "capped", "tasks": [{"key": "k", "queue": "qcap", "timeout": "10 seconds"}]}') \gset
SELECT flowforge.start_run('capped') AS cap1 \gset
SELECT flowforge.start_run('capped') AS cap2 \gset
SELECT is((SELECT lease_expires_at FROM flowforge.claim(ARRAY['qcap'], 'w', '30 seconds', 1)),
    '2030-01-03 00:00:10+00'::timestamptz, 'a lease longer than the task timeout is capped at now + timeout');
SELECT is((SELECT lease_expires_at FROM flowforge.claim(ARRAY['qcap'], 'w', '5 seconds', 1)),
    '2030-01-03 00:00:05+00'::timestamptz, 'a lease shorter than the timeout is kept');

-- ------------------------------------------------------ claim: bad arguments
SELECT throws_ok($$SELECT * FROM flowforge.claim('{}'::text[], 'w')$$, 'FF003', NULL, 'claim: empty queues: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(NULL::text[], 'w')$$, 'FF003', NULL, 'claim: queues NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY[NULL]::text[], 'w')$$, 'FF003', NULL, 'claim: a NULL queue: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default', NULL], 'w')$$, 'FF003', NULL, 'claim: a NULL among queues: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '30 seconds', 0)$$, 'FF003', NULL, 'claim: batch 0: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '30 seconds', 1001)$$, 'FF003', NULL, 'claim: batch 1001: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '0 seconds')$$, 'FF003', NULL, 'claim: lease 0: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '-5 seconds')$$, 'FF003', NULL, 'claim: negative lease: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], '')$$, 'FF003', NULL, 'claim: empty worker: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['default'], NULL)$$, 'FF003', NULL, 'claim: NULL worker: FF003');

-- ------------------------------------------------------------------ heartbeat
SELECT flowforge_test.set_clock('2030-01-04 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "hb", "tasks": [{"key": "k", "queue": "qh"}]}') \gset
SELECT flowforge.start_run('hb') AS hr \gset
SELECT task_run_id AS h1, fencing_token AS htok FROM flowforge.claim(ARRAY['qh'], 'w', '30 seconds') \gset
SELECT pg_temp.events_of(:'h1') AS hev \gset
SELECT flowforge_test.advance_clock('20 seconds') \gset
SELECT is(flowforge.heartbeat(:'h1', :'htok', '30 seconds'), '2030-01-04 00:00:50+00'::timestamptz,
    'heartbeat extends the lease to now + lease and returns it');
SELECT is((SELECT lease_expires_at FROM flowforge.task_run WHERE id = :'h1'), '2030-01-04 00:00:50+00'::timestamptz,
    'the row carries the new lease');
SELECT is(flowforge.heartbeat(task_run_id => :'h1', fencing_token => :'htok'), '2030-01-04 00:00:50+00'::timestamptz,
    'heartbeat with named arguments and the default lease (30 seconds)');
SELECT is(pg_temp.events_of(:'h1'), :'hev'::bigint, 'a heartbeat is not a transition: no event');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'h1', :'htok'::bigint - 1), 'FF004', NULL,
    'heartbeat with an older token: FF004');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'h1', :'htok'::bigint + 1), 'FF004', NULL,
    'heartbeat with a token not issued yet: FF004');
SELECT throws_ok(format($$SELECT flowforge.heartbeat(%L, %s, '0 seconds')$$, :'h1', :'htok'), 'FF003', NULL,
    'heartbeat with lease 0: FF003');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, 1)', gen_random_uuid()), 'FF001', NULL,
    'heartbeat of a random id: FF001');
SELECT is((SELECT lease_expires_at FROM flowforge.task_run WHERE id = :'h1'), '2030-01-04 00:00:50+00'::timestamptz,
    'refused heartbeats left the lease alone');

-- Heartbeats never extend past started_at + timeout; after the timeout they are refused.
SELECT flowforge_test.set_clock('2030-01-05 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "hbt", "tasks": [{"key": "k", "queue": "qt", "timeout": "10 seconds"}]}') \gset
SELECT flowforge.start_run('hbt') AS htr \gset
SELECT task_run_id AS t1, fencing_token AS ttok FROM flowforge.claim(ARRAY['qt'], 'w', '5 seconds') \gset
SELECT flowforge_test.advance_clock('3 seconds') \gset
SELECT is(flowforge.heartbeat(:'t1', :'ttok', '30 seconds'), '2030-01-05 00:00:10+00'::timestamptz,
    'a heartbeat never extends past started_at + timeout');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT is(flowforge.heartbeat(:'t1', :'ttok', '2 seconds'), '2030-01-05 00:00:07+00'::timestamptz,
    'a heartbeat shorter than the remaining time gives now + lease');
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'t1', :'ttok'), 'FF004', NULL,
    'once the timeout has passed, heartbeat: FF004');

-- ------------------------------------------------------------------- complete
SELECT flowforge_test.set_clock('2030-01-06 00:00:00+00') \gset
SELECT flowforge.define_workflow('{"name": "cs", "tasks": [{"key": "k", "queue": "qs", "backoff": "1 second"}]}') \gset
SELECT flowforge.start_run('cs') AS csr \gset
SELECT task_run_id AS s1, fencing_token AS old_tok FROM flowforge.claim(ARRAY['qs'], 'w') \gset
SELECT flowforge.fail(:'s1', :'old_tok', 'first try failed');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT fencing_token AS new_tok FROM flowforge.claim(ARRAY['qs'], 'w') \gset
SELECT cmp_ok(:'new_tok'::bigint, '>', :'old_tok'::bigint, 'setup: the re-claim issued a newer token');
SELECT pg_temp.events_of(:'s1') AS sev \gset
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, '{"late": true}')$$, :'s1', :'old_tok'), 'FF004', NULL,
    'complete by the previous holder (stale token): FF004');
SELECT results_eq(
    format($$SELECT state::text, output, fencing_token::bigint FROM flowforge.task_run WHERE id = %L$$, :'s1'),
    format($$VALUES ('running', NULL::jsonb, %s::bigint)$$, :'new_tok'),
    'the stale complete changed nothing: still running, no output, same token');
SELECT is(pg_temp.events_of(:'s1'), :'sev'::bigint, 'the stale complete appended no event');
SELECT lives_ok(format($$SELECT flowforge.complete(task_run_id => %L, fencing_token => %s, output => '{"ok": 1}')$$, :'s1', :'new_tok'),
    'complete by the current holder');
SELECT results_eq(
    format($$SELECT state::text, output, lease_expires_at, finished_at FROM flowforge.task_run WHERE id = %L$$, :'s1'),
    $$VALUES ('succeeded', '{"ok": 1}'::jsonb, NULL::timestamptz, '2030-01-06 00:00:01+00'::timestamptz)$$,
    'the task succeeded with its output, lease released');
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, '{"ok": 2}')$$, :'s1', :'new_tok'), 'FF005', NULL,
    'complete twice: FF005');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'after the fact')$$, :'s1', :'new_tok'), 'FF005', NULL,
    'fail after complete: FF005');
SELECT is((SELECT output FROM flowforge.task_run WHERE id = :'s1'), '{"ok": 1}'::jsonb, 'the first output stands');
SELECT throws_ok(format('SELECT flowforge.complete(%L, 1)', gen_random_uuid()), 'FF001', NULL, 'complete of a random id: FF001');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, 1, 'x')$$, gen_random_uuid()), 'FF001', NULL, 'fail of a random id: FF001');

-- ------------------------------------------------- a diamond runs to success
SELECT flowforge_test.set_clock('2030-01-07 00:00:00+00') \gset
SELECT flowforge_test.define_diamond('din', '{"queue": "qd"}') \gset
SELECT flowforge.start_run('din', '{"n": 7}') AS dr \gset
CREATE TEMP TABLE got AS SELECT * FROM flowforge.claim(ARRAY['qd'], 'w', '30 seconds', 10);
SELECT results_eq('SELECT task_key, input FROM got',
    $$VALUES ('a', '{"run": {"n": 7}, "deps": {}}'::jsonb)$$, 'only the root is claimable; its input carries the run input');
SELECT flowforge.complete(task_run_id, fencing_token, '{"a": 1}') FROM got;
SELECT results_eq(
    format($$SELECT task_key::text, state::text, remaining_deps::int FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'dr'),
    $$VALUES ('a', 'succeeded', 0), ('b', 'ready', 0), ('c', 'ready', 0), ('d', 'pending', 2)$$,
    'a succeeded: b and c ready in the same transaction, d still waits on both');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e JOIN flowforge.task_run tr ON tr.id = e.task_run_id
           WHERE tr.workflow_run_id = :'dr' AND e.kind = 'released' AND e.from_state = 'pending' AND e.to_state = 'ready'), 2,
    'one released event for each of b and c');
TRUNCATE got;
INSERT INTO got SELECT * FROM flowforge.claim(ARRAY['qd'], 'w', '30 seconds', 10);
SELECT results_eq('SELECT task_key, input FROM got ORDER BY task_key',
    $$VALUES ('b', '{"run": {"n": 7}, "deps": {"a": {"a": 1}}}'::jsonb), ('c', '{"run": {"n": 7}, "deps": {"a": {"a": 1}}}'::jsonb)$$,
    'b and c are claimed together, each given a''s output');
SELECT flowforge.complete(task_run_id, fencing_token, '{"b": 2}') FROM got WHERE task_key = 'b';
SELECT results_eq(
    format($$SELECT state::text, remaining_deps::int FROM flowforge.task_run WHERE workflow_run_id = %L AND task_key = 'd'$$, :'dr'),
    $$VALUES ('pending', 1)$$, 'after b, d waits on one dependency');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qd'], 'w', '30 seconds', 10)), 0, 'd is not claimable yet');
SELECT flowforge.complete(task_run_id, fencing_token, '{"c": 3}') FROM got WHERE task_key = 'c';
SELECT is(flowforge_test.task_state(:'dr', 'd'), 'ready', 'after both b and c, d is ready');
TRUNCATE got;
INSERT INTO got SELECT * FROM flowforge.claim(ARRAY['qd'], 'w', '30 seconds', 10);
SELECT results_eq('SELECT task_key, input FROM got',
    $$VALUES ('d', '{"run": {"n": 7}, "deps": {"b": {"b": 2}, "c": {"c": 3}}}'::jsonb)$$,
    'd is given the outputs of both of its dependencies');
SELECT is(flowforge_test.run_state(:'dr'), 'running', 'the run is running while d is');
SELECT flowforge.complete(task_run_id, fencing_token, '{"d": 4}') FROM got;
SELECT results_eq(
    format($$SELECT state::text, tasks_remaining, tasks_failed, finished_at FROM flowforge.workflow_run WHERE id = %L$$, :'dr'),
    $$VALUES ('succeeded', 0, 0, '2030-01-07 00:00:00+00'::timestamptz)$$, 'the diamond run succeeded, nothing remaining');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'dr' AND task_run_id IS NULL
           AND kind = 'run_succeeded' AND from_state = 'running' AND to_state = 'succeeded'), 1, 'one run_succeeded event');

-- ------------------------------------------------------- fail: retry backoff
-- backoff 1s, factor 2, max_backoff 3s: waits 1s, 2s, then 3s (4s capped).
SELECT flowforge_test.set_clock('2030-01-08 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "bo", "tasks": [{"key": "k", "queue": "qbo", "max_attempts": 5,
    "backoff": "1 second", "backoff_factor": 2, "max_backoff": "3 seconds"}]}$$) \gset
SELECT flowforge.start_run('bo') AS bor \gset
SELECT task_run_id AS b1, fencing_token AS btok, attempt AS batt FROM flowforge.claim(ARRAY['qbo'], 'w') \gset
SELECT is(:'batt'::int, 1, 'attempt 1 is claimed');
SELECT flowforge.fail(:'b1', :'btok', 'boom 1');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, ready_at - flowforge.now(), error, lease_expires_at FROM flowforge.task_run WHERE id = %L$$, :'b1'),
    $$VALUES ('ready', 2, interval '1 second', 'boom 1', NULL::timestamptz)$$,
    'attempt 1 failed (retryable by default): ready, attempt 2, after backoff * 2^0 = 1s');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, attempt, (detail ->> 'ready_at')::timestamptz, detail ->> 'error'
             FROM flowforge.task_run_event WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'b1'),
    $$VALUES ('retry_scheduled', 'running', 'ready', 2, '2030-01-08 00:00:01+00'::timestamptz, 'boom 1')$$,
    'event retry_scheduled, carrying the error and ready_at');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS b1, fencing_token AS btok, attempt AS batt FROM flowforge.claim(ARRAY['qbo'], 'w') \gset
SELECT is(:'batt'::int, 2, 'attempt 2 is claimed');
SELECT flowforge.fail(:'b1', :'btok', 'boom 2', true);
SELECT results_eq(
    format($$SELECT state::text, attempt::int, ready_at - flowforge.now() FROM flowforge.task_run WHERE id = %L$$, :'b1'),
    $$VALUES ('ready', 3, interval '2 seconds')$$, 'attempt 2 failed: ready after backoff * 2^1 = 2s');
SELECT flowforge_test.advance_clock('2 seconds') \gset
SELECT task_run_id AS b1, fencing_token AS btok, attempt AS batt FROM flowforge.claim(ARRAY['qbo'], 'w') \gset
SELECT is(:'batt'::int, 3, 'attempt 3 is claimed');
SELECT flowforge.fail(:'b1', :'btok', 'boom 3', true);
SELECT results_eq(
    format($$SELECT state::text, attempt::int, ready_at - flowforge.now() FROM flowforge.task_run WHERE id = %L$$, :'b1'),
    $$VALUES ('ready', 4, interval '3 seconds')$$, 'attempt 3 failed: backoff * 2^2 = 4s, capped at max_backoff 3s');
SELECT is(flowforge_test.run_state(:'bor'), 'running', 'retries keep the run running');

-- ------------------------------------------------------- fail: max attempts
SELECT flowforge.define_workflow('{"name": "ex", "tasks": [{"key": "k", "queue": "qex", "max_attempts": 2}]}') \gset
SELECT flowforge.start_run('ex') AS exr \gset
SELECT task_run_id AS x1, fencing_token AS xtok FROM flowforge.claim(ARRAY['qex'], 'w') \gset
SELECT flowforge.fail(:'x1', :'xtok', 'try 1');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT task_run_id AS x1, fencing_token AS xtok FROM flowforge.claim(ARRAY['qex'], 'w') \gset
SELECT flowforge.fail(:'x1', :'xtok', 'try 2', true);
SELECT results_eq(
    format($$SELECT state::text, attempt::int, error, finished_at IS NOT NULL FROM flowforge.task_run WHERE id = %L$$, :'x1'),
    $$VALUES ('failed', 2, 'try 2', true)$$, 'max_attempts exhausted: failed even though retryable');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, (detail ->> 'retryable')::boolean
             FROM flowforge.task_run_event WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'x1'),
    $$VALUES ('failed', 'running', 'failed', true)$$, 'event failed');
SELECT is(flowforge_test.run_state(:'exr'), 'failed', 'its run failed');

-- -------------------------------- fail for good: dependents skipped, branches go on
-- a -> b -> c, and independently x -> y.
SELECT flowforge.define_workflow($${"name": "branches", "tasks": [
    {"key": "a", "queue": "qbr"}, {"key": "b", "queue": "qbr", "depends_on": ["a"]}, {"key": "c", "queue": "qbr", "depends_on": ["b"]},
    {"key": "x", "queue": "qbr"}, {"key": "y", "queue": "qbr", "depends_on": ["x"]}]}$$) \gset
SELECT flowforge.start_run('branches') AS br \gset
TRUNCATE got;
INSERT INTO got SELECT * FROM flowforge.claim(ARRAY['qbr'], 'w', '30 seconds', 10);
SELECT set_eq('SELECT task_key FROM got', $$VALUES ('a'), ('x')$$, 'setup: both roots claimed');
SELECT flowforge.fail(task_run_id, fencing_token, 'fatal', retryable => false) FROM got WHERE task_key = 'a';
SELECT results_eq(
    format($$SELECT task_key::text, state::text FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'br'),
    $$VALUES ('a', 'failed'), ('b', 'skipped'), ('c', 'skipped'), ('x', 'running'), ('y', 'pending')$$,
    'retryable = false: failed at once, every transitive dependent skipped, the independent branch untouched');
SELECT is((SELECT attempt::int FROM flowforge.task_run WHERE workflow_run_id = :'br' AND task_key = 'a'), 1,
    'a non-retryable failure does not use another attempt');
SELECT results_eq(
    format($$SELECT tr.task_key::text, e.from_state::text, e.to_state::text FROM flowforge.task_run_event e
             JOIN flowforge.task_run tr ON tr.id = e.task_run_id
             WHERE e.workflow_run_id = %L AND e.kind = 'skipped' ORDER BY tr.task_key$$, :'br'),
    $$VALUES ('b', 'pending', 'skipped'), ('c', 'pending', 'skipped')$$, 'one skipped event per skipped task');
SELECT results_eq(
    format($$SELECT state::text, tasks_remaining, tasks_failed FROM flowforge.workflow_run WHERE id = %L$$, :'br'),
    $$VALUES ('running', 2, 1)$$, 'the run keeps running while the other branch has work');
SELECT flowforge.complete(task_run_id, fencing_token, '{}') FROM got WHERE task_key = 'x';
SELECT is(flowforge_test.task_state(:'br', 'y'), 'ready', 'the independent branch continues');
TRUNCATE got;
INSERT INTO got SELECT * FROM flowforge.claim(ARRAY['qbr'], 'w', '30 seconds', 10);
SELECT is((SELECT task_key FROM got), 'y', 'y is claimed');
SELECT is(flowforge_test.run_state(:'br'), 'running', 'still running while y runs');
SELECT flowforge.complete(task_run_id, fencing_token, '{}') FROM got;
SELECT results_eq(
    format($$SELECT state::text, tasks_remaining, tasks_failed, finished_at IS NOT NULL FROM flowforge.workflow_run WHERE id = %L$$, :'br'),
    $$VALUES ('failed', 0, 1, true)$$, 'nothing left to do: the run ends failed');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'br' AND task_run_id IS NULL
           AND kind = 'run_failed' AND to_state = 'failed'), 1, 'one run_failed event');

-- ------------------------------- another organization's task run is not found
-- A task run of another organization, made through a login of its own (since
-- 0034 a run cannot be moved between organizations by hand: its keys and its
-- definition's hold it in its own). Named per backend: roles are cluster-wide.
SELECT 'wp_login_' || pg_backend_pid() AS wp_login \gset
CREATE ROLE :"wp_login" LOGIN;
SELECT flowforge.create_organization('other', 'Other org') \gset
SELECT flowforge.add_member('other', :'wp_login', 'owner') \gset
SET LOCAL SESSION AUTHORIZATION :"wp_login";
SELECT flowforge.define_workflow('{"name": "alien", "tasks": [{"key": "k", "queue": "qalien"}]}') \gset
SELECT flowforge.start_run('alien') AS ar \gset
SELECT task_run_id AS at1, fencing_token AS atok FROM flowforge.claim(ARRAY['qalien'], 'w') \gset
RESET SESSION AUTHORIZATION;
SELECT gen_random_uuid() AS nobody \gset
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'at1', :'atok'), 'FF001', format('task run %s not found', :'at1'),
    'heartbeat of another organization''s task run, even with its token: FF001 "task run <id> not found"');
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', :'at1', :'atok'), 'FF001', format('task run %s not found', :'at1'),
    'complete of another organization''s task run: FF001, same message');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'x')$$, :'at1', :'atok'), 'FF001', format('task run %s not found', :'at1'),
    'fail of another organization''s task run: FF001, same message');
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', :'nobody', :'atok'), 'FF001', format('task run %s not found', :'nobody'),
    'complete of a random id: the same code and message');
SELECT is(flowforge_test.task_state(:'ar', 'k'), 'running', 'the other organization''s task was not touched');
UPDATE flowforge.task_run SET state = 'ready', lease_expires_at = NULL, lease_owner = NULL WHERE workflow_run_id = :'ar';
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qalien'], 'w', '30 seconds', 10)), 0,
    'claim never takes another organization''s ready task');

SELECT * FROM finish();
ROLLBACK;
