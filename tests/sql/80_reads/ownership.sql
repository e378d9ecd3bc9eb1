-- Ownership (issue 19, seed 002): every entity says who created it, from the
-- caller's identity and never from an argument or a setting — a login's role
-- name, or for a gateway call the API key's prefix whichever gateway login
-- carried it; user-facing reads of runs are scoped to created_by = caller for
-- the member role, while viewer, admin and owner read the whole organization;
-- the worker protocol (claims, completions, events sent to a run, a trigger's
-- starts) is not creator-scoped. Logins are roles of their own (session_user),
-- as in production; two gateway logins share one key.
BEGIN;
SELECT plan(55);
SELECT flowforge_test.freeze_clock('2030-03-01 00:00:00+00');

SELECT lives_ok($$SELECT flowforge.create_organization('own-a', 'Ownership A'), flowforge.create_organization('own-b', 'Ownership B')$$,
                'fixture: two organizations');
SELECT flowforge_test.login(l, 'own-a', r)
FROM (VALUES ('ff_own_m1', 'member'), ('ff_own_m2', 'member'), ('ff_own_viewer', 'viewer'), ('ff_own_admin', 'admin'),
             ('ff_own_owner', 'owner')) AS x(l, r);
SELECT flowforge_test.login('ff_own_b', 'own-b', 'member');
CREATE ROLE ff_own_gw1 NOLOGIN;
CREATE ROLE ff_own_gw2 NOLOGIN;
GRANT flowforge_gateway TO ff_own_gw1, ff_own_gw2;
CREATE TEMP TABLE keys AS SELECT flowforge.create_api_key('own-a', 'own member key', 'member') AS member_key,
                                 flowforge.create_api_key('own-a', 'own admin key', 'admin') AS admin_key;
SELECT split_part(member_key, '_', 1) || '_' || split_part(member_key, '_', 2) AS member_prefix, member_key, admin_key
FROM keys \gset

-- ------------------------------------------------------------------ created_by from the caller
SELECT is(flowforge_test.as_login('ff_own_m1', $$SELECT to_jsonb(flowforge.define_workflow(
              '{"name": "own_dag", "tasks": [{"key": "a", "queue": "own-q"}]}'))$$) ? 'sqlstate', false,
          'm1 defines own_dag');
SELECT is((SELECT created_by FROM flowforge.workflow WHERE name = 'own_dag'), 'ff_own_m1', 'the definition records m1 as its creator');
SELECT is(flowforge_test.as_login('ff_own_m2', $q$SELECT to_jsonb(flowforge.define_workflow($j${"name": "own_machine",
    "kind": "statemachine", "initial": "open", "states": {"open": {"on": {"close": "closed"}}, "closed": {"final": true}}}$j$))$q$)
          ? 'sqlstate', false, 'm2 defines own_machine');
CREATE TEMP TABLE runs (k text PRIMARY KEY, id uuid);
INSERT INTO runs SELECT 'r1', (flowforge_test.as_login('ff_own_m1', $$SELECT to_jsonb(flowforge.start_run('own_dag'))$$) #>> '{}')::uuid;
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs SELECT 'r2', (flowforge_test.as_login('ff_own_m2', $$SELECT to_jsonb(flowforge.start_run('own_dag'))$$) #>> '{}')::uuid;
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs SELECT 'm2', (flowforge_test.as_login('ff_own_m2', $$SELECT to_jsonb(flowforge.start_run('own_machine'))$$) #>> '{}')::uuid;
SELECT flowforge_test.advance_clock('1 second');
-- One key, two gateway logins: the run is the key's, whichever login carried it.
INSERT INTO runs SELECT 'g1', (flowforge_test.as_gateway('ff_own_gw1', :'member_key',
    $$SELECT to_jsonb(flowforge.start_run('own_dag'))$$) #>> '{}')::uuid;
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs SELECT 'g2', (flowforge_test.as_gateway('ff_own_gw2', :'member_key',
    $$SELECT to_jsonb(flowforge.start_run('own_dag'))$$) #>> '{}')::uuid;
SELECT is((SELECT count(*)::int FROM runs WHERE id IS NOT NULL), 5, 'fixture: five runs started (m1, m2 twice, the member key twice)');
SELECT results_eq(
    $$SELECT k, e.created_by, coalesce(r.created_by, m.created_by) FROM runs
      JOIN flowforge.engine_run e ON e.run_id = runs.id
      LEFT JOIN flowforge.workflow_run r ON r.id = runs.id LEFT JOIN flowforge.machine_run m ON m.run_id = runs.id
      ORDER BY k$$,
    format($$VALUES ('g1', %1$L, %1$L), ('g2', %1$L, %1$L), ('m2', 'ff_own_m2', 'ff_own_m2'),
                    ('r1', 'ff_own_m1', 'ff_own_m1'), ('r2', 'ff_own_m2', 'ff_own_m2')$$, :'member_prefix'),
    'the directory and the engine''s run row record the caller: a login by its role, a gateway call by its key''s prefix');
SELECT is((SELECT actor FROM flowforge.audit_log WHERE action = 'start' AND entity_id = (SELECT id FROM runs WHERE k = 'g2')::text),
          'ff_own_gw2 via key ' || :'member_prefix', 'the audit log still names the gateway login that carried the key');

-- Never from a setting: whatever a caller SETs, created_by is its own.
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs SELECT 's1', (flowforge_test.as_login('ff_own_m1', $$SELECT to_jsonb(x.id) FROM (
    SELECT set_config('flowforge.principal', 'ff_own_m2', true) AS a, set_config('flowforge.actor', 'ff_own_m2', true) AS b,
           set_config('flowforge.created_by', 'ff_own_m2', true) AS c, set_config('flowforge.gateway', 'ff_own_m2', true) AS d,
           flowforge.start_run('own_dag') AS id) x$$) #>> '{}')::uuid;
SELECT results_eq($$SELECT e.created_by, r.created_by FROM flowforge.engine_run e JOIN flowforge.workflow_run r ON r.id = e.run_id
                    WHERE e.run_id = (SELECT id FROM runs WHERE k = 's1')$$,
                  $$VALUES ('ff_own_m1'::text, 'ff_own_m1'::text)$$, 'settings a caller SET do not change whose run it is');
-- Never from an argument: no API function takes a created_by, updated_by or deleted_by.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      CROSS JOIN LATERAL unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[coalesce(cardinality(p.proargnames), 0)])))
                         AS a(name, mode)
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proname !~ '^_' AND a.mode IN ('i', 'b', 'v')
        AND a.name ~ '(created|updated|deleted)_by|actor|principal'$$,
    'no API function has an argument that could say who the caller is');
SELECT is(flowforge_test.error_of($$CREATE ROLE ffk_0123456789ab NOLOGIN;
                                   SELECT flowforge.add_member('own-a', 'ffk_0123456789ab', 'member')$$) ~ '^FF003 ',
          true, 'add_member refuses a login named like an API key prefix (it would share a gateway key''s runs)');

-- ------------------------------------------------------------------ list_runs: who reads what
CREATE TEMP TABLE seen AS
SELECT who, flowforge_test.as_login(who::name, $$SELECT coalesce(jsonb_agg(id), '[]') FROM flowforge.list_runs()$$) AS ids
FROM unnest(ARRAY['ff_own_m1', 'ff_own_m2', 'ff_own_viewer', 'ff_own_admin', 'ff_own_owner', 'ff_own_b']) AS who;
SELECT is((SELECT ids FROM seen WHERE who = 'ff_own_m1'),
          jsonb_build_array((SELECT id FROM runs WHERE k = 's1'), (SELECT id FROM runs WHERE k = 'r1')),
          'a member (m1) lists the runs it created, newest first, and nothing else');
SELECT is((SELECT ids FROM seen WHERE who = 'ff_own_m2'),
          jsonb_build_array((SELECT id FROM runs WHERE k = 'm2'), (SELECT id FROM runs WHERE k = 'r2')),
          'm2 lists its two runs, of both engines');
SELECT is((SELECT ids FROM seen WHERE who = w), (SELECT jsonb_agg(x.run_id ORDER BY x.created_at DESC, x.id DESC)
                                                   FROM flowforge.engine_run x JOIN flowforge.organization o ON o.id = x.organization_id
                                                   WHERE o.slug = 'own-a'),
          format('%s lists every run of the organization', w))
FROM unnest(ARRAY['ff_own_viewer', 'ff_own_admin', 'ff_own_owner']) AS w;
SELECT is((SELECT ids FROM seen WHERE who = 'ff_own_b'), '[]'::jsonb, 'a member of another organization lists none of them');
SELECT is(flowforge_test.as_gateway('ff_own_gw1', :'member_key', $$SELECT jsonb_agg(id ORDER BY id) FROM flowforge.list_runs()$$),
          (SELECT jsonb_agg(id ORDER BY id) FROM runs WHERE k IN ('g1', 'g2')),
          'the member key lists the runs started with it, through either gateway login');
SELECT is(flowforge_test.as_gateway('ff_own_gw2', :'admin_key', $$SELECT to_jsonb(count(*)) FROM flowforge.list_runs()$$),
          (SELECT to_jsonb(count(*)) FROM flowforge.engine_run x JOIN flowforge.organization o ON o.id = x.organization_id
           WHERE o.slug = 'own-a'), 'an admin key lists the whole organization');
SELECT is(flowforge_test.as_login('ff_own_m1', $$SELECT to_jsonb(count(*)) FROM flowforge.list_runs(creator => 'ff_own_m2')$$),
          '0'::jsonb, 'a member asking for another creator''s runs gets none (the scope and the filter both hold)');
SELECT is(flowforge_test.as_login('ff_own_viewer', $$SELECT jsonb_agg(id ORDER BY created_at DESC) FROM flowforge.list_runs(creator => 'ff_own_m2')$$),
          jsonb_build_array((SELECT id FROM runs WHERE k = 'm2'), (SELECT id FROM runs WHERE k = 'r2')),
          'a viewer filters by creator');

-- ------------------------------------------------------------------ one run: get_run, run_events, resolve_run(_id), fan_out_output
SELECT id AS r2 FROM runs WHERE k = 'r2' \gset
SELECT id AS r1 FROM runs WHERE k = 'r1' \gset
SELECT gen_random_uuid() AS nobody \gset
CREATE TEMP TABLE refusal AS
SELECT f, replace(flowforge_test.as_login('ff_own_m1', format(f, :'r2')) ->> 'message', :'r2', '<id>') AS theirs,
          replace(flowforge_test.as_login('ff_own_m1', format(f, :'nobody')) ->> 'message', :'nobody', '<id>') AS unknown,
          flowforge_test.as_login('ff_own_m1', format(f, :'r2')) ->> 'sqlstate' AS code
FROM unnest(ARRAY['SELECT flowforge.get_run(%L)', 'SELECT to_jsonb(count(*)) FROM flowforge.run_events(%L)',
                  'SELECT flowforge.resolve_run(%L)', 'SELECT to_jsonb(flowforge.resolve_run_id(%L))',
                  'SELECT to_jsonb(count(*)) FROM flowforge.fan_out_output(%L, ''a'')',
                  'SELECT to_jsonb(1) FROM (SELECT flowforge.cancel_run(%L)) x',
                  'SELECT to_jsonb(1) FROM (SELECT flowforge.retry_run(%L)) x',
                  'SELECT to_jsonb(1) FROM (SELECT flowforge.delete_run(%L)) x']) AS f;
SELECT results_eq($$SELECT f, code, theirs = unknown FROM refusal ORDER BY f$$,
                  $$SELECT f, 'FF001', true FROM refusal ORDER BY f$$,
                  'another member''s run is FF001 for m1 with the message of a run that does not exist: get_run, '
                  'run_events, resolve_run, resolve_run_id, fan_out_output, cancel_run, retry_run, delete_run');
SELECT is(flowforge_test.as_login('ff_own_m1', format($$SELECT to_jsonb(flowforge.resolve_run_id(%L))$$, left(:'r2', 8))) ->> 'sqlstate',
          'FF001', 'nor does a prefix of its id resolve for m1');
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT flowforge.get_run(%L) -> ''created_by''', :'r1')), '"ff_own_m1"'::jsonb,
          'm1 reads its own run (created_by shown)');
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT to_jsonb(count(*) > 0) FROM flowforge.run_events(%L)', :'r1')), 'true'::jsonb,
          'and its history');
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT to_jsonb(flowforge.resolve_run_id(%L))', left(:'r1', 8))),
          to_jsonb(:'r1'::uuid), 'and resolves its prefix');
SELECT is(flowforge_test.as_login(w::name, format('SELECT flowforge.get_run(%L) -> ''created_by''', :'r2')), '"ff_own_m2"'::jsonb,
          format('%s reads m2''s run', w))
FROM unnest(ARRAY['ff_own_viewer', 'ff_own_admin', 'ff_own_owner']) AS w;
SELECT is(flowforge_test.as_login('ff_own_viewer', format('SELECT to_jsonb(count(*) > 0) FROM flowforge.run_events(%L)', :'r2')),
          'true'::jsonb, 'the viewer reads m2''s history');
SELECT is(flowforge_test.as_gateway('ff_own_gw1', :'member_key', format('SELECT flowforge.get_run(%L) -> ''created_by''', :'r2')) ->> 'sqlstate',
          'FF001', 'a member key cannot read a login''s run');
SELECT is(flowforge_test.as_gateway('ff_own_gw2', :'member_key', format('SELECT flowforge.get_run(%L) -> ''created_by''',
              (SELECT id FROM runs WHERE k = 'g1'))), to_jsonb(:'member_prefix'::text),
          'it reads the run it started through the other gateway login');
SELECT is(flowforge_test.as_login('ff_own_b', format('SELECT flowforge.get_run(%L)', :'r1')) ->> 'sqlstate', 'FF001',
          'another organization''s member: FF001 as before');
SELECT is(flowforge.get_run(:'r2') ->> 'created_by', 'ff_own_m2', 'the operator reads any run');
-- The admin acts on anyone's run; a member on its own.
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT to_jsonb(1) FROM (SELECT flowforge.cancel_run(%L)) x', :'r1')),
          '1'::jsonb, 'm1 cancels its own run');
SELECT results_eq(format($$SELECT e.updated_by, r.updated_by, r.state::text FROM flowforge.engine_run e
                           JOIN flowforge.workflow_run r ON r.id = e.run_id WHERE e.run_id = %L$$, :'r1'),
                  $$VALUES ('ff_own_m1'::text, 'ff_own_m1'::text, 'cancelled'::text)$$,
                  'updated_by records who cancelled it, on the directory and the run row');
SELECT is(flowforge_test.as_login('ff_own_admin', format('SELECT to_jsonb(1) FROM (SELECT flowforge.cancel_run(%L)) x', :'r2')),
          '1'::jsonb, 'an admin cancels m2''s run');
SELECT is((SELECT updated_by FROM flowforge.engine_run WHERE run_id = :'r2'), 'ff_own_admin', 'recorded as the admin''s change');

-- ------------------------------------------------------------------ the worker protocol is not creator-scoped
SELECT id AS g1 FROM runs WHERE k = 'g1' \gset
CREATE TEMP TABLE claimed AS
SELECT flowforge_test.as_login('ff_own_m1', $$SELECT jsonb_agg(to_jsonb(c) ORDER BY c.workflow_run_id)
                                            FROM flowforge.claim(ARRAY['own-q'], 'm1-worker', '1 minute', 10) c$$) AS got;
SELECT is((SELECT jsonb_agg(e -> 'workflow_run_id') FROM claimed, jsonb_array_elements(got) e),
          (SELECT jsonb_agg(id ORDER BY id) FROM runs WHERE k IN ('g1', 'g2', 's1')),
          'm1''s worker claims the ready tasks of every creator''s runs (the member key''s two and its own; r1 and r2 are cancelled)');
SELECT is(flowforge_test.as_login('ff_own_m1', format($$SELECT to_jsonb(flowforge.complete(%L, %s, '{"by": "m1"}'))$$,
              e ->> 'task_run_id', e ->> 'fencing_token')) ? 'sqlstate', false, 'and completes one of them')
FROM claimed, jsonb_array_elements(got) e WHERE (e ->> 'workflow_run_id')::uuid = :'g1';
SELECT is(flowforge_test.run_state(:'g1'), 'succeeded', 'the key''s run succeeded by m1''s worker');
SELECT is(flowforge_test.as_login('ff_own_m1', format($$SELECT flowforge.send_event(%L, 'close') -> 'state'$$, (SELECT id FROM runs WHERE k = 'm2'))),
          '"closed"'::jsonb, 'm1 sends an event to m2''s machine run (events sent to a run are the worker protocol)');
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT flowforge.get_run(%L)', (SELECT id FROM runs WHERE k = 'm2'))) ->> 'sqlstate',
          'FF001', 'though m1 still cannot read it');
-- A trigger's starts: the run belongs to the trigger's creator, whoever fires it.
SELECT is(flowforge_test.as_login('ff_own_m2', $$SELECT to_jsonb(flowforge.create_trigger('own-hook', 'webhook', 'start', 'own_dag',
              '{"secret": "0123456789abcdef"}'))$$) ? 'sqlstate', false, 'm2 creates a start trigger');
SELECT (flowforge_test.as_login('ff_own_m1', $$SELECT flowforge.fire_trigger('own-hook', '{"x": 1}')$$) ->> 'run_id') AS fired \gset
SELECT results_eq(format($$SELECT e.created_by, e.triggered_by::text, f.created_by FROM flowforge.engine_run e
                           JOIN flowforge.trigger_firing f ON f.id = e.trigger_firing_id WHERE e.run_id = %L$$, :'fired'),
                  $$VALUES ('ff_own_m2'::text, 'own-hook'::text, 'ff_own_m1'::text)$$,
                  'm1 fires m2''s trigger: the firing records m1, the run belongs to m2 (the trigger''s creator)');
SELECT is(flowforge_test.as_login('ff_own_m2', format('SELECT flowforge.get_run(%L) -> ''triggered_by''', :'fired')), '"own-hook"'::jsonb,
          'm2 reads the run its trigger started');
SELECT is(flowforge_test.as_login('ff_own_m1', format('SELECT flowforge.get_run(%L)', :'fired')) ->> 'sqlstate', 'FF001',
          'm1, who fired it, does not');
SELECT is(flowforge_test.as_login('ff_own_m2', $$SELECT to_jsonb(count(*)) FROM flowforge.list_runs(trigger_name => 'own-hook')$$),
          '1'::jsonb, 'm2 lists it by its trigger');
SELECT is((SELECT created_by FROM flowforge.trigger_firing WHERE run_id = :'fired'::uuid), 'ff_own_m1', 'the firing is m1''s');

-- Other entities: a queue, a trigger, an agent say who made them.
SELECT is(flowforge_test.as_login('ff_own_admin', $$SELECT to_jsonb(1) FROM (SELECT flowforge.configure_queue('own-q')) x$$),
          '1'::jsonb, 'the admin configures own-q');
SELECT results_eq($$SELECT q.created_by, q.updated_by FROM flowforge.queue q JOIN flowforge.organization o ON o.id = q.organization_id
                    WHERE o.slug = 'own-a' AND q.name = 'own-q'$$,
                  $$VALUES ('ff_own_admin'::text, 'ff_own_admin'::text)$$, 'the queue records the admin');
SELECT is(flowforge_test.as_login('ff_own_m1', $$SELECT to_jsonb(1) FROM (SELECT flowforge.configure_queue('own-q', dispatch_lease => '1 minute')) x$$),
          '1'::jsonb, 'm1 configures it again');
SELECT results_eq($$SELECT q.created_by, q.updated_by FROM flowforge.queue q JOIN flowforge.organization o ON o.id = q.organization_id
                    WHERE o.slug = 'own-a' AND q.name = 'own-q'$$,
                  $$VALUES ('ff_own_admin'::text, 'ff_own_m1'::text)$$, 'created_by stays, updated_by is m1');
SELECT is((SELECT created_by FROM flowforge.scheduled_trigger WHERE name = 'own-hook'), 'ff_own_m2', 'the trigger records m2');
SELECT is(flowforge_test.as_gateway('ff_own_gw1', :'member_key', $$SELECT to_jsonb(flowforge.register_agent('own-agent'))$$) ? 'sqlstate',
          false, 'an agent registers through the gateway');
SELECT is((SELECT created_by FROM flowforge.agent WHERE name = 'own-agent'), :'member_prefix', 'the agent records the key');

SELECT * FROM finish();
ROLLBACK;
