-- Agents: register_agent creates or updates by name (and makes the agent
-- active), validates its info; agent_heartbeat tells the agent its status;
-- the effective status is the database's call — inactive once the heartbeat
-- is older than 3 x the declared interval (or setting.agent_timeout) — and
-- the same rule decides claims (claim_work and the DAG's claim) and what
-- list_agents shows; a draining agent holding nothing is drained; tick()
-- makes dead agents inactive and releases their bindings.
BEGIN;
SELECT plan(57);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

CREATE FUNCTION pg_temp.shown(p_name text) RETURNS text LANGUAGE sql AS $$
    SELECT a.status FROM flowforge.list_agents() a WHERE a.name = p_name
$$;
CREATE FUNCTION pg_temp.declared(p_name text) RETURNS text LANGUAGE sql AS $$
    SELECT a.status::text FROM flowforge.agent a WHERE a.name = p_name
$$;

-- ------------------------------------------------------------- register_agent
SELECT flowforge.register_agent('a1', $${"http_address": "http://a1:8080", "grpc_address": "a1:9090",
    "infra_address": "10.0.0.1", "version": "1.2.3", "binary_path": "/usr/bin/agent", "type": "local",
    "labels": {"gpu": true, "region": "eu"}, "heartbeat_interval": "10 seconds"}$$) AS a1 \gset
SELECT results_eq(
    format($$SELECT name::text, status::text, http_address, grpc_address, infra_address, agent_version::text, binary_path,
                    agent_type::text, metadata, heartbeat_interval, last_heartbeat_at, created_by
             FROM flowforge.agent WHERE id = %L$$, :'a1'),
    $$VALUES ('a1', 'active', 'http://a1:8080', 'a1:9090', '10.0.0.1', '1.2.3', '/usr/bin/agent', 'local',
              '{"gpu": true, "region": "eu"}'::jsonb, interval '10 seconds', '2030-01-01 00:00:00+00'::timestamptz,
              session_user::text COLLATE "default")$$,
    'register_agent creates the agent: its info, labels as metadata, heartbeat interval, active, heartbeaten now');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE entity = 'agent' AND entity_id = 'a1' AND action = 'register'), 1,
          'registering is audited');
SELECT flowforge.set_agent_status('a1', 'draining') \gset
SELECT flowforge_test.advance_clock('5 seconds') \gset
SELECT is(flowforge.register_agent('a1', '{"version": "1.2.4"}'), :'a1'::uuid, 'registering the same name again: the same agent');
SELECT results_eq(
    $$SELECT status::text, agent_version::text, http_address, agent_type::text, metadata, heartbeat_interval, last_heartbeat_at,
             updated_at FROM flowforge.agent WHERE name = 'a1'$$,
    $$VALUES ('active', '1.2.4', NULL::text, 'remote', '{}'::jsonb, NULL::interval, '2030-01-01 00:00:05+00'::timestamptz,
              '2030-01-01 00:00:05+00'::timestamptz)$$,
    'it is updated from the new info (a restarted agent re-registers) and active again');
SELECT is((SELECT count(*)::int FROM flowforge.agent WHERE name = 'a1'), 1, 'still one agent of that name');
SELECT isnt(flowforge.register_agent('a2'), :'a1'::uuid, 'another name, another agent (info defaults to {})');

SELECT throws_ok($$SELECT flowforge.register_agent(NULL)$$, 'FF003', NULL, 'register_agent: a NULL name is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('')$$, 'FF003', NULL, 'register_agent: an empty name is FF003');
SELECT throws_ok(format('SELECT flowforge.register_agent(%L)', repeat('n', 201)), 'FF003', NULL,
                 'register_agent: a name over 200 characters is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '[]')$$, 'FF003', NULL, 'register_agent: info not an object is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"hostname": "x"}')$$, 'FF003', NULL, 'register_agent: an unknown info field is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"labels": ["gpu"]}')$$, 'FF003', NULL, 'register_agent: labels not an object is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"type": "cloud"}')$$, 'FF003', NULL, 'register_agent: an unknown type is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"heartbeat_interval": "soon"}')$$, 'FF003', NULL,
                 'register_agent: a heartbeat_interval that is no duration is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"heartbeat_interval": "500 milliseconds"}')$$, 'FF003', NULL,
                 'register_agent: a heartbeat_interval under a second is FF003');
SELECT throws_ok($$SELECT flowforge.register_agent('a3', '{"heartbeat_interval": "2 hours"}')$$, 'FF003', NULL,
                 'register_agent: a heartbeat_interval over an hour is FF003');
SELECT is((SELECT count(*)::int FROM flowforge.agent WHERE name IN ('a3', '')), 0, 'no refused registration wrote an agent');

-- ----------------------------------------------------------- agent_heartbeat
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(flowforge.agent_heartbeat('a2', '{"cpu_percent": 12.5, "memory_percent": 40, "gpu": [{"util": 3}]}'), 'active',
          'agent_heartbeat returns the status: active');
SELECT results_eq($$SELECT metrics, last_heartbeat_at FROM flowforge.agent WHERE name = 'a2'$$,
    $$VALUES ('{"cpu_percent": 12.5, "memory_percent": 40, "gpu": [{"util": 3}]}'::jsonb, '2030-01-01 00:00:06+00'::timestamptz)$$,
    'it stores the metrics as reported and the heartbeat time');
SELECT is(flowforge.agent_heartbeat('a2'), 'active', 'a heartbeat without metrics');
SELECT is((SELECT metrics ->> 'cpu_percent' FROM flowforge.agent WHERE name = 'a2'), '12.5', 'keeps the last metrics');
SELECT flowforge.set_agent_status('a2', 'draining') \gset
SELECT is(flowforge.agent_heartbeat('a2'), 'draining', 'a draining agent learns it from its heartbeat');
SELECT throws_ok($$SELECT flowforge.agent_heartbeat('nobody')$$, 'FF001', NULL, 'agent_heartbeat of an unknown agent: FF001');
SELECT throws_ok($$SELECT flowforge.agent_heartbeat('a2', '[1]')$$, 'FF003', NULL, 'agent_heartbeat with metrics not an object: FF003');

-- ----------------------------------------------------------- set_agent_status
SELECT throws_ok($$SELECT flowforge.set_agent_status('a2', 'paused')$$, 'FF003', NULL, 'set_agent_status: an unknown status is FF003');
SELECT throws_ok($$SELECT flowforge.set_agent_status('a2', NULL)$$, 'FF003', NULL, 'set_agent_status: a NULL status is FF003');
SELECT throws_ok($$SELECT flowforge.set_agent_status('nobody', 'draining')$$, 'FF001', NULL, 'set_agent_status of an unknown agent: FF001');
SELECT is(pg_temp.declared('a2'), 'draining', 'the refused calls changed nothing');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE entity = 'agent' AND entity_id = 'a2' AND action = 'set_status'), 1,
          'a status change is audited');

-- ---------------------------------------------- draining: given nothing, drained
SELECT flowforge_test.define_graph_single('sr_work', '{"queue": "qsr"}') \gset
SELECT flowforge_test.define_single('sr_dag', '{"queue": "qsr"}') \gset
SELECT flowforge.start_run('sr_work') AS gw \gset
SELECT flowforge.start_run('sr_dag') AS dg \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'a2')), 0, 'claim_work gives a draining agent nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qsr'], 'a2')), 0, 'claim (the DAG''s) gives a draining agent nothing');
SELECT is((SELECT last_claim_at FROM flowforge.agent WHERE name = 'a2'), '2030-01-01 00:00:06+00'::timestamptz,
          'last_claim_at records that it still asks');
SELECT is(pg_temp.shown('a2'), 'drained', 'list_agents: a draining agent holding nothing is drained');
SELECT flowforge.set_agent_status('a2', 'active') \gset
SELECT work_item_id AS held, fencing_token AS held_tok FROM flowforge.claim_work(ARRAY['qsr'], 'a2') \gset
SELECT flowforge.set_agent_status('a2', 'draining') \gset
SELECT results_eq($$SELECT status, declared_status, holding FROM flowforge.list_agents() WHERE name = 'a2'$$,
    $$VALUES ('draining', 'draining', 1::bigint)$$, 'list_agents: draining while it holds a work item');
SELECT flowforge.complete_work(:'held', :'held_tok') \gset
SELECT results_eq($$SELECT status, holding FROM flowforge.list_agents() WHERE name = 'a2'$$,
    $$VALUES ('drained', 0::bigint)$$, 'list_agents: drained once it finished what it held');
SELECT flowforge.set_agent_status('a2', 'active') \gset
SELECT is((SELECT task_key FROM flowforge.claim(ARRAY['qsr'], 'a2')), 'only', 'active again: the DAG''s claim gives it the task');
SELECT results_eq($$SELECT status, holding FROM flowforge.list_agents() WHERE name = 'a2'$$,
    $$VALUES ('active', 1::bigint)$$, 'list_agents counts a running task run it holds too');
SELECT flowforge.start_run('sr_work') AS gw2 \gset
SELECT flowforge.set_agent_status('a2', 'inactive') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'a2')), 0, 'claim_work gives an inactive agent nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'never-registered')), 1,
          'a worker that never registered claims as before');

-- ----------------------------------- liveness: 3 x the interval, or the setting
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.register_agent('fast', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT flowforge.register_agent('plain') \gset
SELECT flowforge_test.advance_clock('30 seconds') \gset
SELECT is(pg_temp.shown('fast'), 'active', 'a heartbeat exactly 3 intervals old: still active');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT results_eq($$SELECT status, declared_status FROM flowforge.list_agents() WHERE name = 'fast'$$,
    $$VALUES ('inactive', 'active')$$,
    'past 3 x its 10 s interval: shown inactive whatever it last declared (nobody swept it yet)');
SELECT flowforge.start_run('sr_work') AS gw3 \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'fast')), 0, 'and claim_work gives it nothing');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qsr'], 'fast')), 0, 'nor does claim');
SELECT is(flowforge.agent_heartbeat('fast'), 'active', 'until it heartbeats again (it was never swept)');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'fast')), 1, 'then it is given work again');
SELECT is(pg_temp.shown('plain'), 'active', 'no declared interval, 30 s old: active (setting.agent_timeout is 60 s)');
SELECT flowforge_test.set_clock('2030-01-02 00:01:00+00') \gset
SELECT is(pg_temp.shown('plain'), 'active', 'exactly 60 s old: still active');
SELECT flowforge_test.advance_clock('1 millisecond') \gset
SELECT is(pg_temp.shown('plain'), 'inactive', 'past setting.agent_timeout: inactive');
UPDATE flowforge.setting SET agent_timeout = '2 minutes';
SELECT is(pg_temp.shown('plain'), 'active', 'the setting is read, not a constant: with agent_timeout 2 minutes it is active');
UPDATE flowforge.setting SET agent_timeout = '60 seconds';

-- -------------------------------------------------- tick() sweeps dead agents
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.register_agent('doomed', '{"heartbeat_interval": "5 seconds"}') \gset
SELECT flowforge.register_agent('alive', '{"heartbeat_interval": "5 seconds"}') \gset
INSERT INTO flowforge.affinity_binding (organization_id, affinity_key, agent_id, created_by) VALUES
    (flowforge.current_organization(), 'key:d1', 'doomed', 'test'), (flowforge.current_organization(), 'key:d2', 'doomed', 'test'),
    (flowforge.current_organization(), 'key:a1', 'alive', 'test');
SELECT flowforge_test.advance_clock('10 seconds') \gset
SELECT flowforge.agent_heartbeat('alive') \gset
SELECT flowforge_test.advance_clock('6 seconds') \gset
SELECT results_eq($$SELECT name, status, bindings FROM flowforge.list_agents() WHERE name IN ('alive', 'doomed') ORDER BY name$$,
    $$VALUES ('alive', 'active', 1::bigint), ('doomed', 'inactive', 2::bigint)$$,
    'before the sweep: doomed is shown inactive but still holds its bindings');
SELECT is((flowforge.tick() ->> 'agents_inactive')::int >= 1, true, 'tick() reports agents made inactive');
SELECT results_eq($$SELECT name::text, status::text, updated_by FROM flowforge.agent WHERE name IN ('alive', 'doomed') ORDER BY name$$,
    $$VALUES ('alive', 'active', NULL::text), ('doomed', 'inactive', 'tick')$$,
    'tick() marked the dead agent inactive, the live one untouched');
SELECT is((SELECT array_agg(affinity_key ORDER BY affinity_key) FROM flowforge.affinity_binding WHERE agent_id IN ('alive', 'doomed')),
          ARRAY['key:a1'], 'and released the dead agent''s bindings (and only those)');
SELECT is(flowforge.agent_heartbeat('doomed'), 'inactive', 'a swept agent''s heartbeat tells it it is inactive');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['qsr'], 'doomed')), 0, 'and it is given nothing');
SELECT flowforge.register_agent('doomed', '{"heartbeat_interval": "5 seconds"}') \gset
SELECT is(pg_temp.shown('doomed'), 'active', 'registering again brings it back');
SELECT flowforge.set_agent_status('alive', 'inactive') \gset
SELECT is((SELECT count(*)::int FROM flowforge.affinity_binding WHERE agent_id = 'alive'), 0,
          'set_agent_status inactive releases the agent''s bindings too');

SELECT * FROM finish();
ROLLBACK;
