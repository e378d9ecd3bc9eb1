-- Push delivery: configure_queue, dispatch into the outbox in the readiness
-- transaction, dispatch leases, take_outbox / mark_published.
-- Everything here happens in one transaction that is rolled back, so "the row
-- exists right after start_run returns" is "the row is written in the same
-- transaction as the task became eligible".
BEGIN;
SELECT plan(93);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------------------- configure_queue: validation
SELECT throws_ok($$SELECT flowforge.configure_queue(NULL, 'ex')$$, 'FF003', NULL, 'a NULL queue name: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('1queue', 'ex')$$, 'FF003', NULL,
    'a queue name not starting with a letter: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('has space', 'ex')$$, 'FF003', NULL,
    'a queue name with a space: FF003');
SELECT throws_ok(format('SELECT flowforge.configure_queue(%L, %L)', 'q' || repeat('x', 63), 'ex'), 'FF003', NULL,
    'a 64-character queue name: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', 'bad exchange!')$$, 'FF003', NULL,
    'an exchange with a space and "!": FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', '')$$, 'FF003', NULL, 'an empty exchange: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', NULL, 'rk')$$, 'FF003', NULL,
    'a routing key without an exchange: FF003');
SELECT throws_ok(format('SELECT flowforge.configure_queue(%L, %L, %L)', 'q', 'ex', repeat('r', 256)), 'FF003', NULL,
    'a 256-character routing key: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', 'ex', NULL, interval '0 seconds')$$, 'FF003', NULL,
    'a dispatch lease under 1 second: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', 'ex', NULL, interval '2 days')$$, 'FF003', NULL,
    'a dispatch lease over 1 day: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('q', 'ex', NULL, NULL)$$, 'FF003', NULL,
    'a NULL dispatch lease: FF003');
SELECT is((SELECT count(*)::int FROM flowforge.queue), 0, 'a refused configure_queue writes nothing');

SELECT lives_ok($$SELECT flowforge.configure_queue('pq', 'ex.push', NULL, interval '1 minute')$$,
    'configure_queue(pq, ex.push, NULL, 1 minute)');
SELECT results_eq(
    $$SELECT organization_id, name::text, exchange::text, routing_key::text, dispatch_lease FROM flowforge.queue$$,
    $$VALUES ('00000000-0000-0000-0000-000000000001'::uuid, 'pq', 'ex.push', NULL::text, interval '1 minute')$$,
    'the queue row: the caller''s organization, the exchange, no routing key, the lease');
SELECT lives_ok($$SELECT flowforge.configure_queue('pq', 'ex.push', NULL, interval '1 minute')$$,
    'configuring the same queue again is an update, not an error');
SELECT is((SELECT count(*)::int FROM flowforge.queue), 1, 'still one queue row');

-- ------------------------------------------------------- start_run: dispatched in the same transaction
SELECT flowforge_test.define_diamond('pd', '{"queue": "pq"}') \gset
SELECT flowforge.start_run('pd', '{"n": 1}') AS r1 \gset
SELECT id AS a1 FROM flowforge.task_run WHERE workflow_run_id = :'r1' AND task_key = 'a' \gset
SELECT id AS b1 FROM flowforge.task_run WHERE workflow_run_id = :'r1' AND task_key = 'b' \gset
SELECT id AS c1 FROM flowforge.task_run WHERE workflow_run_id = :'r1' AND task_key = 'c' \gset

SELECT results_eq(
    format($$SELECT state::text, lease_owner::text, fencing_token::bigint, attempt::int, lease_expires_at
             FROM flowforge.task_run WHERE id = %L$$, :'a1'),
    $$VALUES ('running', 'dispatch', 1::bigint, 1, '2030-01-01 00:01:00+00'::timestamptz)$$,
    'the root of a push queue is claimed for dispatch at once: running, lease_owner dispatch, token 1, dispatch lease');
SELECT results_eq(
    format($$SELECT exchange::text, routing_key::text, fencing_token_snapshot, attempt_snapshot, published_at, created_at
             FROM flowforge.outbox_message WHERE task_run_id = %L$$, :'a1'),
    format($$VALUES ('ex.push', %L, 1::bigint, 1, NULL::timestamptz, '2030-01-01 00:00:00+00'::timestamptz)$$,
           current_database() || '.default.pq'),
    'exactly one outbox row for that generation, already there when start_run returns (routing key = <database>.<organization>.<queue>)');
SELECT is(
    (SELECT array_agg(k ORDER BY k) FROM flowforge.outbox_message m, jsonb_object_keys(m.payload) k
     WHERE m.task_run_id = :'a1'),
    ARRAY['attempt', 'database', 'fencing_token', 'input', 'organization_id', 'task_key', 'task_run_id', 'workflow_run_id'],
    'the payload has exactly the documented keys');
SELECT is(
    (SELECT payload FROM flowforge.outbox_message WHERE task_run_id = :'a1'),
    jsonb_build_object('task_run_id', :'a1'::uuid, 'fencing_token', 1, 'attempt', 1, 'workflow_run_id', :'r1'::uuid,
                       'task_key', 'a', 'organization_id', '00000000-0000-0000-0000-000000000001'::uuid,
                       'database', current_database(), 'input', '{"run": {"n": 1}, "deps": {}}'::jsonb),
    'the payload values: ids, token, attempt, key, organization, database, the task''s input');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, fencing_token, detail
             FROM flowforge.task_run_event WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'a1'),
    format($$VALUES ('dispatched', 'ready', 'running', 1::bigint, jsonb_build_object('exchange', 'ex.push', 'routing_key', %L))$$,
           current_database() || '.default.pq'),
    'event dispatched ready->running under the new token');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE workflow_run_id = :'r1'), 1,
    'pending dependents have no outbox row');
SELECT is(flowforge_test.task_state(:'r1', 'b'), 'pending', 'b waits for a');

-- ------------------------------------------------------- the consumer: heartbeat takes over, complete releases
SELECT lives_ok(format('SELECT flowforge.heartbeat(%L, 1, %L)', :'a1', '30 seconds'),
    'the consumer''s heartbeat with the message''s token');
SELECT is((SELECT lease_owner::text FROM flowforge.task_run WHERE id = :'a1'), 'push-consumer',
    'the first heartbeat takes ownership from the dispatcher');
SELECT lives_ok(format($$SELECT flowforge.complete(%L, 1, '{"out": "a"}')$$, :'a1'), 'the consumer completes a');
SELECT results_eq(
    format($$SELECT tr.task_key::text, tr.state::text, tr.lease_owner::text, tr.fencing_token::bigint,
                    m.fencing_token_snapshot, m.payload -> 'input' -> 'deps'
             FROM flowforge.task_run tr JOIN flowforge.outbox_message m ON m.task_run_id = tr.id
             WHERE tr.workflow_run_id = %L AND tr.task_key IN ('b', 'c') ORDER BY tr.task_key$$, :'r1'),
    $$VALUES ('b', 'running', 'dispatch', 1::bigint, 1::bigint, '{"a": {"out": "a"}}'::jsonb),
             ('c', 'running', 'dispatch', 1::bigint, 1::bigint, '{"a": {"out": "a"}}'::jsonb)$$,
    'the dependents complete released are dispatched in that same transaction, with a''s output as input');
SELECT is(flowforge_test.task_state(:'r1', 'd'), 'pending', 'd still waits for b and c');

-- ------------------------------------------------------- one row per generation
SELECT throws_ok(
    format($$INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange, routing_key,
                                                    payload, fencing_token_snapshot, attempt_snapshot)
             VALUES ('00000000-0000-0000-0000-000000000001', %L, %L, 'ex.push', 'pq', '{}', 1, 1)$$, :'b1', :'r1'),
    '23505', NULL,
    'a second outbox row for the same (task run, fencing token) is refused by uniq_outbox_per_taskrun_generation');
SELECT is(flowforge._dispatch_rows('00000000-0000-0000-0000-000000000001', ARRAY[:'b1'::uuid], flowforge.now()), 0,
    'dispatching an already dispatched task again is skipped (returns 0), not an error');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE task_run_id = :'b1'), 1, 'still one row for b');
SELECT is((SELECT fencing_token::bigint FROM flowforge.task_run WHERE id = :'b1'), 1::bigint, 'and b''s token is unchanged');

-- ------------------------------------------------------- an expired dispatch lease: a new generation, no attempt used
SELECT is(flowforge.reap_expired_leases(), 0, 'nothing is reaped while the dispatch lease runs');
SELECT flowforge_test.advance_clock('1 minute 1 millisecond') \gset
SELECT is(flowforge.reap_expired_leases(), 2, 'past the dispatch lease, b and c (never taken) are reaped');
SELECT results_eq(
    format($$SELECT state::text, lease_owner::text, attempt::int, fencing_token::bigint, lease_expires_at
             FROM flowforge.task_run WHERE id = %L$$, :'b1'),
    $$VALUES ('running', 'dispatch', 1, 3::bigint, '2030-01-01 00:02:00.001+00'::timestamptz)$$,
    'b is dispatched again at once: attempt unchanged, token bumped by the reap and the dispatch, a fresh lease');
SELECT results_eq(
    format($$SELECT fencing_token_snapshot, attempt_snapshot, payload -> 'fencing_token', published_at IS NULL
             FROM flowforge.outbox_message WHERE task_run_id = %L ORDER BY fencing_token_snapshot$$, :'b1'),
    $$VALUES (1::bigint, 1, '1'::jsonb, true), (3::bigint, 1, '3'::jsonb, true)$$,
    'a new outbox row for the new generation; the old one stays (its token is now stale)');
SELECT results_eq(
    format($$SELECT kind::text, to_state::text, detail ->> 'error'
             FROM flowforge.task_run_event WHERE task_run_id = %L AND kind = 'lease_expired'$$, :'b1'),
    $$VALUES ('lease_expired', 'ready', 'no consumer took the pushed task within its dispatch lease')$$,
    'event lease_expired says no consumer took it');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, 1)', :'b1'), 'FF004', NULL,
    'a consumer of the old message is refused (FF004) and just acks it');

-- ------------------------------------------------------- after heartbeat, a reap uses an attempt
SELECT lives_ok(format('SELECT flowforge.heartbeat(%L, 3, %L)', :'b1', '30 seconds'),
    'a consumer takes the new generation of b');
SELECT is((SELECT lease_owner::text FROM flowforge.task_run WHERE id = :'b1'), 'push-consumer', 'b is the consumer''s');
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT is(flowforge.reap_expired_leases(), 1, 'the consumer''s lease on b expires (c''s dispatch lease still runs)');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, fencing_token::bigint, ready_at FROM flowforge.task_run WHERE id = %L$$, :'b1'),
    $$VALUES ('ready', 2, 4::bigint, '2030-01-01 00:01:32.001+00'::timestamptz)$$,
    'a task a consumer had taken uses an attempt: ready after backoff, attempt 2');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE task_run_id = :'b1'), 2,
    'not dispatched before its backoff has passed');
-- (The partitions duties count the history partitions made and dropped: the steered clock decides, not this test.)
SELECT is(flowforge.tick() - 'at' - 'partitions' - 'partitions_dropped', '{"purged": 0, "reaped": 0, "reaped_items": 0, "dispatched": 0, "agents_inactive": 0, "timers_fired": 0, "cron_fired": 0}'::jsonb,
    'tick() before it is due: nothing');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(flowforge.tick() - 'at' - 'partitions' - 'partitions_dropped', '{"purged": 0, "reaped": 0, "reaped_items": 0, "dispatched": 1, "agents_inactive": 0, "timers_fired": 0, "cron_fired": 0}'::jsonb,
    'tick() once due: b is dispatched');
SELECT results_eq(
    format($$SELECT fencing_token_snapshot, attempt_snapshot, (payload ->> 'attempt')::int
             FROM flowforge.outbox_message WHERE task_run_id = %L ORDER BY fencing_token_snapshot DESC LIMIT 1$$, :'b1'),
    $$VALUES (5::bigint, 2, 2)$$, 'the retry''s message carries attempt 2 and the new token');

-- ------------------------------------------------------- a failed push task with backoff: tick() when due
SELECT fencing_token::bigint AS tokc FROM flowforge.task_run WHERE id = :'c1' \gset
SELECT lives_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'c1', :'tokc'), 'a consumer takes c');
SELECT lives_ok(format($$SELECT flowforge.fail(%L, %s, 'boom')$$, :'c1', :'tokc'), 'and fails it (retryable)');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, ready_at FROM flowforge.task_run WHERE id = %L$$, :'c1'),
    $$VALUES ('ready', 2, '2030-01-01 00:01:33.001+00'::timestamptz)$$, 'c is ready again after a 1 s backoff');
SELECT outbox_c AS outbox_c FROM (SELECT count(*) AS outbox_c FROM flowforge.outbox_message WHERE task_run_id = :'c1') s \gset
SELECT is(flowforge.tick() -> 'dispatched', '0'::jsonb, 'tick() during the backoff dispatches nothing');
SELECT flowforge_test.advance_clock('999 milliseconds') \gset
SELECT is(flowforge.tick() -> 'dispatched', '0'::jsonb, 'nor 1 ms before it is due');
SELECT is((SELECT count(*) FROM flowforge.outbox_message WHERE task_run_id = :'c1'), :'outbox_c'::bigint,
    'no outbox row for c yet');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is(flowforge.tick() -> 'dispatched', '1'::jsonb, 'tick() when it is due dispatches c');
SELECT results_eq(
    format($$SELECT tr.state::text, tr.lease_owner::text, m.attempt_snapshot, m.fencing_token_snapshot = tr.fencing_token
             FROM flowforge.task_run tr JOIN flowforge.outbox_message m ON m.task_run_id = tr.id
             WHERE tr.id = %L ORDER BY m.created_at DESC, m.fencing_token_snapshot DESC LIMIT 1$$, :'c1'),
    $$VALUES ('running', 'dispatch', 2, true)$$, 'c is running for dispatch, its newest row is attempt 2 under its token');

-- ------------------------------------------------------- a queue turned push: its backlog, and a conflicting row
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge_test.define_single('pl', '{"queue": "pq2"}') \gset
SELECT flowforge.start_run('pl', '{"n": 1}') AS r2 \gset
SELECT flowforge.start_run('pl', '{"n": 2}') AS r3 \gset
SELECT id AS x FROM flowforge.task_run WHERE workflow_run_id = :'r2' \gset
SELECT id AS y FROM flowforge.task_run WHERE workflow_run_id = :'r3' \gset
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE task_run_id IN (:'x', :'y')), 0,
    'a pull queue''s ready tasks get no outbox rows');
SELECT is(flowforge_test.task_state(:'r2', 'only'), 'ready', 'they stay ready for claim');
-- A row already holding x's next generation: the dispatch insert must skip it, not fail.
INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange, routing_key, payload,
                                      fencing_token_snapshot, attempt_snapshot, created_at, next_attempt_at)
VALUES ('00000000-0000-0000-0000-000000000001', :'x', :'r2', 'ex.two', 'rk.two', '{"pre": true}', 1, 1, flowforge.now(),
        flowforge.now());
SELECT lives_ok($$SELECT flowforge.configure_queue('pq2', 'ex.two', 'rk.two')$$,
    'making the queue push dispatches its backlog; a conflicting generation row is skipped, not an error');
SELECT results_eq(
    format($$SELECT tr.state::text, tr.fencing_token::bigint, m.payload
             FROM flowforge.task_run tr JOIN flowforge.outbox_message m ON m.task_run_id = tr.id WHERE tr.id = %L$$, :'x'),
    $$VALUES ('running', 1::bigint, '{"pre": true}'::jsonb)$$,
    'x: dispatched, and the existing row for its generation was kept (ON CONFLICT DO NOTHING)');
SELECT results_eq(
    format($$SELECT exchange::text, routing_key::text, fencing_token_snapshot FROM flowforge.outbox_message
             WHERE task_run_id = %L$$, :'y'),
    $$VALUES ('ex.two', 'rk.two', 1::bigint)$$, 'y: one row with the queue''s exchange and routing key');

SELECT lives_ok($$SELECT flowforge.configure_queue('pq2')$$, 'configure_queue(pq2) with no exchange: pull again');
SELECT results_eq($$SELECT exchange, routing_key FROM flowforge.queue WHERE name = 'pq2'$$,
    $$VALUES (NULL::varchar, NULL::varchar)$$, 'the queue row has no exchange');
SELECT flowforge.start_run('pl', '{"n": 3}') AS r4 \gset
SELECT is(flowforge_test.task_state(:'r4', 'only'), 'ready', 'a new task of a pull queue is left for claim');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE workflow_run_id = :'r4'), 0, 'and gets no outbox row');
SELECT is(flowforge.tick() -> 'dispatched', '0'::jsonb, 'tick() does not dispatch pull-queue tasks');

-- ------------------------------------------------------- exactly one row per generation, overall
SELECT is((SELECT count(*) - count(DISTINCT (task_run_id, fencing_token_snapshot)) FROM flowforge.outbox_message), 0::bigint,
    'no generation has two outbox rows');
SELECT is(
    (SELECT count(*) FROM flowforge.outbox_message m
     WHERE m.payload <> '{"pre": true}' AND NOT EXISTS (
         SELECT 1 FROM flowforge.task_run_event e
         WHERE e.task_run_id = m.task_run_id AND e.kind = 'dispatched' AND e.fencing_token = m.fencing_token_snapshot)),
    0::bigint, 'every outbox row belongs to a "dispatched" event of the same generation');

-- ------------------------------------------------------- take_outbox
-- Each row is taken under a short committed lease (no lock held across broker
-- I/O): taken rows are not offered again until the lease runs out — which is
-- how a daemon that died after publishing gets its rows back, once more.
SELECT throws_ok('SELECT * FROM flowforge.take_outbox(0)', 'FF003', NULL, 'take_outbox(0): FF003');
SELECT throws_ok('SELECT * FROM flowforge.take_outbox(10001)', 'FF003', NULL, 'take_outbox(10001): FF003');
SELECT throws_ok('SELECT * FROM flowforge.take_outbox(NULL)', 'FF003', NULL, 'take_outbox(NULL): FF003');
SELECT throws_ok($$SELECT * FROM flowforge.take_outbox(10, '0 seconds')$$, 'FF003', NULL, 'a lease under a second: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.take_outbox(10, '1 hour 1 second')$$, 'FF003', NULL, 'a lease over an hour: FF003');
-- Several rows became available at the same instant here: any of them is "the oldest".
CREATE TEMP TABLE first_taken AS SELECT * FROM flowforge.take_outbox(1);
SELECT results_eq(
    $$SELECT id, exchange, routing_key, message_id, payload, created_at FROM first_taken$$,
    $$SELECT m.id, m.exchange::text, m.routing_key::text, m.task_run_id || ':' || m.fencing_token_snapshot, m.payload,
             m.created_at
      FROM flowforge.outbox_message m WHERE m.id = (SELECT id FROM first_taken)
        AND m.created_at = (SELECT min(created_at) FROM flowforge.outbox_message WHERE published_at IS NULL)$$,
    'take_outbox(1): an oldest available row, message_id <task_run_id>:<fencing_token>');
SELECT is((SELECT next_attempt_at - flowforge.now() FROM flowforge.outbox_message WHERE id = (SELECT id FROM first_taken)),
    interval '30 seconds', 'the taken row is leased for 30 seconds');
SELECT is((SELECT count(*)::int FROM flowforge.take_outbox(3)), 3, 'at most batch rows');
CREATE TEMP TABLE taken_rest AS SELECT id FROM flowforge.take_outbox(100);
SELECT is((SELECT count(*)::int FROM taken_rest WHERE id IN (SELECT id FROM first_taken)), 0,
    'a row under its lease is not offered again');
SELECT is((SELECT count(*)::int FROM taken_rest) + 4,
          (SELECT count(*)::int FROM flowforge.outbox_message WHERE published_at IS NULL),
    'every other unpublished row is, once');
SELECT is((SELECT count(*)::int FROM flowforge.take_outbox(100)), 0, 'while every lease runs, nothing is offered');
SELECT flowforge_test.advance_clock('30 seconds') \gset
SELECT results_eq(
    $$SELECT id FROM flowforge.take_outbox(100) ORDER BY id$$,
    $$SELECT id FROM flowforge.outbox_message WHERE published_at IS NULL ORDER BY id$$,
    'once the leases ran out (a daemon died after publishing), every unpublished row is offered again');

-- ------------------------------------------------------- mark_published
SELECT id AS m_a FROM flowforge.outbox_message WHERE task_run_id = :'a1' \gset
SELECT id AS m_y FROM flowforge.outbox_message WHERE task_run_id = :'y' \gset
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT is(flowforge.mark_published(ARRAY[:'m_a', :'m_y']::uuid[]), 2, 'mark_published stamps the given rows: 2');
SELECT results_eq(
    format($$SELECT published_at FROM flowforge.outbox_message WHERE id IN (%L, %L)$$, :'m_a', :'m_y'),
    $$VALUES ('2030-01-03 00:00:00+00'::timestamptz), ('2030-01-03 00:00:00+00'::timestamptz)$$,
    'published_at is the (FlowForge) clock''s now');
SELECT flowforge_test.advance_clock('1 hour') \gset
SELECT is(flowforge.mark_published(ARRAY[:'m_a']::uuid[]), 0, 'a row already published is not stamped again: 0');
SELECT is((SELECT published_at FROM flowforge.outbox_message WHERE id = :'m_a'), '2030-01-03 00:00:00+00'::timestamptz,
    'its published_at is kept');
SELECT id AS m_b FROM flowforge.outbox_message WHERE task_run_id = :'b1' AND fencing_token_snapshot = 1 \gset
SELECT is(flowforge.mark_published(ARRAY[:'m_a', :'m_b', gen_random_uuid()]::uuid[]), 1,
    'published, unpublished and unknown ids together: only the unpublished one counts');
SELECT is(flowforge.mark_published(ARRAY[]::uuid[]), 0, 'an empty array: 0');
SELECT is(flowforge.mark_published(NULL), 0, 'NULL: 0');
CREATE TEMP TABLE taken_after AS SELECT id FROM flowforge.take_outbox(100);
SELECT is((SELECT count(*)::int FROM taken_after WHERE id IN (:'m_a', :'m_b', :'m_y')), 0,
    'take_outbox no longer returns published rows');
SELECT is((SELECT count(*)::int FROM taken_after),
          (SELECT count(*)::int FROM flowforge.outbox_message WHERE published_at IS NULL),
    'and still returns every other unpublished row');

-- ------------------------------------------------------- defer_outbox
-- A message the broker refused waits 2^attempts seconds (at most 5 minutes),
-- so refused messages cannot keep newer ones from being taken.
SELECT flowforge_test.advance_clock('30 seconds') \gset
SELECT t.id AS m_refused FROM flowforge.take_outbox(1) t \gset
SELECT is(flowforge.defer_outbox(ARRAY[:'m_refused']::uuid[], 'unroutable: NO_ROUTE'), 1, 'defer_outbox defers one row: 1');
SELECT is((SELECT count(*)::int FROM flowforge.take_outbox(100) t WHERE t.id = :'m_refused'), 0,
    'a deferred row is not offered by take_outbox');
SELECT results_eq(
    format($$SELECT publish_attempts, next_attempt_at - flowforge.now(), last_error FROM flowforge.outbox_message WHERE id = %L$$, :'m_refused'),
    $$VALUES (1, interval '1 second', 'unroutable: NO_ROUTE'::text)$$,
    'the attempt is counted, the error kept, the first wait is 1 second');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is((SELECT count(*)::int FROM flowforge.take_outbox(100) t WHERE t.id = :'m_refused'), 1,
    'once its wait has passed it is offered again');
SELECT count(flowforge.defer_outbox(ARRAY[:'m_refused']::uuid[], 'x')) AS deferrals FROM generate_series(1, 20) \gset
SELECT is((SELECT next_attempt_at - flowforge.now() FROM flowforge.outbox_message WHERE id = :'m_refused'),
    interval '5 minutes', 'the wait doubles and stops at 5 minutes');
SELECT is(flowforge.defer_outbox(ARRAY[:'m_a']::uuid[], 'x'), 0, 'a published row is not deferred: 0');

SELECT * FROM finish();
ROLLBACK;
