-- flowforge serve's reads (issue 20): run_causes (what caused each run of a
-- page), queue_stats (both kinds of queue, live counts and the last minute's
-- throughput), metrics (the caller's organization's figures; counters over a
-- window) and metrics_all (the operator's, every organization's). Tenants see
-- only their own figures; metrics_all is flowforge_readonly's alone.
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(46);
SELECT flowforge_test.freeze_clock('2030-05-01 12:00:00+00');

-- ------------------------------------------------------------------ fixture: the default organization's work
SELECT isnt(flowforge_test.define_diamond('sv_diamond', '{"queue": "sv-dag", "max_attempts": 3, "backoff": "1 second"}'),
            NULL, 'fixture: sv_diamond (queue sv-dag)');
SELECT isnt(flowforge_test.define_review_loop('sv_graph', '{"queue": "sv-graph"}'), NULL, 'fixture: sv_graph (queue sv-graph)');
CREATE TEMP TABLE r AS SELECT flowforge.start_run('sv_diamond') AS d1, flowforge.start_run('sv_diamond') AS d2,
                              flowforge.start_run('sv_graph') AS g;
SELECT isnt(flowforge.create_trigger('sv-hook', 'webhook', 'start', 'sv_diamond', '{"secret": "sv-secret-0123456789"}'),
            NULL, 'fixture: trigger sv-hook');
CREATE TEMP TABLE fired AS SELECT flowforge.fire_trigger('sv-hook', '{"n": 1}') AS started,
                                  flowforge.fire_trigger('sv-nobody', '{}') AS refused;
-- Ten seconds later the three ready tasks of sv-dag are claimed (d1's a, d2's a, the triggered run's a): d1's
-- completes, d2's fails once (a retry, ready again at 12:00:11), the triggered run's stays running.
SELECT flowforge_test.advance_clock('10 seconds');
CREATE TEMP TABLE cl AS SELECT * FROM flowforge.claim(ARRAY['sv-dag'], 'sv-worker', '1 hour', 1000);
CREATE TEMP TABLE c1 AS SELECT * FROM cl WHERE workflow_run_id = (SELECT d1 FROM r);
CREATE TEMP TABLE c2 AS SELECT * FROM cl WHERE workflow_run_id = (SELECT d2 FROM r);
SELECT lives_ok($$SELECT flowforge.complete((SELECT task_run_id FROM c1), (SELECT fencing_token FROM c1), '{}')$$,
                'fixture: d1''s a completed');
SELECT lives_ok($$SELECT flowforge.fail((SELECT task_run_id FROM c2), (SELECT fencing_token FROM c2), 'flaky', true)$$,
                'fixture: d2''s a failed once (scheduled again in 1 s)');
SELECT flowforge_test.advance_clock('20 seconds');

-- ------------------------------------------------------------------ run_causes
SELECT results_eq(
    $$SELECT kind, parent_run_id, triggered_by, created_by FROM flowforge.run_causes(ARRAY[(SELECT d1 FROM r), (SELECT g FROM r)])
      ORDER BY kind$$,
    $$VALUES ('dag'::text, NULL::uuid, NULL::text, 'postgres'::text), ('graph', NULL, NULL, 'postgres')$$,
    'run_causes: each run''s kind, parent, trigger and creator');
SELECT results_eq(
    $$SELECT run_id, triggered_by, trigger_firing_id FROM flowforge.run_causes(ARRAY[((SELECT started FROM fired) ->> 'run_id')::uuid])$$,
    $$SELECT ((SELECT started FROM fired) ->> 'run_id')::uuid, 'sv-hook'::text, ((SELECT started FROM fired) ->> 'firing_id')::uuid$$,
    'a triggered run: its trigger and its firing');
SELECT is((SELECT count(*)::int FROM flowforge.run_causes(ARRAY[gen_random_uuid(), (SELECT d2 FROM r)])), 1,
          'an unknown id is left out');
SELECT is((SELECT count(*)::int FROM flowforge.run_causes('{}')), 0, 'no ids: no rows');
SELECT throws_ok($$SELECT * FROM flowforge.run_causes(NULL)$$, 'FF003', 'run_ids must be an array of at most 1000 run ids',
                 'run_ids NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.run_causes(ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 1001)))$$,
                 'FF003', 'run_ids must be an array of at most 1000 run ids', 'more than 1000 ids: FF003');

-- ------------------------------------------------------------------ queue_stats
-- At 12:00:30: sv-dag holds d1's b and c (ready since 12:00:10), d2's a (ready again at 12:00:11) and the
-- triggered run's a (running); sv-graph the graph's first visit (pending since 12:00:00).
SELECT results_eq(
    $$SELECT queue, unit_kind, delivery, ready, scheduled, running, oldest_ready_at, oldest_ready_age,
             claims_last_minute, completions_last_minute, failures_last_minute
      FROM flowforge.queue_stats()$$,
    $$VALUES ('sv-dag'::text, 'task_run'::text, 'pull'::text, 3::bigint, 0::bigint, 1::bigint,
              '2030-05-01 12:00:10+00'::timestamptz, interval '20 seconds', 3::bigint, 1::bigint, 0::bigint),
             ('sv-graph', 'work_item', 'pull', 1, 0, 0, '2030-05-01 12:00:00+00', interval '30 seconds', 0, 0, 0)$$,
    'queue_stats: each queue of both kinds with ready, scheduled, running, the oldest ready unit and its age, and '
    'the last minute''s claims, completions and failures for good');
SELECT flowforge_test.advance_clock('1 minute');
SELECT results_eq($$SELECT queue, claims_last_minute, completions_last_minute FROM flowforge.queue_stats()$$,
                  $$VALUES ('sv-dag'::text, 0::bigint, 0::bigint), ('sv-graph', 0, 0)$$,
                  'a minute later the throughput is 0: only the last minute counts');
SELECT flowforge_test.set_clock('2030-05-01 12:00:30+00');
SELECT lives_ok($$SELECT flowforge.configure_queue('sv-push', 'flowforge.tasks')$$, 'fixture: a push queue with no work');
SELECT results_eq($$SELECT queue, unit_kind, delivery, ready FROM flowforge.queue_stats() WHERE queue = 'sv-push'$$,
                  $$VALUES ('sv-push'::text, 'task_run'::text, 'push'::text, 0::bigint)$$,
                  'a configured queue with no work is listed, with its delivery');

-- ------------------------------------------------------------------ metrics: gauges
CREATE TEMP TABLE m AS SELECT * FROM flowforge.metrics();
SELECT results_eq(
    $$SELECT metric, labels ->> 'queue', labels ->> 'unit', value FROM m WHERE metric LIKE 'queue%' ORDER BY 2, 3, 1$$,
    $$VALUES ('queue_oldest_ready_age_seconds', 'sv-dag', 'task_run', 20::float8), ('queue_ready', 'sv-dag', 'task_run', 3),
             ('queue_running', 'sv-dag', 'task_run', 1), ('queue_scheduled', 'sv-dag', 'task_run', 0),
             ('queue_oldest_ready_age_seconds', 'sv-graph', 'work_item', 30), ('queue_ready', 'sv-graph', 'work_item', 1),
             ('queue_running', 'sv-graph', 'work_item', 0), ('queue_scheduled', 'sv-graph', 'work_item', 0)$$,
    'metrics(): per queue and unit kind ready, scheduled, running and the oldest ready unit''s age in seconds');
SELECT results_eq(
    $$SELECT labels ->> 'engine', labels ->> 'state', value FROM m WHERE metric = 'runs' ORDER BY 1, 2$$,
    $$SELECT x.engine, x.state, count(*)::float8 FROM (
          SELECT 'dag' AS engine, state::text FROM flowforge.workflow_run
          UNION ALL SELECT 'graph', status::text FROM flowforge.graph_run
          UNION ALL SELECT 'statemachine', status::text FROM flowforge.machine_run) x GROUP BY 1, 2 ORDER BY 1, 2$$,
    'runs per engine and state: the run tables'' counts');
SELECT is((SELECT array_agg(DISTINCT organization) FROM m WHERE metric <> 'window_end'), ARRAY['default'],
          'every figure names its organization');
SELECT results_eq($$SELECT organization, labels, value FROM m WHERE metric = 'window_end'$$,
                  $$VALUES (NULL::text, '{}'::jsonb, extract(epoch FROM '2030-05-01 12:00:25+00'::timestamptz)::float8)$$,
                  'and one last row, window_end with no organization, says where the window ends');
SELECT is((SELECT array_agg(DISTINCT window_end) FROM m), ARRAY['2030-05-01 12:00:25+00'::timestamptz],
          'window_end: now less the 5 s settle delay');
SELECT is((SELECT count(*)::int FROM m WHERE metric IN ('claims', 'completions', 'failures', 'retries', 'trigger_firings')), 0,
          'since NULL (the first scrape): nothing counted');

-- ------------------------------------------------------------------ metrics: windows
SELECT results_eq(
    $$SELECT metric, labels ->> 'queue', value FROM flowforge.metrics('2030-05-01 11:59:00+00')
      WHERE metric IN ('claims', 'completions', 'failures', 'retries') ORDER BY 1$$,
    $$VALUES ('claims', 'sv-dag', 3::float8), ('completions', 'sv-dag', 1), ('retries', 'sv-dag', 1)$$,
    'metrics(since): claims, completions and retries of the window, per queue (failures none: no row for 0)');
SELECT results_eq(
    $$SELECT labels ->> 'outcome', value FROM flowforge.metrics('2030-05-01 11:59:00+00') WHERE metric = 'trigger_firings'
      ORDER BY 1$$,
    $$VALUES ('refused', 1::float8), ('started', 1)$$, 'trigger firings of the window by outcome');
SELECT is((SELECT count(*)::int FROM flowforge.metrics('2030-05-01 12:00:05+00')
           WHERE metric IN ('claims', 'completions', 'retries', 'trigger_firings')), 3,
          'a window after the firings: only the claims, completions and retries of 12:00:10');
SELECT is((SELECT count(*)::int FROM flowforge.metrics('2030-05-01 12:00:20+00')
           WHERE metric IN ('claims', 'completions', 'failures', 'retries', 'trigger_firings')), 0,
          'a window after them all: nothing (a scrape never counts a window twice)');
SELECT is((SELECT count(*)::int FROM flowforge.metrics('2030-05-01 12:00:29+00')
           WHERE metric IN ('claims', 'completions', 'failures', 'retries', 'trigger_firings')), 0,
          'since after window_end: an empty window, no error');
SELECT flowforge_test.set_clock('2030-05-01 14:00:30+00');
SELECT is((SELECT count(*)::int FROM flowforge.metrics('2030-05-01 11:00:00+00') WHERE metric = 'claims'), 0,
          'since more than an hour back is clamped to the last hour (the claims of 12:00:10 are outside it)');
SELECT is((SELECT DISTINCT window_end FROM flowforge.metrics('2030-05-01 11:00:00+00')), '2030-05-01 14:00:25+00'::timestamptz,
          'window_end follows the clock');
SELECT flowforge_test.set_clock('2030-05-01 12:00:30+00');
-- A failure for good: the three ready tasks claimed again, d1's b fails with retryable => false.
CREATE TEMP TABLE c3 AS SELECT * FROM flowforge_test.claim_key((SELECT d1 FROM r), 'b', 'sv-dag');
SELECT lives_ok($$SELECT flowforge.fail((SELECT task_run_id FROM c3), (SELECT fencing_token FROM c3), 'bad input', false)$$,
                'fixture: d1''s b fails for good');
SELECT flowforge_test.advance_clock('10 seconds');
SELECT results_eq(
    $$SELECT metric, value FROM flowforge.metrics('2030-05-01 12:00:25+00') WHERE metric IN ('claims', 'failures', 'retries')
      ORDER BY 1$$,
    $$VALUES ('claims', 3::float8), ('failures', 1)$$, 'a failure for good is a failure, not a retry');

-- ------------------------------------------------------------------ agent_holdings
SELECT isnt(flowforge.register_agent('sv-worker', '{"heartbeat_interval": "1 hour"}'), NULL, 'fixture: agent sv-worker');
CREATE TEMP TABLE gi AS SELECT * FROM flowforge_test.claim_item(flowforge_test.item_of((SELECT g FROM r)), 'sv-worker');
SELECT results_eq(
    $$SELECT agent, what, unit_id, run_id, name, queue, since, lease_expires_at FROM flowforge.agent_holdings()$$,
    $$VALUES ('sv-worker'::text, 'task_run'::text, (SELECT task_run_id FROM cl WHERE workflow_run_id NOT IN (SELECT d1 FROM r UNION SELECT d2 FROM r)),
              ((SELECT started FROM fired) ->> 'run_id')::uuid, 'a'::text, 'sv-dag'::text,
              '2030-05-01 12:00:10+00'::timestamptz, '2030-05-01 13:00:10+00'::timestamptz),
             ('sv-worker', 'work_item', (SELECT work_item_id FROM gi), (SELECT g FROM r), 'draft', 'sv-graph',
              '2030-05-01 12:00:40+00', (SELECT lease_expires_at FROM gi))$$,
    'agent_holdings: the running task run the agent''s lease owns and the work item dispatched to it, with since and '
    'lease expiry (tasks of a worker that is not an agent are not listed)');
SELECT is((SELECT count(*)::int FROM flowforge.agent_holdings(1)), 1, 'max_rows bounds it');
SELECT throws_ok($$SELECT * FROM flowforge.agent_holdings(0)$$, 'FF003', 'max_rows must be between 1 and 10000',
                 'max_rows 0: FF003');

-- ------------------------------------------------------------------ tenants and the operator
SELECT isnt(flowforge.create_organization('sv-other', 'Other'), NULL, 'fixture: organization sv-other');
SELECT flowforge_test.login('ff_t20_sv_other', 'sv-other', 'owner');
SELECT flowforge_test.login('ff_t20_sv_viewer', 'default', 'viewer');
SELECT is(flowforge_test.as_login('ff_t20_sv_other', $$SELECT jsonb_build_array(
              flowforge.define_workflow('{"name": "sv_theirs", "tasks": [{"key": "only", "queue": "theirs"}]}'),
              flowforge.start_run('sv_theirs'))$$) ->> 'sqlstate', NULL, 'fixture: sv-other starts a run of its own');
SELECT is(flowforge_test.as_login('ff_t20_sv_other',
              $$SELECT jsonb_agg(DISTINCT organization) FILTER (WHERE metric <> 'window_end')
                       || jsonb_agg(DISTINCT labels ->> 'queue') FILTER (WHERE metric = 'queue_ready')
                FROM flowforge.metrics('2030-05-01 11:59:00+00')$$),
          '["sv-other", "theirs"]'::jsonb, 'a tenant''s metrics are its organization''s only (its queue, not ours)');
SELECT is(flowforge_test.as_login('ff_t20_sv_other', $$SELECT to_jsonb(count(*)) FROM flowforge.queue_stats() WHERE queue LIKE 'sv-%'$$),
          '0'::jsonb, 'nor does its queue_stats show our queues');
SELECT is(flowforge_test.as_login('ff_t20_sv_other', $$SELECT to_jsonb(count(*)) FROM flowforge.agent_holdings()$$),
          '0'::jsonb, 'nor agent_holdings our agents');
SELECT is(flowforge_test.as_login('ff_t20_sv_other', format($$SELECT to_jsonb(count(*)) FROM flowforge.run_causes(ARRAY[%L::uuid])$$,
                                                         (SELECT d1 FROM r))),
          '0'::jsonb, 'nor does run_causes answer for our runs');
SELECT is(flowforge_test.as_login('ff_t20_sv_viewer', $$SELECT to_jsonb(count(*)) FROM flowforge.metrics() WHERE metric = 'runs'$$) > '0',
          true, 'a viewer reads its organization''s metrics');
SELECT is(flowforge_test.as_login('ff_t20_sv_other', $$SELECT to_jsonb(count(*)) FROM flowforge.metrics_all()$$) ->> 'sqlstate',
          '42501', 'metrics_all is not a tenant''s, not even an owner''s: it may not call it (42501)');
CREATE ROLE ff_t20_sv_gateway NOLOGIN;
GRANT flowforge_gateway TO ff_t20_sv_gateway;
CREATE TEMP TABLE keys AS SELECT flowforge.create_api_key('default', 'sv key', 'admin') AS admin_key;
SELECT is(flowforge_test.as_gateway('ff_t20_sv_gateway', (SELECT admin_key FROM keys),
              $$SELECT to_jsonb(count(*)) FROM flowforge.metrics_all()$$) ->> 'sqlstate', '42501',
          'nor the gateway''s (42501)');
GRANT flowforge_readonly TO ff_t20_sv_gateway;
SELECT is(flowforge_test.as_gateway('ff_t20_sv_gateway', (SELECT admin_key FROM keys),
              $$SELECT to_jsonb(count(*)) FROM flowforge.metrics_all()$$) ->> 'sqlstate', 'FF007',
          'a gateway login that is also in flowforge_readonly acts for its key, not as the operator (FF007)');
CREATE ROLE ff_t20_sv_dba NOLOGIN;
GRANT flowforge_readonly TO ff_t20_sv_dba;
SELECT is(flowforge_test.as_login('ff_t20_sv_dba',
              $$SELECT jsonb_agg(DISTINCT organization ORDER BY organization) FROM flowforge.metrics_all() WHERE metric = 'runs'$$),
          '["default", "sv-other"]'::jsonb, 'metrics_all, for flowforge_readonly: every organization''s, each labelled');
SELECT is(flowforge_test.as_login('ff_t20_sv_dba',
              $$SELECT to_jsonb(sum(value)) FROM flowforge.metrics_all('2030-05-01 11:59:00+00') WHERE metric = 'claims'$$),
          '6'::jsonb, 'and its windows count every organization''s events');

SELECT * FROM finish();
ROLLBACK;
