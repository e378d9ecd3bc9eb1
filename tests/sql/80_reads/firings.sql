-- list_firings: the organization's firings newest first (by the source's
-- fired_on), of one trigger (dropped ones and unknown names included) and/or
-- one outcome, at most max_rows; payloads only for admins and owners. And
-- tenant isolation of triggers and firings: another organization's trigger
-- cannot be fired, listed, paused or dropped, its firings are never listed.
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(45);
SELECT flowforge_test.freeze_clock('2030-03-01 12:00:00+00');

SELECT isnt(flowforge_test.define_single('lf_job'), NULL, 'fixture: lf_job');
SELECT isnt(flowforge_test.define_order('lf_order'), NULL, 'fixture: lf_order');
SELECT isnt(flowforge.create_trigger('lf-hook', 'webhook', 'start', 'lf_job', '{"secret": "lf-secret-0123456789"}'), NULL, 'fixture: lf-hook');
SELECT isnt(flowforge.create_trigger('lf-pay', 'filesystem', 'signal', 'paid', '{"path": "/pay", "run_id_path": "$.run"}'), NULL, 'fixture: lf-pay');
SELECT isnt(flowforge.create_trigger('lf-old', 'gitpoll', 'start', 'lf_job', '{"repo": "/old"}'), NULL, 'fixture: lf-old');
CREATE TEMP TABLE m AS SELECT flowforge.start_run('lf_order') AS run;
-- Firings, each at its own source time (fired_on), out of order on purpose.
CREATE TEMP TABLE f (k text PRIMARY KEY, answer jsonb);
INSERT INTO f VALUES
    ('hook-1', flowforge.fire_trigger('lf-hook', '{"secret_of": "sender 1"}', '2030-03-01 10:00+00', 'h-1')),
    ('hook-3', flowforge.fire_trigger('lf-hook', '{"secret_of": "sender 3"}', '2030-03-01 11:30+00', 'h-3')),
    ('hook-2', flowforge.fire_trigger('lf-hook', '{"secret_of": "sender 2"}', '2030-03-01 11:00+00', 'h-2')),
    ('pay', flowforge.fire_trigger('lf-pay', jsonb_build_object('run', (SELECT run FROM m), 'amount', 200), '2030-03-01 10:30+00')),
    ('pay refused', flowforge.fire_trigger('lf-pay', '{"run": "nope"}', '2030-03-01 10:45+00')),
    ('old', flowforge.fire_trigger('lf-old', '{"sha": "0ld"}', '2030-03-01 09:00+00')),
    ('unknown', flowforge.fire_trigger('lf-nobody', '{"who": "nobody"}', '2030-03-01 09:30+00'));
SELECT lives_ok($$SELECT flowforge.drop_trigger('lf-old')$$, 'fixture: lf-old dropped after its firing');
SELECT results_eq($$SELECT k, answer ->> 'outcome' FROM f ORDER BY k$$,
                  $$VALUES ('hook-1', 'started'), ('hook-2', 'started'), ('hook-3', 'started'), ('old', 'started'), ('pay', 'signalled'),
                           ('pay refused', 'refused'), ('unknown', 'refused')$$, 'fixture: seven firings');

-- ------------------------------------------------------------------ the rows, newest first
SELECT results_eq(
    $$SELECT name, trigger_type, action, event, definition, run_id, result, error, fired_on, recorded_at, delivery_id, payload, created_by
      FROM flowforge.list_firings()$$,
    $$SELECT x.name, x.trigger_type, x.action, x.event, x.definition, (f.answer ->> 'run_id')::uuid, x.result, x.error, x.fired_on::timestamptz,
             '2030-03-01 12:00+00'::timestamptz, x.delivery_id, x.payload::jsonb, 'postgres'::text
      FROM (VALUES (1, 'hook-3', 'lf-hook', 'webhook', 'start', NULL, 'lf_job', 'started', NULL, '2030-03-01 11:30+00', 'h-3', '{"secret_of": "sender 3"}'),
                   (2, 'hook-2', 'lf-hook', 'webhook', 'start', NULL, 'lf_job', 'started', NULL, '2030-03-01 11:00+00', 'h-2', '{"secret_of": "sender 2"}'),
                   (3, 'pay refused', 'lf-pay', 'filesystem', 'signal', 'paid', NULL, 'refused',
                    'the payload names no run at $."run" (found ''nope'') (FF003)', '2030-03-01 10:45+00', NULL, '{"run": "nope"}'),
                   (4, 'pay', 'lf-pay', 'filesystem', 'signal', 'paid', 'lf_order', 'signalled', NULL, '2030-03-01 10:30+00', NULL,
                    jsonb_build_object('run', (SELECT run FROM m), 'amount', 200)::text),
                   (5, 'hook-1', 'lf-hook', 'webhook', 'start', NULL, 'lf_job', 'started', NULL, '2030-03-01 10:00+00', 'h-1', '{"secret_of": "sender 1"}'),
                   (6, 'unknown', 'lf-nobody', NULL, NULL, NULL, NULL, 'refused', 'no trigger named ''lf-nobody''', '2030-03-01 09:30+00', NULL, '{"who": "nobody"}'),
                   (7, 'old', 'lf-old', 'gitpoll', 'start', NULL, 'lf_job', 'started', NULL, '2030-03-01 09:00+00', NULL, '{"sha": "0ld"}'))
           AS x(n, k, name, trigger_type, action, event, definition, result, error, fired_on, delivery_id, payload)
      JOIN f USING (k) ORDER BY x.n$$,
    'list_firings(): every firing of the organization, newest first by the source''s fired_on, with its trigger''s name and type, '
    'the action, the event or the definition''s name, the run, the result and error, both times, the delivery id, the payload '
    '(the caller is an owner) and the actor');
SELECT is((SELECT array_agg(l.id) FROM flowforge.list_firings() l), (SELECT array_agg(t.id ORDER BY t.fired_on DESC) FROM flowforge.trigger_firing t),
          'the ids are the firings'' ids');

-- ------------------------------------------------------------------ filters
SELECT is((SELECT array_agg(delivery_id) FROM flowforge.list_firings('lf-hook')), ARRAY['h-3', 'h-2', 'h-1'],
          'list_firings(trigger_name): one trigger''s firings, newest first');
SELECT is((SELECT array_agg(name || ':' || result) FROM flowforge.list_firings(outcome => 'refused')),
          ARRAY['lf-pay:refused', 'lf-nobody:refused'], 'list_firings(outcome => refused): the firings that caused nothing');
SELECT is((SELECT array_agg(result) FROM flowforge.list_firings('lf-pay', 'signalled')), ARRAY['signalled'], 'both filters at once');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings(outcome => 'failed')), 0, 'an outcome nothing had: no rows');
SELECT is((SELECT array_agg(payload) FROM flowforge.list_firings('lf-old')), ARRAY['{"sha": "0ld"}'::jsonb],
          'a dropped trigger''s firings are still listed by its name');
SELECT is((SELECT array_agg(error) FROM flowforge.list_firings('lf-nobody')), ARRAY['no trigger named ''lf-nobody'''],
          'so are the firings of a name no trigger had');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings('lf-never')), 0, 'a name that never fired: none');
SELECT is((SELECT array_agg(delivery_id) FROM flowforge.list_firings(max_rows => 2, trigger_name => 'lf-hook', outcome => 'started')),
          ARRAY['h-3', 'h-2'], 'list_firings with named arguments, in any order');
SELECT is((SELECT array_agg(delivery_id) FROM flowforge.list_firings(max_rows => 2)), ARRAY['h-3', 'h-2'], 'max_rows: the newest n');
SELECT is((SELECT array_agg(delivery_id) FROM flowforge.list_firings('lf-hook', NULL, 1)), ARRAY['h-3'], 'max_rows with a trigger');
INSERT INTO f SELECT 'bulk-' || g, flowforge.fire_trigger('lf-hook', '{}', '2030-02-01 00:00+00'::timestamptz + g * interval '1 minute')
FROM generate_series(1, 50) g;
SELECT is((SELECT count(*)::int FROM flowforge.list_firings()), 50, 'at most 50 by default (57 firings now)');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings(max_rows => 10000)), 57, 'max_rows 10000');
SELECT is((SELECT min(fired_on) FROM flowforge.list_firings()), '2030-02-01 00:08+00'::timestamptz,
          'the default 50 are the newest: the oldest seven left out');
SELECT throws_ok($$SELECT * FROM flowforge.list_firings(max_rows => 0)$$, 'FF003', 'max_rows must be between 1 and 10000', 'max_rows 0: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.list_firings(max_rows => 10001)$$, 'FF003', NULL, 'max_rows 10001: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.list_firings(max_rows => NULL)$$, 'FF003', NULL, 'max_rows NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.list_firings(outcome => 'ok')$$, 'FF003', 'outcome must be started, signalled, refused or failed',
                 'an unknown outcome: FF003');

-- ------------------------------------------------------------------ who reads payloads
SELECT flowforge_test.login('ff_t16_lf_viewer', 'default', 'viewer');
SELECT flowforge_test.login('ff_t16_lf_member', 'default', 'member');
SELECT flowforge_test.login('ff_t16_lf_admin', 'default', 'admin');
SELECT flowforge_test.login('ff_t16_lf_owner', 'default', 'owner');
CREATE TEMP TABLE seen AS
SELECT who, flowforge_test.as_login(('ff_t16_lf_' || who)::name,
           $$SELECT jsonb_build_object('rows', count(*), 'payloads', count(payload), 'sample', min(payload::text) FILTER (WHERE name = 'lf-old'))
             FROM flowforge.list_firings(max_rows => 10000)$$) AS got
FROM unnest(ARRAY['viewer', 'member', 'admin', 'owner']) AS who;
SELECT results_eq(
    $$SELECT who, got FROM seen ORDER BY array_position(ARRAY['viewer', 'member', 'admin', 'owner'], who)$$,
    $$VALUES ('viewer', '{"rows": 57, "payloads": 0, "sample": null}'::jsonb), ('member', '{"rows": 57, "payloads": 0, "sample": null}'),
             ('admin', '{"rows": 57, "payloads": 57, "sample": "{\"sha\": \"0ld\"}"}'), ('owner', '{"rows": 57, "payloads": 57, "sample": "{\"sha\": \"0ld\"}"}')$$,
    'every role reads every firing; only an admin or owner reads payloads (a viewer''s and a member''s are NULL)');
SELECT is(flowforge_test.as_login('ff_t16_lf_viewer', $$SELECT to_jsonb(count(*)) FROM flowforge.list_firings() WHERE error IS NOT NULL AND delivery_id IS NULL$$),
          '2'::jsonb, 'a viewer sees the rest of the row: errors, delivery ids');
SELECT is(flowforge_test.as_login('ff_t16_lf_member', $$SELECT to_jsonb(count(*)) FROM flowforge.trigger_firing$$) ->> 'sqlstate', '42501',
          'a tenant login cannot read trigger_firing directly (payloads included): only through list_firings');
-- Through the gateway, the API key's role decides.
CREATE ROLE ff_t16_lf_gateway NOLOGIN;
GRANT flowforge_gateway TO ff_t16_lf_gateway;
CREATE TEMP TABLE keys AS SELECT flowforge.create_api_key('default', 'lf admin key', 'admin') AS admin_key,
                                 flowforge.create_api_key('default', 'lf member key', 'member') AS member_key;
SELECT is(flowforge_test.as_gateway('ff_t16_lf_gateway', (SELECT admin_key FROM keys),
              $$SELECT to_jsonb(count(payload)) FROM flowforge.list_firings('lf-hook', NULL, 3)$$), '3'::jsonb,
          'a gateway call with an admin key reads payloads');
SELECT is(flowforge_test.as_gateway('ff_t16_lf_gateway', (SELECT member_key FROM keys),
              $$SELECT jsonb_build_array(count(*), count(payload)) FROM flowforge.list_firings('lf-hook', NULL, 3)$$), '[3, 0]'::jsonb,
          'one with a member key does not');

-- ------------------------------------------------------------------ tenant isolation
SELECT isnt(flowforge.create_organization('lf-other', 'Other'), NULL, 'fixture: organization lf-other');
SELECT flowforge_test.login('ff_t16_lf_other', 'lf-other', 'owner');
SELECT is(flowforge_test.as_login('ff_t16_lf_other', $$SELECT jsonb_build_array(
              flowforge.define_workflow('{"name": "lf_job", "tasks": [{"key": "only"}]}'),
              flowforge.create_trigger('lf-theirs', 'filesystem', 'start', 'lf_job', '{"path": "/theirs"}'),
              flowforge.fire_trigger('lf-theirs', '{"theirs": true}', '2030-03-01 11:59+00'))$$) -> 2 ->> 'outcome', 'started',
          'fixture: lf-other fires its own trigger lf-theirs');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings('lf-theirs')), 0, 'its firings are never listed to us, even by name');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings(max_rows => 10000) WHERE payload @> '{"theirs": true}'), 0,
          'nor among all of ours');
SELECT is((SELECT count(*)::int FROM flowforge.list_triggers() WHERE name = 'lf-theirs'), 0, 'its trigger is not listed to us');
SELECT throws_ok($$SELECT flowforge.set_trigger_enabled('lf-theirs', false)$$, 'FF001', 'trigger ''lf-theirs'' not found',
                 'we cannot pause it (FF001, as for a trigger that does not exist)');
SELECT throws_ok($$SELECT flowforge.drop_trigger('lf-theirs')$$, 'FF001', 'trigger ''lf-theirs'' not found', 'nor drop it');
SELECT is(flowforge.fire_trigger('lf-theirs', '{"from": "us"}') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "no trigger named ''lf-theirs''"}'::jsonb,
          'nor fire it: refused as a trigger that does not exist');
SELECT results_eq($$SELECT enabled, deleted_at FROM flowforge.scheduled_trigger WHERE name = 'lf-theirs'$$,
                  $$VALUES (true, NULL::timestamptz)$$, 'their trigger is untouched');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'lf-theirs'
             AND organization_id = (SELECT id FROM flowforge.organization WHERE slug = 'lf-other')), 1,
          'and has fired once, by its own organization');
SELECT is(flowforge_test.as_login('ff_t16_lf_other', $$SELECT jsonb_agg(name || ':' || result ORDER BY fired_on DESC) FROM flowforge.list_firings()$$),
          '["lf-theirs:started"]'::jsonb, 'they list only their own firing (not our refused attempt at their name, which is ours)');
SELECT is(flowforge_test.as_login('ff_t16_lf_other', $$SELECT jsonb_agg(name) FROM flowforge.list_triggers()$$), '["lf-theirs"]'::jsonb,
          'and only their own trigger');
SELECT results_eq(
    $$SELECT k, flowforge_test.as_login('ff_t16_lf_other', q) ->> 'sqlstate'
      FROM (VALUES ('enable', $q$SELECT to_jsonb(flowforge.set_trigger_enabled('lf-hook', false))$q$),
                   ('drop', $q$SELECT to_jsonb(flowforge.drop_trigger('lf-pay'))$q$),
                   ('fire', $q$SELECT flowforge.fire_trigger('lf-hook') -> 'outcome'$q$)) AS x(k, q) ORDER BY k$$,
    $$VALUES ('drop', 'FF001'), ('enable', 'FF001'), ('fire', NULL)$$,
    'nor can they pause or drop ours (FF001); firing our name is refused in their organization');
SELECT results_eq($$SELECT name::text, enabled, deleted_at FROM flowforge.scheduled_trigger WHERE name IN ('lf-hook', 'lf-pay') ORDER BY name$$,
                  $$VALUES ('lf-hook', true, NULL::timestamptz), ('lf-pay', true, NULL)$$, 'ours are untouched');

SELECT * FROM finish();
ROLLBACK;
