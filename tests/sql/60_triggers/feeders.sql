-- The daemon's feeders (filesystem, gitpoll) keep their progress in SQL:
--   feeder_triggers(engine_id)            the live, enabled feeder triggers to poll (of the
--                                         organizations that daemon serves, with engine_id)
--   feeder_unfired(trigger_id, ids)       the files / commits not fired yet
--   feeder_fire(trigger_id, id, payload)  fire_trigger for them, the path or sha as delivery id
--   feeder_save_state(trigger_id, state)  a gitpoll trigger's last commit
-- Daemon rights only; refusals FF001 (no such feeder trigger) and FF003.
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(62);
SELECT flowforge_test.freeze_clock('2030-02-01 00:00:00+00');

CREATE TEMP TABLE t (name text PRIMARY KEY, id uuid);
CREATE FUNCTION pg_temp.t(p_name text) RETURNS uuid LANGUAGE sql AS $$ SELECT id FROM t WHERE name = p_name $$;

SELECT isnt(flowforge_test.define_single('fd_job'), NULL, 'fixture: fd_job');
INSERT INTO t VALUES
    ('fd-files', flowforge.create_trigger('fd-files', 'filesystem', 'start', 'fd_job', '{"path": "/in", "pattern": "*.csv"}')),
    ('fd-git', flowforge.create_trigger('fd-git', 'gitpoll', 'start', 'fd_job', '{"repo": "/repo"}')),
    ('fd-off', flowforge.create_trigger('fd-off', 'filesystem', 'start', 'fd_job', '{"path": "/off"}')),
    ('fd-gone', flowforge.create_trigger('fd-gone', 'gitpoll', 'start', 'fd_job', '{"repo": "/gone"}')),
    ('fd-cron', flowforge.create_trigger('fd-cron', 'cron', 'start', 'fd_job', '{"cron": "@daily"}')),
    ('fd-hook', flowforge.create_trigger('fd-hook', 'webhook', 'start', 'fd_job', '{"secret": "fd-secret-0123456789"}'));
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('fd-off', false), flowforge.drop_trigger('fd-gone')$$,
                'fixture: fd-off disabled, fd-gone dropped');
SELECT isnt(flowforge.create_organization('fd-other', 'Other'), NULL, 'fixture: organization fd-other');
SELECT flowforge_test.login('ff_t16_fd_other', 'fd-other', 'admin');
INSERT INTO t SELECT 'theirs', (flowforge_test.as_login('ff_t16_fd_other', $$SELECT to_jsonb(flowforge.create_trigger('fd-files', 'filesystem',
    'start', 'fd_job', '{"path": "/theirs"}')) FROM (SELECT flowforge.define_workflow('{"name": "fd_job", "tasks": [{"key": "only"}]}')) d$$) #>> '{}')::uuid;
SELECT isnt(pg_temp.t('theirs'), NULL, 'fixture: fd-other has a filesystem trigger of the same name');

-- ------------------------------------------------------------------ feeder_triggers
SELECT results_eq(
    $$SELECT trigger_id, organization, name, trigger_type, options, state FROM flowforge.feeder_triggers()$$,
    $$VALUES (pg_temp.t('fd-files'), 'default', 'fd-files', 'filesystem', '{"path": "/in", "pattern": "*.csv"}'::jsonb, NULL::jsonb),
             (pg_temp.t('fd-git'), 'default', 'fd-git', 'gitpoll', '{"repo": "/repo", "branch": "main"}', NULL),
             (pg_temp.t('theirs'), 'fd-other', 'fd-files', 'filesystem', '{"path": "/theirs", "pattern": "*"}', NULL)$$,
    'feeder_triggers(): the live, enabled filesystem and gitpoll triggers of every organization, by organization and name '
    '(not the paused, the dropped, cron or webhook ones)');
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers('fd-daemon-1')), 0,
          'with the id of a daemon that serves nothing yet: none');
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(flowforge.tick('fd-daemon-1') -> 'serving')) >= 2, true,
          'fixture: daemon 1 ticks and serves every organization');
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers('fd-daemon-1')), 3, 'now the daemon polls all three');
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers('fd-daemon-2')), 0, 'another daemon id: none');
SELECT flowforge_test.set_clock('2030-02-01 00:00:20+00');
SELECT is((flowforge.tick('fd-daemon-2') -> 'serving'), '{}'::jsonb, 'fixture: daemon 2 joins (nothing unheld to take)');
SELECT is((SELECT string_agg(key, ',') FROM jsonb_object_keys(flowforge.tick('fd-daemon-1') -> 'serving') key),
          (SELECT id::text FROM flowforge.organization WHERE slug = 'fd-other'), 'fixture: daemon 1 keeps its share, fd-other');
SELECT is((flowforge.tick('fd-daemon-2') -> 'serving') ? '00000000-0000-0000-0000-000000000001', true,
          'fixture: daemon 2 takes the default organization');
SELECT results_eq($$SELECT organization, name FROM flowforge.feeder_triggers('fd-daemon-1')$$, $$VALUES ('fd-other', 'fd-files')$$,
                  'feeder_triggers(engine_id): the triggers of the organizations that daemon serves');
SELECT results_eq($$SELECT organization, name FROM flowforge.feeder_triggers('fd-daemon-2')$$,
                  $$VALUES ('default', 'fd-files'), ('default', 'fd-git')$$, 'and the other daemon''s');
SELECT flowforge_test.set_clock('2030-02-01 00:01:00+00');
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers('fd-daemon-1')) + (SELECT count(*)::int FROM flowforge.feeder_triggers('fd-daemon-2')),
          0, 'leases that lapsed serve nothing (the serving rows are there, their leases over)');
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers()), 3, 'without an engine id: all of them, whoever serves');

-- ------------------------------------------------------------------ feeder_unfired, feeder_fire
SELECT is(flowforge.feeder_unfired(pg_temp.t('fd-files'), ARRAY['/in/b.csv', '/in/a.csv', '/in/c.csv']),
          ARRAY['/in/b.csv', '/in/a.csv', '/in/c.csv'], 'feeder_unfired: nothing fired yet, every id in the order given');
SELECT is(flowforge.feeder_fire(pg_temp.t('fd-files'), '/in/a.csv', '{"path": "/in/a.csv", "size": 12, "mtime": "2030-01-31T23:00:00Z"}',
                                '2030-01-31 23:00+00') ->> 'outcome', 'started', 'feeder_fire: a new file starts a run');
SELECT results_eq(
    $$SELECT f.trigger_id, f.trigger_type::text, f.payload, f.fired_on, f.recorded_at, f.delivery_id::text, f.outcome::text, e.triggered_by::text
      FROM flowforge.trigger_firing f JOIN flowforge.engine_run e ON e.trigger_firing_id = f.id WHERE f.delivery_id = '/in/a.csv'$$,
    $$VALUES (pg_temp.t('fd-files'), 'filesystem', '{"path": "/in/a.csv", "size": 12, "mtime": "2030-01-31T23:00:00Z"}'::jsonb,
              '2030-01-31 23:00+00'::timestamptz, '2030-02-01 00:01+00'::timestamptz, '/in/a.csv', 'started', 'fd-files')$$,
    'the firing: the path as its delivery id, the file''s mtime as fired_on, the run naming the trigger');
SELECT is((SELECT input::jsonb FROM flowforge.workflow_run WHERE id = (SELECT run_id FROM flowforge.trigger_firing WHERE delivery_id = '/in/a.csv')),
          '{"path": "/in/a.csv", "size": 12, "mtime": "2030-01-31T23:00:00Z"}'::jsonb, 'the run''s input: the path, size and mtime');
SELECT is(flowforge.feeder_unfired(pg_temp.t('fd-files'), ARRAY['/in/b.csv', '/in/a.csv', '/in/c.csv']),
          ARRAY['/in/b.csv', '/in/c.csv'], 'feeder_unfired: the fired one is left out (a restarted daemon fires it not again)');
SELECT is(flowforge.feeder_fire(pg_temp.t('fd-files'), '/in/a.csv', '{"path": "/in/a.csv", "size": 99}'),
          (SELECT jsonb_build_object('firing_id', id, 'outcome', 'started', 'run_id', run_id, 'error', NULL, 'duplicate', true)
           FROM flowforge.trigger_firing WHERE delivery_id = '/in/a.csv'),
          'feeder_fire of a file already fired returns the first firing (duplicate) and starts nothing');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'fd-files'), 1, 'one run');
SELECT is(flowforge.feeder_unfired(pg_temp.t('theirs'), ARRAY['/in/a.csv']), ARRAY['/in/a.csv'],
          'delivery ids are per trigger: the other organization''s fd-files has not fired /in/a.csv');
SELECT is(flowforge.feeder_fire(pg_temp.t('theirs'), '/in/a.csv', '{"path": "/theirs/a.csv"}') ->> 'outcome', 'started',
          'the daemon fires any organization''s feeder trigger');
SELECT results_eq(
    $$SELECT o.slug::text, e.organization_id = f.organization_id FROM flowforge.trigger_firing f
      JOIN flowforge.organization o ON o.id = f.organization_id JOIN flowforge.engine_run e ON e.trigger_firing_id = f.id
      WHERE f.trigger_id = pg_temp.t('theirs')$$,
    $$VALUES ('fd-other', true)$$, 'in that trigger''s organization, its run too');
SELECT is(flowforge.feeder_unfired(pg_temp.t('fd-git'), '{}'), '{}'::text[], 'feeder_unfired of no ids: none');
SELECT is(flowforge.feeder_unfired(pg_temp.t('fd-git'), NULL), '{}'::text[], 'of NULL: none');
SELECT is(cardinality(flowforge.feeder_unfired(pg_temp.t('fd-git'), ARRAY(SELECT 'c' || g FROM generate_series(1, 10000) g))), 10000,
          '10,000 ids at once');
SELECT throws_ok(format('SELECT flowforge.feeder_unfired(%L, %L)', pg_temp.t('fd-git'), ARRAY(SELECT 'c' || g FROM generate_series(1, 10001) g)),
                 'FF003', 'at most 10000 delivery ids per call', '10,001: FF003');
SELECT is(flowforge.feeder_unfired(gen_random_uuid(), ARRAY['x']), ARRAY['x'], 'an unknown trigger has fired nothing');
-- Refusals.
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('fd-cron'), 'x', '{}'), 'FF001',
                 format('no feeder trigger %s', pg_temp.t('fd-cron')), 'feeder_fire of a cron trigger: FF001');
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('fd-hook'), 'x', '{}'), 'FF001', NULL,
                 'of a webhook trigger: FF001');
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, %L, %L)', gen_random_uuid(), 'x', '{}'), 'FF001', NULL, 'of no trigger: FF001');
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, NULL, %L)', pg_temp.t('fd-git'), '{}'), 'FF003',
                 'a feeder names what it fires for (the file path, the commit sha)', 'without a delivery id: FF003');
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('fd-git'), repeat('s', 201), '{}'), 'FF003',
                 'delivery_id must be 1 to 200 characters', 'a delivery id over 200 characters: FF003');
SELECT throws_ok(format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('fd-git'), 'big', jsonb_build_object('p', repeat('x', 1048576))),
                 'FF009', NULL, 'a payload over the limit: FF009');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'fd-git'), 0, 'the refusals recorded nothing');
SELECT is(flowforge.feeder_fire(pg_temp.t('fd-off'), '/off/a', '{}') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "trigger ''fd-off'' is disabled"}'::jsonb,
          'a paused feeder trigger: a refused firing (a daemon that listed it before the pause)');
SELECT is(flowforge.feeder_unfired(pg_temp.t('fd-off'), ARRAY['/off/a']), '{}'::text[],
          'and that file counts as fired: it is not fired again once the trigger is enabled');
SELECT is(flowforge.feeder_fire(pg_temp.t('fd-gone'), 'sha-1', '{}') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "no trigger named ''fd-gone''"}'::jsonb,
          'a dropped feeder trigger: refused as a trigger that no longer exists');
SELECT is((SELECT trigger_id FROM flowforge.trigger_firing WHERE trigger_name = 'fd-gone'), NULL, 'a firing naming no trigger');

-- ------------------------------------------------------------------ feeder_save_state
SELECT lives_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', pg_temp.t('fd-git'), '{"sha": "abc123"}'),
                'feeder_save_state: a gitpoll trigger''s last commit');
SELECT results_eq($$SELECT feeder_state, updated_at FROM flowforge.scheduled_trigger WHERE id = pg_temp.t('fd-git')$$,
                  $$VALUES ('{"sha": "abc123"}'::jsonb, '2030-02-01 00:01+00'::timestamptz)$$, 'kept on the trigger''s row');
SELECT is((SELECT state FROM flowforge.feeder_triggers() WHERE trigger_id = pg_temp.t('fd-git')), '{"sha": "abc123"}'::jsonb,
          'and handed back by feeder_triggers (a restarted daemon resumes from it)');
SELECT lives_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', pg_temp.t('fd-git'), '{"sha": "def456"}'), 'saved again');
SELECT is((SELECT state FROM flowforge.feeder_triggers() WHERE trigger_id = pg_temp.t('fd-git')), '{"sha": "def456"}'::jsonb, 'replaced');
SELECT throws_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', pg_temp.t('fd-git'), '["abc"]'), 'FF003', 'state must be a JSON object',
                 'a state that is not an object: FF003');
SELECT throws_ok(format('SELECT flowforge.feeder_save_state(%L, NULL)', pg_temp.t('fd-git')), 'FF003', NULL, 'a NULL state: FF003');
SELECT throws_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', pg_temp.t('fd-git'), jsonb_build_object('p', repeat('x', 1048576))),
                 'FF009', NULL, 'a state over the limit: FF009');
SELECT throws_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', pg_temp.t('fd-cron'), '{}'), 'FF001',
                 format('no feeder trigger %s', pg_temp.t('fd-cron')), 'the state of a cron trigger: FF001');
SELECT throws_ok(format('SELECT flowforge.feeder_save_state(%L, %L)', gen_random_uuid(), '{}'), 'FF001', NULL, 'of no trigger: FF001');
SELECT is((SELECT feeder_state FROM flowforge.scheduled_trigger WHERE id = pg_temp.t('fd-git')), '{"sha": "def456"}'::jsonb,
          'the refusals changed nothing');

-- ------------------------------------------------------------------ who may call them
SELECT results_eq(
    $$SELECT p.proname::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r WHERE r.rolname LIKE 'flowforge\_%'
                                     AND r.rolname NOT IN ('flowforge_owner', 'flowforge_system')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE') ORDER BY 1), ',') COLLATE "default"
      FROM pg_proc p WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proname LIKE 'feeder\_%' ORDER BY 1$$,
    $$VALUES ('feeder_fire', 'flowforge_system', 'flowforge_daemon'), ('feeder_save_state', 'flowforge_system', 'flowforge_daemon'),
             ('feeder_triggers', 'flowforge_system', 'flowforge_daemon'), ('feeder_unfired', 'flowforge_system', 'flowforge_daemon')$$,
    'the feeder functions are the daemon''s only (owned by flowforge_system: they reach every organization)');
CREATE ROLE ff_t16_fd_daemon NOLOGIN;
GRANT flowforge_daemon TO ff_t16_fd_daemon;
SELECT is(flowforge_test.as_login('ff_t16_fd_daemon', format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('fd-git'), 'sha-2', '{"sha": "sha-2"}'))
          ->> 'outcome', 'started', 'a daemon login fires a commit');
SELECT is((SELECT created_by FROM flowforge.trigger_firing WHERE delivery_id = 'sha-2'), 'ff_t16_fd_daemon', 'recorded as the daemon''s');
SELECT flowforge_test.login('ff_t16_fd_member', 'default', 'member');
SELECT is(flowforge_test.as_login('ff_t16_fd_member', $$SELECT jsonb_agg(name) FROM flowforge.feeder_triggers()$$) ->> 'sqlstate', '42501',
          'a tenant login may not list the feeders (every organization''s)');
SELECT is(flowforge_test.as_login('ff_t16_fd_member', format('SELECT flowforge.feeder_fire(%L, %L, %L)', pg_temp.t('theirs'), 'x', '{}')) ->> 'sqlstate',
          '42501', 'nor fire another organization''s trigger through them');

-- ------------------------------------------------------------------ named arguments
SELECT is((SELECT count(*)::int FROM flowforge.feeder_triggers(engine_id => NULL)), 3, 'feeder_triggers(engine_id =>)');
SELECT is(flowforge.feeder_unfired(delivery_ids => ARRAY['sha-2', 'sha-3'], trigger_id => pg_temp.t('fd-git')), ARRAY['sha-3'],
          'feeder_unfired(trigger_id =>, delivery_ids =>)');
SELECT is((flowforge.feeder_fire(payload => '{"sha": "sha-3"}', delivery_id => 'sha-3', trigger_id => pg_temp.t('fd-git'),
                                 fired_on => '2030-01-01 00:00+00')) ->> 'outcome', 'started',
          'feeder_fire(trigger_id =>, delivery_id =>, payload =>, fired_on =>)');
SELECT lives_ok(format('SELECT flowforge.feeder_save_state(state => %L, trigger_id => %L)', '{"sha": "sha-3"}', pg_temp.t('fd-git')),
                'feeder_save_state(trigger_id =>, state =>)');

SELECT * FROM finish();
ROLLBACK;
