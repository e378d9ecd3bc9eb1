-- worker_load (0026): per holder of work and per registered agent — kind,
-- effective status, what it holds (per queue), since when, the nearest lease
-- expiry, its heartbeat, its pins. And the twin test of the liveness rule the
-- views copy inline (worker_load, why_not_ready's pins): the read role may not
-- call flowforge._agent_status, so both copies are compared with it.
BEGIN;
SELECT plan(8);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT columns_are('flowforge', 'worker_load', ARRAY[
    'organization_id', 'organization', 'worker', 'kind', 'status', 'declared_status', 'task_runs', 'work_items',
    'by_queue', 'oldest_held_since', 'nearest_lease_expiry', 'last_heartbeat_at', 'heartbeat_age',
    'heartbeat_interval', 'last_claim_at', 'pins', 'agent_type', 'agent_version', 'labels'],
    'worker_load has its columns');

SELECT flowforge.register_agent('wl-agent', '{"heartbeat_interval": "10 seconds", "version": "1.2", "labels": {"zone": "a"}}') \gset
SELECT flowforge.register_agent('wl-idle') \gset
SELECT flowforge.set_agent_status('wl-idle', 'draining') \gset
-- wl-agent: 2 task runs on wl-a at 00:00 (60-second lease), a work item on wl-b at 00:00:05 (lease 1 minute).
SELECT flowforge_test.define_single('wl_single', '{"queue": "wl-a", "affinity": "run"}') \gset
SELECT count(flowforge.start_run('wl_single')) FROM generate_series(1, 3) \gset
SELECT count(*) FROM flowforge.claim(ARRAY['wl-a'], 'wl-agent', '60 seconds', 2) \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:05+00') \gset
SELECT flowforge_test.define_graph_single('wl_graph', '{"queue": "wl-b"}') \gset
SELECT flowforge.start_run('wl_graph') \gset
SELECT count(*) FROM flowforge.claim_work(ARRAY['wl-b'], 'wl-agent', '1 minute') \gset
-- An unregistered worker holds a task run of its own.
SELECT flowforge_test.define_single('wl_plain', '{"queue": "wl-c"}') \gset
SELECT flowforge.start_run('wl_plain') \gset
SELECT count(*) FROM flowforge.claim(ARRAY['wl-c'], 'wl-worker', '30 seconds') \gset
-- A push task (held by dispatch) and a fanning task (held by flowforge:fan-out).
SELECT flowforge.configure_queue('wl-push', 'wl-exchange', NULL, '2 minutes') \gset
SELECT flowforge_test.define_single('wl_push', '{"queue": "wl-push"}') \gset
SELECT flowforge.start_run('wl_push') \gset
SELECT flowforge.define_workflow($${"name": "wl_map", "tasks": [
    {"key": "m", "queue": "wl-map", "map": {"over": "$.run.items"}}]}$$) \gset
SELECT flowforge.start_run('wl_map', '{"items": [1]}') \gset
SELECT flowforge_test.set_clock('2030-01-01 00:00:20+00') \gset

SELECT results_eq(
    $$SELECT organization, worker, kind, status, declared_status, task_runs, work_items, by_queue, oldest_held_since,
             nearest_lease_expiry, last_heartbeat_at, heartbeat_age, pins
      FROM flowforge.worker_load ORDER BY worker$$,
    $$VALUES ('default'::text, 'dispatch'::text, 'dispatch'::text, NULL::text, NULL::text, 1::bigint, 0::bigint,
              '{"wl-push": {"task_runs": 1}}'::jsonb, '2030-01-01 00:00:05+00'::timestamptz,
              '2030-01-01 00:02:05+00'::timestamptz, NULL::timestamptz, NULL::interval, 0::bigint),
             ('default', 'flowforge:fan-out', 'fan-out', NULL, NULL, 1, 0, '{"wl-map": {"task_runs": 1}}',
              '2030-01-01 00:00:05+00', 'infinity', NULL, NULL, 0),
             ('default', 'wl-agent', 'agent', 'active', 'active', 2, 1,
              '{"wl-a": {"task_runs": 2}, "wl-b": {"work_items": 1}}', '2030-01-01 00:00:00+00',
              '2030-01-01 00:01:00+00', '2030-01-01 00:00:00+00', '00:00:20', 2),
             ('default', 'wl-idle', 'agent', 'drained', 'draining', 0, 0, '{}', NULL, NULL, '2030-01-01 00:00:00+00',
              '00:00:20', 0),
             ('default', 'wl-worker', 'worker', NULL, NULL, 1, 0, '{"wl-c": {"task_runs": 1}}',
              '2030-01-01 00:00:05+00', '2030-01-01 00:00:35+00', NULL, NULL, 0)$$,
    'one row per holder and per agent: an agent with what it holds per queue, since when, until when, its heartbeat and '
    'pins; a draining agent holding nothing is drained; an unregistered worker; the push dispatch; the fan-out holder');

SELECT flowforge_test.set_clock('2030-01-01 00:00:31+00') \gset
SELECT is((SELECT status FROM flowforge.worker_load WHERE worker = 'wl-agent'), 'inactive',
          'three heartbeat intervals (30 s) without a heartbeat: inactive, whatever it declared');
SELECT is((SELECT task_runs FROM flowforge.worker_load WHERE worker = 'wl-agent'), 2::bigint,
          'an inactive agent still shows what it holds until the reaper takes it back');

-- The twin test: every combination of declared status, heartbeat age and interval the rule tells apart,
-- worker_load's status and why_not_ready's pinned agent status against flowforge._agent_status.
SELECT flowforge_test.set_clock('2030-01-01 01:00:00+00') \gset
CREATE TEMP TABLE twin (agent text, status text, age interval, every interval);
INSERT INTO twin VALUES
    ('tw-fresh', 'active', '0 seconds', '10 seconds'), ('tw-29s', 'active', '29 seconds', '10 seconds'),
    ('tw-30s', 'active', '30 seconds', '10 seconds'), ('tw-31s', 'active', '31 seconds', '10 seconds'),
    ('tw-59s-default', 'active', '59 seconds', NULL), ('tw-61s-default', 'active', '61 seconds', NULL),
    ('tw-draining', 'draining', '1 second', '10 seconds'), ('tw-draining-stale', 'draining', '40 seconds', '10 seconds'),
    ('tw-inactive', 'inactive', '0 seconds', '10 seconds'), ('tw-never', 'active', NULL, '10 seconds');
SELECT count(flowforge.register_agent(t.agent)) FROM twin t \gset
UPDATE flowforge.agent a SET status = t.status, last_heartbeat_at = flowforge.now() - t.age, heartbeat_interval = t.every
FROM twin t WHERE a.name = t.agent;
SELECT flowforge.define_workflow($${"name": "tw_pin", "tasks": [{"key": "t", "queue": "tw", "affinity": "$.run.agent"}]}$$) \gset
SELECT count(flowforge.start_run('tw_pin', jsonb_build_object('agent', t.agent))) FROM twin t \gset
INSERT INTO flowforge.affinity_binding (organization_id, affinity_key, agent_id, created_by)
SELECT '00000000-0000-0000-0000-000000000001', 'key:' || t.agent, t.agent, 'test' FROM twin t;
SELECT results_eq(
    $$SELECT w.worker, CASE WHEN w.status = 'drained' THEN 'draining' ELSE w.status END
      FROM flowforge.worker_load w JOIN twin t ON t.agent = w.worker ORDER BY 1$$,
    $$SELECT a.name::text, flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                                   (SELECT s.agent_timeout FROM flowforge.setting s), flowforge.now())
      FROM flowforge.agent a JOIN twin t ON t.agent = a.name ORDER BY 1$$,
    'twin: worker_load''s effective status is _agent_status''s, for every case the rule tells apart');
SELECT results_eq(
    $$SELECT w.detail -> 'affinity' ->> 'pinned_to', w.detail -> 'affinity' ->> 'agent_status'
      FROM flowforge.why_not_ready w JOIN twin t ON w.detail -> 'affinity' ->> 'pinned_to' = t.agent ORDER BY 1$$,
    $$SELECT a.name::text, flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                                   (SELECT s.agent_timeout FROM flowforge.setting s), flowforge.now())
      FROM flowforge.agent a JOIN twin t ON t.agent = a.name ORDER BY 1$$,
    'twin: why_not_ready''s pinned agent status is _agent_status''s too');
SELECT results_eq(
    $$SELECT count(*) FILTER (WHERE s = 'active')::int, count(*) FILTER (WHERE s = 'draining')::int,
             count(*) FILTER (WHERE s = 'inactive')::int
      FROM (SELECT flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval, interval '60 seconds',
                                           flowforge.now()) AS s
            FROM flowforge.agent a JOIN twin t ON t.agent = a.name) x$$,
    $$VALUES (4, 1, 5)$$, 'the twin cases cover active, draining and inactive');

SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.worker_load WHERE worker = 'wl-agent'), 1, 'flowforge_readonly reads worker_load');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
