-- tick()'s cron duty (_fire_cron_triggers), with a steered clock: each due
-- slot fires once (delivery id cron:<slot in UTC>, fired_on the slot), the
-- catch-up policies after downtime (latest, all up to max_catchup, none),
-- paused, dropped, far-away and broken triggers, the organizations a daemon
-- serves, and DST — America/New_York and Europe/Berlin, both transitions, a
-- fixed-time slot in the skipped hour (once, at the first instant after the
-- gap; on_gap skip: not at all), in the repeated hour (once; on_repeat last,
-- both) and an hour field of * (every real instant); Australia/Lord_Howe's
-- 30-minute shift. And the seed's two tracing queries, run verbatim.
BEGIN;
SET LOCAL client_min_messages = error;
SET LOCAL TimeZone = 'UTC';
SELECT plan(128);
SELECT flowforge_test.freeze_clock('2030-06-01 00:00:00+00');
SELECT isnt(flowforge_test.define_single('ct_job'), NULL, 'fixture: ct_job');

-- Tick at every p_step from p_from to p_to (both included); the cron slots fired.
CREATE FUNCTION pg_temp.tick_through(p_from timestamptz, p_to timestamptz, p_step interval) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_at timestamptz := p_from;
    v_fired integer := 0;
BEGIN
    WHILE v_at <= p_to LOOP
        PERFORM flowforge_test.set_clock(v_at);
        v_fired := v_fired + (flowforge.tick() ->> 'cron_fired')::integer;
        v_at := v_at + p_step;
    END LOOP;
    RETURN v_fired;
END;
$$;
CREATE FUNCTION pg_temp.tick_at(p_at timestamptz) RETURNS integer LANGUAGE sql AS $$
    SELECT (flowforge.tick() ->> 'cron_fired')::integer FROM (SELECT flowforge_test.set_clock(p_at)) c
$$;
-- A trigger's firings, oldest first, as their slots in UTC ("MM-DD HH24:MI").
CREATE FUNCTION pg_temp.slots_of(p_trigger text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(to_char(f.fired_on AT TIME ZONE 'UTC', 'MM-DD HH24:MI'), ' ' ORDER BY f.fired_on), '')
    FROM flowforge.trigger_firing f WHERE f.trigger_name = p_trigger
$$;
CREATE FUNCTION pg_temp.cron(p_name text, p_expr text, p_options jsonb DEFAULT '{}') RETURNS uuid LANGUAGE sql AS $$
    SELECT flowforge.create_trigger(p_name, 'cron', 'start', 'ct_job', jsonb_build_object('cron', p_expr) || p_options)
$$;

-- ================================================================== the tracing queries
-- Runs caused by on-push with their firing's outcome and payload, newest first;
-- and the firings that caused nothing, newest first.
SELECT isnt(flowforge.create_trigger('on-push', 'webhook', 'start', 'ct_job', '{"secret": "on-push-secret-0123"}'), NULL, 'fixture: on-push');
SELECT isnt(flowforge.create_trigger('on-tag', 'webhook', 'start', 'ct_job', '{"secret": "on-tag-secret-01234"}'), NULL, 'fixture: on-tag');
SELECT isnt(flowforge.create_trigger('nightly-signal', 'cron', 'signal', 'wake',
                                     '{"cron": "0 3 * * *", "run_id": "00000000-0000-0000-0000-0000000000ee"}'), NULL,
            'fixture: nightly-signal, a cron signal to a run that does not exist');
CREATE TEMP TABLE traced (k text PRIMARY KEY, answer jsonb);
INSERT INTO traced SELECT 'push-1', flowforge.fire_trigger('on-push', '{"ref": "refs/heads/main", "sha": "a1"}', NULL, 'gh-1');
SELECT flowforge_test.set_clock('2030-06-01 01:00+00');
INSERT INTO traced SELECT 'tag-1', flowforge.fire_trigger('on-tag', '{"tag": "v1"}');
INSERT INTO traced SELECT 'push-2', flowforge.fire_trigger('on-push', '"refs/heads/dev"', '2030-06-01 00:59+00', 'gh-2');
SELECT flowforge_test.set_clock('2030-06-01 02:00+00');
INSERT INTO traced SELECT 'push-3', flowforge.fire_trigger('on-push', '{"ref": "refs/heads/main", "sha": "c3"}', NULL, 'gh-3');
INSERT INTO traced SELECT 'push-2 again', flowforge.fire_trigger('on-push', '{}', NULL, 'gh-2');
INSERT INTO traced SELECT 'direct', to_jsonb(flowforge.start_run('ct_job'));
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('on-tag', false)$$, 'fixture: on-tag disabled');
INSERT INTO traced SELECT 'tag-off', flowforge.fire_trigger('on-tag', '{"tag": "v2"}', '2030-06-01 01:30+00');
INSERT INTO traced SELECT 'nobody', flowforge.fire_trigger('on-nothing', '{}', '2030-06-01 01:45+00');
SELECT is(pg_temp.tick_at('2030-06-01 03:00+00'), 1, 'fixture: the tick fires nightly-signal''s 03:00 slot (refused: no such run)');
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT flowforge_test.set_clock('2030-06-01 03:30+00');
-- A 1012-byte string payload is within the limit; the run input {"payload": ...} it becomes is not.
INSERT INTO traced SELECT 'push too big', flowforge.fire_trigger('on-push', to_jsonb(repeat('p', 1010)), '2030-06-01 00:30+00', 'gh-4');
UPDATE flowforge.setting SET max_payload_bytes = 1048576;
SELECT results_eq(
    $$SELECT k, answer ->> 'outcome' FROM traced WHERE k <> 'direct' ORDER BY k$$,
    $$VALUES ('nobody', 'refused'), ('push too big', 'refused'), ('push-1', 'started'), ('push-2', 'started'),
             ('push-2 again', 'started'), ('push-3', 'started'), ('tag-1', 'started'), ('tag-off', 'refused')$$,
    'fixture: three runs of on-push (and a redelivery), one of on-tag, one run not triggered, four firings that caused nothing');
-- The seed's first query, verbatim but for our names.
SELECT results_eq(
    $$SELECT r.run_id, r.engine_kind::varchar, r.definition_id, f.outcome, f.payload FROM flowforge.engine_run r JOIN flowforge.trigger_firing f ON f.id = r.trigger_firing_id WHERE r.triggered_by = 'on-push' ORDER BY r.created_at DESC;$$,
    $$SELECT (answer ->> 'run_id')::uuid, 'dag'::varchar(20), (SELECT id FROM flowforge.workflow WHERE name = 'ct_job'), 'started'::varchar(20),
             p.payload
      FROM traced JOIN (VALUES ('push-3', '{"ref": "refs/heads/main", "sha": "c3"}'::jsonb, 1), ('push-2', '"refs/heads/dev"', 2),
                               ('push-1', '{"ref": "refs/heads/main", "sha": "a1"}', 3)) AS p(k, payload, n) USING (k)
      ORDER BY p.n$$,
    'tracing query 1: the runs on-push caused, with their firing''s outcome and payload, newest first (not on-tag''s, '
    'not the run started by hand, the redelivery no second row)');
-- The seed's second query, verbatim.
SELECT results_eq(
    $$SELECT trigger_name, outcome, error, fired_on FROM flowforge.trigger_firing WHERE outcome IN ('refused', 'failed') ORDER BY fired_on DESC LIMIT 50;$$,
    $$VALUES ('nightly-signal'::varchar(63), 'refused'::varchar(20), 'run 00000000-0000-0000-0000-0000000000ee not found (FF001)',
              '2030-06-01 03:00+00'::timestamptz),
             ('on-nothing', 'refused', 'no trigger named ''on-nothing''', '2030-06-01 01:45+00'),
             ('on-tag', 'refused', 'trigger ''on-tag'' is disabled', '2030-06-01 01:30+00'),
             ('on-push', 'refused', 'run input is 1025 bytes, over the limit of 1024 bytes (FF009)', '2030-06-01 00:30+00')$$,
    'tracing query 2: the firings that caused nothing, newest first by the source''s time');
SELECT lives_ok($$SELECT flowforge.drop_trigger(t) FROM unnest(ARRAY['on-push', 'on-tag', 'nightly-signal']) t$$,
                'the tracing fixture''s triggers dropped (they are not due again here)');

-- ================================================================== a slot fires once
SELECT flowforge_test.set_clock('2030-01-01 00:02:00+00');
SELECT isnt(pg_temp.cron('ct-once', '*/5 * * * *'), NULL, 'ct-once: */5 created at 00:02');
SELECT is(pg_temp.tick_at('2030-01-01 00:04:59+00'), 0, 'a tick before the slot fires nothing');
SELECT is(pg_temp.tick_at('2030-01-01 00:05:00+00'), 1, 'the tick at the slot fires it: cron_fired 1');
SELECT is(pg_temp.tick_at('2030-01-01 00:05:00+00'), 0, 'a second tick at the same instant: 0');
SELECT is(pg_temp.tick_at('2030-01-01 00:09:59+00'), 0, 'nor later, before the next slot');
SELECT results_eq(
    $$SELECT f.outcome::text, f.delivery_id::text, f.fired_on, f.recorded_at, f.payload, f.action::text, f.trigger_type::text,
             f.created_by
      FROM flowforge.trigger_firing f WHERE f.trigger_name = 'ct-once'$$,
    $$VALUES ('started', 'cron:2030-01-01T00:05:00Z', '2030-01-01 00:05+00'::timestamptz, '2030-01-01 00:05+00'::timestamptz,
              '{"trigger": "ct-once", "slot": "2030-01-01T00:05:00+00:00", "timezone": "UTC"}'::jsonb, 'start', 'cron', 'postgres')$$,
    'one firing: delivery id cron:<slot in UTC>, fired_on the slot, payload {trigger, slot, timezone}');
SELECT results_eq($$SELECT next_fire_at, last_fired_at, updated_at FROM flowforge.scheduled_trigger WHERE name = 'ct-once'$$,
                  $$VALUES ('2030-01-01 00:10+00'::timestamptz, '2030-01-01 00:05+00'::timestamptz, '2030-01-01 00:05+00'::timestamptz)$$,
                  'next_fire_at moved to the next slot; last_fired_at is the slot');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'ct-once'), 1, 'one run started');
SELECT is(pg_temp.tick_at('2030-01-01 00:10:30+00'), 1, 'a tick 30 s after the next slot fires it (on time: one slot due)');
SELECT results_eq($$SELECT fired_on, recorded_at FROM flowforge.trigger_firing WHERE delivery_id = 'cron:2030-01-01T00:10:00Z'$$,
                  $$VALUES ('2030-01-01 00:10+00'::timestamptz, '2030-01-01 00:10:30+00'::timestamptz)$$,
                  'fired_on is the slot, recorded_at the tick''s now');
SELECT is(pg_temp.tick_through('2030-01-01 00:11+00', '2030-01-01 01:00+00', '1 minute'), 10,
          'ticking every minute for 50 minutes: ten slots, each once');
SELECT is(pg_temp.slots_of('ct-once'), '01-01 00:05 01-01 00:10 01-01 00:15 01-01 00:20 01-01 00:25 01-01 00:30 01-01 00:35 '
                                        '01-01 00:40 01-01 00:45 01-01 00:50 01-01 00:55 01-01 01:00', 'every slot, once, in order');
-- A slot already recorded is never fired again, even if next_fire_at is moved back onto it.
UPDATE flowforge.scheduled_trigger SET next_fire_at = '2030-01-01 00:05+00' WHERE name = 'ct-once';
SELECT is(pg_temp.tick_at('2030-01-01 01:00:30+00'), 0,
          'next_fire_at moved back by hand: the slot the duty finds (latest: 01:00) is already recorded, and not counted again');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'ct-once'), 12,
          'but 01:00 was fired already (its delivery id): still one firing per slot');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'ct-once'), 12, 'and no second run');
SELECT lives_ok($$SELECT flowforge.drop_trigger('ct-once')$$, 'ct-once dropped');

-- ================================================================== catch-up after downtime
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00');
SELECT isnt(pg_temp.cron('ct-latest', '0 * * * *'), NULL, 'ct-latest: hourly, catchup latest (the default)');
SELECT isnt(pg_temp.cron('ct-all', '0 * * * *', '{"catchup": "all"}'), NULL, 'ct-all: hourly, catchup all');
SELECT isnt(pg_temp.cron('ct-all-3', '0 * * * *', '{"catchup": "all", "max_catchup": 3}'), NULL, 'ct-all-3: catchup all, max_catchup 3');
SELECT isnt(pg_temp.cron('ct-none', '0 * * * *', '{"catchup": "none"}'), NULL, 'ct-none: catchup none');
SELECT isnt(pg_temp.cron('ct-minutely', '* * * * *', '{"catchup": "all"}'), NULL, 'ct-minutely: every minute, catchup all (max 100)');
SELECT is(pg_temp.tick_at('2030-01-02 00:00:30+00'), 0, 'fixture: nothing due yet (the minutely trigger''s first slot is 00:01)');
-- Downtime: the next tick comes at 05:30. Missed: 01:00 .. 05:00 (five hourly slots, 329 minutes).
SELECT is(pg_temp.tick_at('2030-01-02 05:30:00+00'), 1 + 5 + 3 + 0 + 100, 'after downtime one tick fires 1 + 5 + 3 + 0 + 100 slots');
SELECT is(pg_temp.slots_of('ct-latest'), '01-02 05:00', 'latest: one firing, for the newest missed slot');
SELECT is(pg_temp.slots_of('ct-all'), '01-02 01:00 01-02 02:00 01-02 03:00 01-02 04:00 01-02 05:00', 'all: every missed slot');
SELECT results_eq($$SELECT delivery_id::text, recorded_at FROM flowforge.trigger_firing WHERE trigger_name = 'ct-all' ORDER BY fired_on$$,
                  $$VALUES ('cron:2030-01-02T01:00:00Z', '2030-01-02 05:30+00'::timestamptz), ('cron:2030-01-02T02:00:00Z', '2030-01-02 05:30+00'),
                           ('cron:2030-01-02T03:00:00Z', '2030-01-02 05:30+00'), ('cron:2030-01-02T04:00:00Z', '2030-01-02 05:30+00'),
                           ('cron:2030-01-02T05:00:00Z', '2030-01-02 05:30+00')$$,
                  'oldest first, each its own delivery id, all recorded by the one tick');
SELECT is(pg_temp.slots_of('ct-all-3'), '01-02 01:00 01-02 02:00 01-02 03:00',
          'all with max_catchup 3: the three oldest missed slots (the rest are given up)');
SELECT is(pg_temp.slots_of('ct-none'), '', 'none: nothing that was missed');
SELECT results_eq(
    $$SELECT count(*)::int, min(fired_on), max(fired_on) FROM flowforge.trigger_firing WHERE trigger_name = 'ct-minutely'$$,
    $$VALUES (100, '2030-01-02 00:01+00'::timestamptz, '2030-01-02 01:40+00'::timestamptz)$$,
    'all bounded by the default max_catchup: the first 100 of the 329 missed minutes');
SELECT is((SELECT count(DISTINCT next_fire_at)::int || ' ' || min(next_fire_at)::text FROM flowforge.scheduled_trigger WHERE name LIKE 'ct-%' AND name <> 'ct-minutely' AND deleted_at IS NULL),
          '1 2030-01-02 06:00:00+00', 'every hourly trigger goes on from the first slot after now (06:00)');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'ct-minutely'), '2030-01-02 05:31+00'::timestamptz,
          'the minutely one from 05:31');
SELECT is(pg_temp.tick_at('2030-01-02 05:30:00+00'), 0, 'a second tick right after: nothing');
SELECT lives_ok($$SELECT flowforge.drop_trigger('ct-minutely')$$, 'ct-minutely dropped');
SELECT is(pg_temp.tick_at('2030-01-02 06:00:00+00'), 4, 'on time (one slot due), every policy fires it: latest, all, all-3 and none');
SELECT is(pg_temp.slots_of('ct-none'), '01-02 06:00', 'none fires a slot that was not missed');
-- A tick that comes exactly at a slot after downtime: that slot is due, but two are.
SELECT is(pg_temp.tick_at('2030-01-02 08:00:00+00'), 1 + 2 + 2 + 1, 'downtime until exactly 08:00: 07:00 and 08:00 are due');
SELECT is(pg_temp.slots_of('ct-none'), '01-02 06:00 01-02 08:00',
          'none fires 08:00 (due this instant, less than a minute late) and not 07:00 (missed)');
SELECT is(pg_temp.slots_of('ct-latest'), '01-02 05:00 01-02 06:00 01-02 08:00', 'latest fires 08:00');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'ct-none'), '2030-01-02 09:00+00'::timestamptz,
          'and every trigger goes on from 09:00');
SELECT lives_ok($$SELECT flowforge.drop_trigger(t) FROM unnest(ARRAY['ct-latest', 'ct-all', 'ct-all-3', 'ct-none']) t$$,
                'the catch-up triggers dropped');
-- A sparse schedule: no slot in the last day before the tick, several before that.
SELECT flowforge_test.set_clock('2030-01-02 12:00:00+00');
SELECT isnt(pg_temp.cron('ct-weekly', '@weekly'), NULL, 'ct-weekly: Sundays at midnight, catchup latest');
SELECT isnt(pg_temp.cron('ct-weekly-all', '@weekly', '{"catchup": "all"}'), NULL, 'ct-weekly-all');
SELECT is(pg_temp.tick_at('2030-01-30 12:00:00+00'), 1 + 4, 'four weeks of downtime, the tick on a Wednesday: 1 + 4 slots');
SELECT is(pg_temp.slots_of('ct-weekly'), '01-27 00:00', 'latest: the newest missed Sunday, three days back');
SELECT is(pg_temp.slots_of('ct-weekly-all'), '01-06 00:00 01-13 00:00 01-20 00:00 01-27 00:00', 'all: each missed Sunday');
SELECT is((SELECT count(DISTINCT next_fire_at)::int || ' ' || min(next_fire_at)::text FROM flowforge.scheduled_trigger
           WHERE name IN ('ct-weekly', 'ct-weekly-all')), '1 2030-02-03 00:00:00+00', 'both go on from the next Sunday');
SELECT lives_ok($$SELECT flowforge.drop_trigger(t) FROM unnest(ARRAY['ct-weekly', 'ct-weekly-all']) t$$, 'the weekly triggers dropped');

-- ================================================================== paused, dropped, far away, broken
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00');
SELECT isnt(pg_temp.cron('ct-paused', '*/10 * * * *'), NULL, 'ct-paused');
SELECT isnt(pg_temp.cron('ct-gone', '*/10 * * * *'), NULL, 'ct-gone');
SELECT isnt(pg_temp.cron('ct-leap', '0 0 29 2 *'), NULL, 'ct-leap: midnight on 29 February');
SELECT isnt(pg_temp.cron('ct-broken', '*/10 * * * *'), NULL, 'ct-broken');
SELECT isnt(pg_temp.cron('ct-fine', '*/10 * * * *'), NULL, 'ct-fine');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('ct-paused', false)$$, 'ct-paused paused');
SELECT lives_ok($$SELECT flowforge.drop_trigger('ct-gone')$$, 'ct-gone dropped');
-- A stored schedule that no longer parses (a newer FlowForge refusing an old expression).
UPDATE flowforge.scheduled_trigger SET cron = '61 * * * *' WHERE name = 'ct-broken' AND deleted_at IS NULL;
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'ct-leap'), '2032-02-29 00:00+00'::timestamptz,
          'ct-leap''s first slot is two years away');
SELECT is(pg_temp.tick_through('2030-01-03 00:05+00', '2030-01-03 01:00+00', '5 minutes'), 6,
          'an hour of ticks: only ct-fine''s six slots fire');
SELECT is(pg_temp.slots_of('ct-fine'), '01-03 00:10 01-03 00:20 01-03 00:30 01-03 00:40 01-03 00:50 01-03 01:00',
          'ct-fine fired every slot, the broken trigger in the way notwithstanding');
SELECT is(pg_temp.slots_of('ct-paused') || '|' || pg_temp.slots_of('ct-gone') || '|' || pg_temp.slots_of('ct-broken') || '|' || pg_temp.slots_of('ct-leap'),
          '|||', 'the paused, dropped, broken and far-away triggers fired nothing');
SELECT results_eq($$SELECT name::text, next_fire_at FROM flowforge.scheduled_trigger WHERE name IN ('ct-paused', 'ct-broken', 'ct-leap') ORDER BY name$$,
                  $$VALUES ('ct-broken', '2030-01-03 00:10+00'::timestamptz), ('ct-leap', '2032-02-29 00:00+00'), ('ct-paused', '2030-01-03 00:10+00')$$,
                  'their next slots did not move (the broken one stays due, tried again by every tick)');
SELECT is((flowforge.tick() -> 'errors'), NULL, 'a broken trigger is a warning of the cron duty, not a failed duty');
SELECT lives_ok($$SELECT flowforge.drop_trigger(t) FROM unnest(ARRAY['ct-paused', 'ct-leap', 'ct-broken', 'ct-fine']) t$$,
                'those triggers dropped');

-- ================================================================== the organizations a daemon serves
SELECT flowforge_test.set_clock('2030-01-04 00:00:00+00');
SELECT isnt(flowforge.create_organization('ct-other', 'Other'), NULL, 'fixture: organization ct-other');
SELECT flowforge_test.login('ff_t16_ct_other', 'ct-other', 'admin');
SELECT is(flowforge_test.as_login('ff_t16_ct_other', $$SELECT jsonb_build_array(
              flowforge.define_workflow('{"name": "ct_job", "tasks": [{"key": "only"}]}'),
              flowforge.create_trigger('ct-theirs', 'cron', 'start', 'ct_job', '{"cron": "*/10 * * * *"}'))$$) ->> 'sqlstate',
          NULL, 'fixture: ct-other''s own cron trigger');
SELECT isnt(pg_temp.cron('ct-ours', '*/10 * * * *'), NULL, 'fixture: ours');
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(flowforge.tick('ct-daemon-1') -> 'serving')) >= 2, true,
          'daemon 1 serves every organization (it is the only one)');
SELECT flowforge_test.set_clock('2030-01-04 00:09:50+00');
SELECT is((flowforge.tick('ct-daemon-1') -> 'cron_fired'), '0'::jsonb, 'daemon 1 renews its leases (nothing due)');
SELECT flowforge_test.set_clock('2030-01-04 00:10:00+00');
SELECT is((flowforge.tick('ct-daemon-2') -> 'cron_fired'), '0'::jsonb,
          'daemon 2 joins: every organization is held, so it fires nothing though both slots are due');
SELECT is((SELECT string_agg(key, ',') FROM jsonb_object_keys(flowforge.tick('ct-daemon-1') -> 'serving') key),
          (SELECT id::text FROM flowforge.organization WHERE slug = 'ct-other'),
          'daemon 1''s next tick keeps its share (one of two organizations) and does its duties: ct-other''s');
SELECT is(pg_temp.slots_of('ct-theirs') || '|' || pg_temp.slots_of('ct-ours'), '01-04 00:10|', 'so ct-other''s slot fired, ours not yet');
SELECT is((flowforge.tick('ct-daemon-2') -> 'cron_fired'), '1'::jsonb, 'daemon 2 takes the organization given back and fires our slot');
SELECT is((flowforge.tick(engine_id => 'ct-daemon-2') -> 'cron_fired'), '0'::jsonb, 'tick(engine_id =>): named, and nothing due again');
SELECT results_eq(
    $$SELECT f.trigger_name::text, o.slug::text, e.organization_id = f.organization_id
      FROM flowforge.trigger_firing f JOIN flowforge.organization o ON o.id = f.organization_id
      JOIN flowforge.engine_run e ON e.trigger_firing_id = f.id
      WHERE f.trigger_name IN ('ct-ours', 'ct-theirs') ORDER BY 1$$,
    $$VALUES ('ct-ours', 'default', true), ('ct-theirs', 'ct-other', true)$$,
    'each firing, and the run it started, in its trigger''s organization');
SELECT lives_ok($$SELECT flowforge.drop_trigger('ct-ours')$$, 'ct-ours dropped');
SELECT is(flowforge_test.as_login('ff_t16_ct_other', $$SELECT to_jsonb(flowforge.drop_trigger('ct-theirs'))$$) ->> 'sqlstate', NULL,
          'ct-theirs dropped');

-- ================================================================== DST
-- Each window starts before the day ahead of a transition, so the duty itself computes the next slot across
-- it (with the trigger's on_gap / on_repeat); ticks every 30 minutes (15 for Lord Howe); expected slots are UTC.
-- America/New_York, spring: 2024-03-10 07:00 UTC, 02:00 EST -> 03:00 EDT (02:00-02:59 do not exist).
SELECT flowforge_test.set_clock('2024-03-09 06:00+00');
SELECT isnt(pg_temp.cron('ny-spring', '30 2 * * *', '{"timezone": "America/New_York"}'), NULL, 'ny-spring: 02:30 New York');
SELECT isnt(pg_temp.cron('ny-spring-skip', '30 2 * * *', '{"timezone": "America/New_York", "on_gap": "skip"}'), NULL, 'ny-spring-skip');
SELECT isnt(pg_temp.cron('ny-spring-two', '0,30 2 * * *', '{"timezone": "America/New_York"}'), NULL, 'ny-spring-two: 02:00 and 02:30');
SELECT isnt(pg_temp.cron('ny-spring-star', '30 * * * *', '{"timezone": "America/New_York"}'), NULL, 'ny-spring-star: half past every hour');
SELECT is(pg_temp.tick_through('2024-03-09 06:30+00', '2024-03-11 12:00+00', '30 minutes') > 0, true, 'ticked through the New York gap');
SELECT is(pg_temp.slots_of('ny-spring'), '03-09 07:30 03-10 07:00 03-11 06:30',
          'a slot in the skipped hour fires once, at the first instant after the gap (03:00 EDT), then 02:30 EDT');
SELECT is(pg_temp.slots_of('ny-spring-skip'), '03-09 07:30 03-11 06:30', 'on_gap skip: not at all that day');
SELECT is(pg_temp.slots_of('ny-spring-two'), '03-09 07:00 03-09 07:30 03-10 07:00 03-11 06:00 03-11 06:30',
          'two slots in one gap are one firing');
SELECT is((SELECT count(*)::int || ' ' || min(to_char(fired_on AT TIME ZONE 'UTC', 'MM-DD HH24:MI')) || ' ' ||
                  string_agg(to_char(fired_on AT TIME ZONE 'America/New_York', 'HH24'), ',' ORDER BY fired_on) FILTER (WHERE fired_on BETWEEN '2024-03-10 04:00+00' AND '2024-03-10 09:00+00')
           FROM flowforge.trigger_firing WHERE trigger_name = 'ny-spring-star'),
          '54 03-09 06:30 23,00,01,03,04',
          'an hour field of *: every real half past (54 in 53 hours), none for the missing 02:30');
-- America/New_York, fall: 2024-11-03 06:00 UTC, 02:00 EDT -> 01:00 EST (01:00-01:59 twice).
SELECT flowforge_test.set_clock('2024-11-02 05:00+00');
SELECT isnt(pg_temp.cron('ny-fall', '30 1 * * *', '{"timezone": "America/New_York"}'), NULL, 'ny-fall: 01:30 New York');
SELECT isnt(pg_temp.cron('ny-fall-last', '30 1 * * *', '{"timezone": "America/New_York", "on_repeat": "last"}'), NULL, 'ny-fall-last');
SELECT isnt(pg_temp.cron('ny-fall-both', '30 1 * * *', '{"timezone": "America/New_York", "on_repeat": "both"}'), NULL, 'ny-fall-both');
SELECT isnt(pg_temp.cron('ny-fall-star', '30 * * * *', '{"timezone": "America/New_York"}'), NULL, 'ny-fall-star');
SELECT is(pg_temp.tick_through('2024-11-02 05:30+00', '2024-11-04 12:00+00', '30 minutes') > 0, true, 'ticked through the New York repeat');
SELECT is(pg_temp.slots_of('ny-fall'), '11-02 05:30 11-03 05:30 11-04 06:30', 'a slot in the repeated hour fires once, at its first pass (EDT)');
SELECT is(pg_temp.slots_of('ny-fall-last'), '11-02 05:30 11-03 06:30 11-04 06:30', 'on_repeat last: once, at the second pass (EST)');
SELECT is(pg_temp.slots_of('ny-fall-both'), '11-02 05:30 11-03 05:30 11-03 06:30 11-04 06:30', 'on_repeat both: at both passes');
SELECT is((SELECT count(*)::int || ' ' || string_agg(to_char(fired_on AT TIME ZONE 'America/New_York', 'HH24'), ',' ORDER BY fired_on)
                  FILTER (WHERE fired_on BETWEEN '2024-11-03 03:00+00' AND '2024-11-03 08:00+00')
           FROM flowforge.trigger_firing WHERE trigger_name = 'ny-fall-star'),
          '55 23,00,01,01,02', 'an hour field of *: 01:30 twice (every real instant: 55 in 54 hours)');
-- Europe/Berlin, spring: 2024-03-31 01:00 UTC, 02:00 CET -> 03:00 CEST.
SELECT flowforge_test.set_clock('2024-03-30 00:00+00');
SELECT isnt(pg_temp.cron('be-spring', '30 2 * * *', '{"timezone": "Europe/Berlin"}'), NULL, 'be-spring: 02:30 Berlin');
SELECT isnt(pg_temp.cron('be-spring-skip', '30 2 * * *', '{"timezone": "Europe/Berlin", "on_gap": "skip"}'), NULL, 'be-spring-skip');
SELECT isnt(pg_temp.cron('be-spring-star', '30 * * * *', '{"timezone": "Europe/Berlin"}'), NULL, 'be-spring-star');
SELECT is(pg_temp.tick_through('2024-03-30 00:30+00', '2024-04-01 06:00+00', '30 minutes') > 0, true, 'ticked through the Berlin gap');
SELECT is(pg_temp.slots_of('be-spring'), '03-30 01:30 03-31 01:00 04-01 00:30', 'Berlin''s skipped 02:30 fires once at 03:00 CEST');
SELECT is(pg_temp.slots_of('be-spring-skip'), '03-30 01:30 04-01 00:30', 'on_gap skip: not at all');
SELECT is((SELECT count(*)::int || ' ' || string_agg(to_char(fired_on AT TIME ZONE 'Europe/Berlin', 'HH24'), ',' ORDER BY fired_on)
                  FILTER (WHERE fired_on BETWEEN '2024-03-30 23:00+00' AND '2024-03-31 03:00+00')
           FROM flowforge.trigger_firing WHERE trigger_name = 'be-spring-star'),
          '54 00,01,03,04', 'an hour field of *: no 02:30 on the day of the gap (54 in 54 hours)');
-- Europe/Berlin, fall: 2024-10-27 01:00 UTC, 03:00 CEST -> 02:00 CET (02:00-02:59 twice).
SELECT flowforge_test.set_clock('2024-10-26 00:00+00');
SELECT isnt(pg_temp.cron('be-fall', '30 2 * * *', '{"timezone": "Europe/Berlin"}'), NULL, 'be-fall: 02:30 Berlin');
SELECT isnt(pg_temp.cron('be-fall-last', '30 2 * * *', '{"timezone": "Europe/Berlin", "on_repeat": "last"}'), NULL, 'be-fall-last');
SELECT isnt(pg_temp.cron('be-fall-both', '30 2 * * *', '{"timezone": "Europe/Berlin", "on_repeat": "both"}'), NULL, 'be-fall-both');
SELECT isnt(pg_temp.cron('be-fall-star', '30 * * * *', '{"timezone": "Europe/Berlin"}'), NULL, 'be-fall-star');
SELECT is(pg_temp.tick_through('2024-10-26 00:30+00', '2024-10-28 06:00+00', '30 minutes') > 0, true, 'ticked through the Berlin repeat');
SELECT is(pg_temp.slots_of('be-fall') || ' | ' || pg_temp.slots_of('be-fall-last') || ' | ' || pg_temp.slots_of('be-fall-both'),
          '10-26 00:30 10-27 00:30 10-28 01:30 | 10-26 00:30 10-27 01:30 10-28 01:30 | 10-26 00:30 10-27 00:30 10-27 01:30 10-28 01:30',
          'Berlin''s repeated 02:30: first (CEST), last (CET), both');
SELECT is((SELECT count(*)::int || ' ' || string_agg(to_char(fired_on AT TIME ZONE 'Europe/Berlin', 'HH24'), ',' ORDER BY fired_on)
                  FILTER (WHERE fired_on BETWEEN '2024-10-26 23:00+00' AND '2024-10-27 03:00+00')
           FROM flowforge.trigger_firing WHERE trigger_name = 'be-fall-star'),
          '54 01,02,02,03', 'an hour field of *: 02:30 twice (54 in 53 hours)');
-- Australia/Lord_Howe: a 30-minute shift. Fall back 2024-04-07 02:00 +11 -> 01:30 +10:30 (15:00 UTC on the 6th);
-- spring forward 2024-10-06 02:00 +10:30 -> 02:30 +11 (15:30 UTC on the 5th).
SELECT flowforge_test.set_clock('2024-04-05 14:00+00');
SELECT isnt(pg_temp.cron('lh-fall', '45 1 * * *', '{"timezone": "Australia/Lord_Howe"}'), NULL, 'lh-fall: 01:45 Lord Howe');
SELECT isnt(pg_temp.cron('lh-fall-both', '45 1 * * *', '{"timezone": "Australia/Lord_Howe", "on_repeat": "both"}'), NULL, 'lh-fall-both');
SELECT isnt(pg_temp.cron('lh-fall-star', '*/15 * * * *', '{"timezone": "Australia/Lord_Howe"}'), NULL, 'lh-fall-star: every 15 minutes');
SELECT is(pg_temp.tick_through('2024-04-05 14:15+00', '2024-04-07 18:00+00', '15 minutes') > 0, true, 'ticked through Lord Howe''s half-hour repeat');
SELECT is(pg_temp.slots_of('lh-fall') || ' | ' || pg_temp.slots_of('lh-fall-both'),
          '04-05 14:45 04-06 14:45 04-07 15:15 | 04-05 14:45 04-06 14:45 04-06 15:15 04-07 15:15',
          '01:45 repeated half an hour later: once at +11 (first), or at both passes');
SELECT is((SELECT string_agg(to_char(fired_on AT TIME ZONE 'UTC', 'HH24:MI') || '=' || to_char(fired_on AT TIME ZONE 'Australia/Lord_Howe', 'HH24:MI'), ' ' ORDER BY fired_on)
           FROM flowforge.trigger_firing WHERE trigger_name = 'lh-fall-star' AND fired_on BETWEEN '2024-04-06 14:15+00' AND '2024-04-06 15:30+00'),
          '14:15=01:15 14:30=01:30 14:45=01:45 15:00=01:30 15:15=01:45 15:30=02:00',
          'an hour field of *: every real quarter hour, 01:30 and 01:45 twice');
SELECT flowforge_test.set_clock('2024-10-04 15:00+00');
SELECT isnt(pg_temp.cron('lh-spring', '15 2 * * *', '{"timezone": "Australia/Lord_Howe"}'), NULL, 'lh-spring: 02:15 Lord Howe');
SELECT isnt(pg_temp.cron('lh-spring-skip', '15 2 * * *', '{"timezone": "Australia/Lord_Howe", "on_gap": "skip"}'), NULL, 'lh-spring-skip');
SELECT is(pg_temp.tick_through('2024-10-04 15:15+00', '2024-10-06 18:00+00', '15 minutes') > 0, true, 'ticked through Lord Howe''s half-hour gap');
SELECT is(pg_temp.slots_of('lh-spring') || ' | ' || pg_temp.slots_of('lh-spring-skip'),
          '10-04 15:45 10-05 15:30 10-06 15:15 | 10-04 15:45 10-06 15:15',
          'the skipped 02:15 fires once at 02:30 +11 (the first instant after the gap), or not at all');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_type = 'cron' AND delivery_id IS NOT NULL)
          - (SELECT count(DISTINCT (trigger_id, delivery_id))::int FROM flowforge.trigger_firing WHERE trigger_type = 'cron'), 0,
          'no cron slot of this file fired twice');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_type = 'cron'
             AND delivery_id <> 'cron:' || to_char(fired_on AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')), 0,
          'every cron firing''s delivery id is its slot in UTC');

SELECT * FROM finish();
ROLLBACK;
