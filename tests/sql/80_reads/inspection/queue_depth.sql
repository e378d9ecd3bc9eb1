-- queue_depth (0026): per organization, queue and kind of unit — ready now,
-- running, scheduled later, the oldest ready and its age, claims in the last
-- minute — for both queues (task runs and work items), pull and push; a
-- fan-out's held unit is not counted as running (its children are); flow
-- control's limits, counters, tokens and held-back counts (0028).
BEGIN;
SELECT plan(14);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT columns_are('flowforge', 'queue_depth', ARRAY[
    'organization_id', 'organization', 'unit_kind', 'queue', 'delivery', 'ready', 'running', 'scheduled',
    'oldest_ready_at', 'oldest_ready_age', 'next_scheduled_at', 'claims_last_minute',
    'paused', 'max_running', 'rate', 'flow'], 'queue_depth has its columns (0028 added the flow-control ones at the end)');

-- Task runs on qd-tasks: 4 started, 1 claimed and failed into a 30-second backoff, 1 claimed and running.
SELECT flowforge_test.define_single('qd_single', '{"queue": "qd-tasks", "backoff": "30 seconds"}') \gset
SELECT count(flowforge.start_run('qd_single')) FROM generate_series(1, 4) \gset
SELECT task_run_id AS qd_fail, fencing_token AS qd_fail_tok FROM flowforge.claim(ARRAY['qd-tasks'], 'qd-worker') \gset
SELECT flowforge.fail(:'qd_fail', :'qd_fail_tok', 'boom') \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:10+00') \gset
SELECT count(*) FROM flowforge.claim(ARRAY['qd-tasks'], 'qd-worker') \gset
-- Work items on qd-items: 3 graph runs, 1 item claimed.
SELECT flowforge_test.define_graph_single('qd_graph', '{"queue": "qd-items"}') \gset
SELECT count(flowforge.start_run('qd_graph')) FROM generate_series(1, 3) \gset
SELECT count(*) FROM flowforge.claim_work(ARRAY['qd-items'], 'qd-agent') \gset
-- A push queue: its task dispatched at once (running, in the outbox).
SELECT flowforge.configure_queue('qd-push', 'qd-exchange') \gset
SELECT flowforge_test.define_single('qd_push', '{"queue": "qd-push"}') \gset
SELECT flowforge.start_run('qd_push') \gset
-- A map of 3 on qd-map, max_concurrency 2: its task is held (not running), 2 children ready.
SELECT flowforge.define_workflow($${"name": "qd_map", "tasks": [
    {"key": "m", "queue": "qd-map", "map": {"over": "$.run.items", "max_concurrency": 2}}]}$$) \gset
SELECT flowforge.start_run('qd_map', '{"items": [1, 2, 3]}') \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:20+00') \gset

SELECT results_eq(
    $$SELECT organization, unit_kind, queue, delivery, ready, running, scheduled, oldest_ready_at, oldest_ready_age,
             next_scheduled_at, claims_last_minute
      FROM flowforge.queue_depth ORDER BY unit_kind, queue$$,
    $$VALUES ('default'::text, 'task_run'::text, 'qd-map'::text, 'pull'::text, 0::bigint, 0::bigint, 0::bigint,
              NULL::timestamptz, NULL::interval, NULL::timestamptz, 0::bigint),
             ('default', 'task_run', 'qd-push', 'push', 0, 1, 0, NULL, NULL, NULL, 0),
             ('default', 'task_run', 'qd-tasks', 'pull', 2, 1, 1, '2030-01-01 00:00:00+00', '00:00:20',
              '2030-01-01 00:00:30+00', 2),
             ('default', 'work_item', 'qd-items', 'pull', 2, 1, 0, '2030-01-01 00:00:10+00', '00:00:10', NULL, 1),
             ('default', 'work_item', 'qd-map', 'pull', 2, 0, 0, '2030-01-01 00:00:10+00', '00:00:10', NULL, 0)$$,
    'one row per organization, kind and queue: ready, running, scheduled (the backoff), the oldest ready and its age, '
    'the next scheduled, claims in the last minute; push delivery; a held fan-out task is not running, its children are ready');

SELECT flowforge_test.set_clock('2030-01-01 00:01:05+00') \gset
SELECT results_eq(
    $$SELECT queue, ready, scheduled, claims_last_minute FROM flowforge.queue_depth
      WHERE unit_kind = 'task_run' AND queue = 'qd-tasks'$$,
    $$VALUES ('qd-tasks'::text, 3::bigint, 0::bigint, 1::bigint)$$,
    'a minute on: the backoff is over (ready 3), and only the claim at 00:00:10 is within the last minute');
SELECT flowforge_test.set_clock('2030-01-01 00:02:00+00') \gset
SELECT is((SELECT claims_last_minute FROM flowforge.queue_depth WHERE unit_kind = 'task_run' AND queue = 'qd-tasks'), 0::bigint,
          'two minutes on: no claim in the last minute');

-- A claim done at this clock counts again (the window is flowforge.now()'s).
SELECT count(*) FROM flowforge.claim_work(ARRAY['qd-items'], 'qd-agent') \gset
SELECT results_eq(
    $$SELECT ready, running, claims_last_minute FROM flowforge.queue_depth WHERE unit_kind = 'work_item' AND queue = 'qd-items'$$,
    $$VALUES (1::bigint, 2::bigint, 1::bigint)$$, 'a claim of a work item now: one fewer ready, one more running, counted');

-- A queue with nothing live and no recent claim has no row; an organization's queues are its own.
SELECT flowforge.create_organization('qd-other', 'Another') \gset
INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, created_at)
SELECT :'create_organization', gen_random_uuid(), NULL, 'created', flowforge.now();
SELECT is((SELECT count(*)::int FROM flowforge.queue_depth WHERE organization = 'qd-other'), 0,
          'an organization with no live work has no row');
SELECT is((SELECT count(*)::int FROM flowforge.queue_depth WHERE queue = 'default'), 0,
          'a queue nobody used has no row');

SELECT results_eq(
    $$SELECT paused, max_running, rate, flow FROM flowforge.queue_depth WHERE queue = 'qd-tasks' AND unit_kind = 'task_run'$$,
    $$VALUES (false, NULL::integer, NULL::jsonb, NULL::jsonb)$$,
    'a queue without flow control: not paused, no limit, no rate, no flow facts');

-- Flow control (0028): a queue of max_running 3 and 5 per minute, a concurrency key (max 1 per
-- customer) and a rate-limit key (2 per minute); 4 runs of customer a, 2 of b; one claim of 10.
SELECT flowforge.configure_queue('qd-flow', max_running => 3, rate => '{"limit": 5, "per": "1 minute"}') \gset
SELECT flowforge_test.define_single('qd_flow', '{"queue": "qd-flow", "concurrency": {"key": "$.run.customer", "max": 1},
    "rate_limit": {"key": "qd-api", "limit": 2, "per": "1 minute"}}') \gset
SELECT count(flowforge.start_run('qd_flow', '{"customer": "a"}')) FROM generate_series(1, 4) \gset
SELECT count(flowforge.start_run('qd_flow', '{"customer": "b"}')) FROM generate_series(1, 2) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qd-flow'], 'qd-worker', '30 seconds', 10)), 2,
          'fixture: one claim of 10 takes 2 (one per customer: the key''s max 1; the rate key''s 2 tokens)');
SELECT results_eq(
    $$SELECT ready, running, paused, max_running, rate, flow FROM flowforge.queue_depth WHERE queue = 'qd-flow'$$,
    $$VALUES (4::bigint, 2::bigint, false, 3, '{"limit": 5, "per": "00:01:00", "tokens": 3}'::jsonb,
              '{"running": 2,
                "keys": [{"key": "$.run.customer", "value": "a", "max": 1, "running": 1, "ready": 3, "held_back": 3},
                         {"key": "$.run.customer", "value": "b", "max": 1, "running": 1, "ready": 1, "held_back": 1}],
                "rate_keys": [{"key": "qd-api", "limit": 2, "per": "00:01:00", "tokens": 0, "ready": 4,
                               "held_back": 4}],
                "held_back": {"queue_paused": 0, "queue_concurrency": 3, "queue_rate": 1, "key_concurrency": 4,
                              "key_rate": 4}}'::jsonb)$$,
    'flow: the limits, the running counter, each key''s running and ready and what it holds back, the rate key''s '
    'tokens left (a fixed name has no value), and per rule how many of the 4 ready are held back (queue: 1 slot of 3 '
    'left, 3 tokens of 5)');
SELECT flowforge_test.set_clock('2030-01-01 00:02:30+00') \gset
SELECT is((SELECT (rate ->> 'tokens')::numeric FROM flowforge.queue_depth WHERE queue = 'qd-flow'), 5::numeric,
          'half a minute on, the queue''s bucket is full again (5 per minute, 2 spent at 00:02:00)');
SELECT is((SELECT flow #> '{rate_keys,0,tokens}' FROM flowforge.queue_depth WHERE queue = 'qd-flow'), '1'::jsonb,
          'and the rate key has one of its 2 per minute back');
SELECT flowforge.pause_queue('qd-flow') \gset
SELECT results_eq(
    $$SELECT paused, (flow #>> '{held_back,queue_paused}')::int FROM flowforge.queue_depth WHERE queue = 'qd-flow'$$,
    $$VALUES (true, 4)$$, 'paused: every ready unit is held back');

SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.queue_depth), 6, 'flowforge_readonly reads queue_depth');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
