-- Engine liveness: the organizations' periodic duties shared among daemons
-- by per-organization leases with a generation. One daemon alone serves
-- every organization; a second one that heartbeats gets its fair share
-- (ceil(M / live)) as the first gives back; never two serving one
-- organization; a daemon gone silent for one duty lease (its leases lapsed,
-- and it no longer counts as live) has its organizations taken over under a
-- higher generation, all of them at once, and a daemon that comes back finds
-- its generation stale. tick() without engine_id does every organization's
-- duties; tick(engine_id) only those of the organizations it serves.
-- Several daemons at once (SIGKILL, SIGSTOP) are pytest's.
BEGIN;
SELECT plan(40);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Five organizations: the built-in one and four more.
INSERT INTO flowforge.organization (slug, name) SELECT 'duty-' || g, 'Duty ' || g FROM generate_series(1, 4) g;
SELECT is((SELECT count(*)::int FROM flowforge.organization), 5, 'setup: five organizations');

-- Who serves what now (a live lease), per daemon.
CREATE FUNCTION pg_temp.served(p_engine text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM flowforge.engine e
    WHERE e.engine_id = p_engine AND e.status = 'serving' AND e.lease_expires_at > flowforge.now()
$$;
CREATE FUNCTION pg_temp.unserved() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM flowforge.organization o
    WHERE NOT EXISTS (SELECT 1 FROM flowforge.engine e WHERE e.organization_id = o.id AND e.status = 'serving'
                                                           AND e.lease_expires_at > flowforge.now())
$$;
CREATE FUNCTION pg_temp.served_twice() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (SELECT e.organization_id FROM flowforge.engine e WHERE e.status = 'serving'
                          GROUP BY 1 HAVING count(*) > 1) d
$$;
CREATE FUNCTION pg_temp.tick(p_engine text) RETURNS jsonb LANGUAGE sql AS $$ SELECT flowforge.tick(p_engine) -> 'serving' $$;

-- ------------------------------------------------------------ one daemon
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e1'))), 5, 'tick(''e1'') alone serves all five organizations');
SELECT is((SELECT array_agg(DISTINCT value::int) FROM jsonb_each_text(pg_temp.tick('e1'))), ARRAY[1],
          'each under generation 1 (a second tick renews, it takes nothing anew)');
SELECT is(pg_temp.served('e1'), 5::bigint, 'e1 holds five leases');
SELECT is((SELECT min(lease_expires_at) FROM flowforge.engine WHERE engine_id = 'e1' AND status = 'serving'),
          '2030-01-01 00:00:30+00'::timestamptz, 'leases last one duty_lease (30 s)');

-- ------------------------------------------------------ a second daemon joins
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(pg_temp.tick('e2'), '{}'::jsonb, 'tick(''e2''): everything is held, e2 takes nothing yet (but heartbeats)');
SELECT results_eq($$SELECT engine_id, live, organizations FROM flowforge.list_engines()$$,
    $$VALUES ('e1', true, 5::bigint), ('e2', true, 0::bigint)$$, 'list_engines: two live daemons');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e1'))), 3, 'e1 sees two live daemons and keeps its share, ceil(5/2) = 3');
SELECT is(pg_temp.unserved(), 2::bigint, 'the two it gave back wait for a taker');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e2'))), 2, 'e2 takes the two given back');
SELECT results_eq($$SELECT pg_temp.served('e1'), pg_temp.served('e2'), pg_temp.unserved(), pg_temp.served_twice()$$,
    $$VALUES (3::bigint, 2::bigint, 0::bigint, 0::bigint)$$,
    'they split the organizations (each at most ceil(5/2)), every one served, none twice');
SELECT is((SELECT array_agg(DISTINCT value::int) FROM jsonb_each_text(pg_temp.tick('e2'))), ARRAY[2],
          'e2 serves them under generation 2 (a new generation per taking over)');
CREATE TEMP TABLE e1_held AS
SELECT organization_id, generation FROM flowforge.engine WHERE engine_id = 'e1' AND status = 'serving';
SELECT is((SELECT count(*)::int FROM e1_held WHERE flowforge._serves(organization_id, 'e1', generation, flowforge.now())), 3,
          '_serves: e1 serves its three under their generation');
SELECT throws_ok($$INSERT INTO flowforge.engine (organization_id, engine_id, status, lease_expires_at, heartbeat_at)
                   SELECT organization_id, 'e3', 'serving', now(), now() FROM e1_held LIMIT 1$$,
                 '23505', NULL, 'a second serving row for one organization is refused (engine_one_serving_per_org)');

-- Ticking on, both keep what they hold.
SELECT flowforge_test.advance_clock('10 seconds') \gset
SELECT pg_temp.tick('e1') \gset
SELECT pg_temp.tick('e2') \gset
SELECT results_eq($$SELECT pg_temp.served('e1'), pg_temp.served('e2'), pg_temp.served_twice()$$,
    $$VALUES (3::bigint, 2::bigint, 0::bigint)$$, 'steady state: the split holds');

-- --------------------------------------------------- e1 stops ticking
-- e1 last ticked at 00:00:13. e2 ticks every 20 s.
SELECT flowforge_test.set_clock('2030-01-01 00:00:33+00') \gset
SELECT pg_temp.tick('e2') \gset
SELECT is(pg_temp.served('e2'), 2::bigint, 'e1''s leases still run: e2 keeps its two');
SELECT flowforge_test.set_clock('2030-01-01 00:00:42.999+00') \gset
SELECT pg_temp.tick('e2') \gset
SELECT is(pg_temp.served('e2'), 2::bigint,
          'a millisecond short of one duty lease since e1''s heartbeat: e1 still counts and holds its leases, e2 its two');
SELECT is(pg_temp.served_twice(), 0::bigint, 'never two serving one organization');
SELECT flowforge_test.set_clock('2030-01-01 00:00:43+00') \gset
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e2'))), 5,
          'one duty lease after e1''s last heartbeat: its leases lapsed, it no longer counts, e2 takes all of its organizations');
SELECT is(pg_temp.served_twice(), 0::bigint, 'the lapsed holder was demoted in the same transaction: never served twice');
SELECT results_eq($$SELECT engine_id, live, organizations FROM flowforge.list_engines()$$,
    $$VALUES ('e1', false, 0::bigint), ('e2', true, 5::bigint)$$, 'list_engines: e1 is no longer live');
SELECT is((SELECT count(*)::int FROM e1_held h JOIN flowforge.engine e ON e.organization_id = h.organization_id
           WHERE e.engine_id = 'e2' AND e.status = 'serving' AND e.generation > h.generation), 3,
          'each organization e1 held is e2''s under a higher generation');
SELECT is((SELECT count(*)::int FROM e1_held WHERE flowforge._serves(organization_id, 'e1', generation, flowforge.now())), 0,
          '_serves: false for e1''s old generations');
SELECT is((SELECT count(*)::int FROM flowforge.engine e WHERE e.engine_id = 'e2' AND e.status = 'serving'
           AND flowforge._serves(e.organization_id, 'e2', e.generation, flowforge.now())), 5,
          '_serves: true for e2 under the generations it holds');

-- ------------------------------------------------- the paused daemon wakes
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(pg_temp.tick('e1'), '{}'::jsonb, 'e1 wakes and ticks: it finds its organizations gone and serves nothing');
SELECT is((SELECT count(*)::int FROM e1_held WHERE flowforge._serves(organization_id, 'e1', generation, flowforge.now())), 0,
          'a write e1 would make under its old generations is refused by _serves');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT pg_temp.tick('e2') \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e1'))), 2,
          'e1 is live again: e2 gave back its excess, e1 takes it under new generations');
SELECT results_eq($$SELECT pg_temp.served('e1'), pg_temp.served('e2'), pg_temp.unserved(), pg_temp.served_twice()$$,
    $$VALUES (2::bigint, 3::bigint, 0::bigint, 0::bigint)$$, 'split again');

-- ------------------------------------- whose duties: tick() and tick(engine_id)
-- One expired work-item lease in every organization.
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, created_by)
SELECT o.id, gen_random_uuid(), 'graph', 'test' FROM flowforge.organization o;
INSERT INTO flowforge.work_item (organization_id, engine_kind, run_id, task_name, queue, payload, status, fencing_token,
                                 next_attempt_at, dispatched_at, lease_expires_at, created_by)
SELECT e.organization_id, 'graph', e.run_id, 'work', 'qduty', '{}', 'dispatched', 1, flowforge.now() - interval '1 minute',
       flowforge.now() - interval '1 minute', flowforge.now() - interval '1 second', 'test'
FROM flowforge.engine_run e WHERE e.created_by = 'test';
SAVEPOINT duties;
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 5, 'tick() without engine_id does every organization''s duties');
ROLLBACK TO SAVEPOINT duties;
SELECT is((flowforge.tick('e1') ->> 'reaped_items')::int, 2, 'tick(''e1'') reaps only in the two organizations it serves');
SELECT is((flowforge.tick('e2') ->> 'reaped_items')::int, 3, 'tick(''e2'') the other three''s');
SELECT throws_ok($$SELECT flowforge.tick('')$$, 'FF003', NULL, 'tick with an empty engine_id: FF003');

-- ------------------------------------------ a daemon that stops cleanly
SELECT is(flowforge.leave_duties('e2'), 3, 'leave_duties(''e2'') gives back the three organizations e2 served');
SELECT results_eq($$SELECT pg_temp.served('e2'), pg_temp.unserved(), pg_temp.served_twice()$$,
    $$VALUES (0::bigint, 3::bigint, 0::bigint)$$, 'they are free at once (no lease to wait out)');
SELECT results_eq($$SELECT engine_id, live FROM flowforge.list_engines()$$, $$VALUES ('e1', true), ('e2', false)$$,
                  'e2 no longer counts as live, so e1''s share is all of them');
SELECT is(flowforge.leave_duties('e2'), 0, 'a second leave_duties gives back nothing and fails nothing');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is((SELECT count(*)::int FROM jsonb_object_keys(pg_temp.tick('e1'))), 5,
          'e1''s next tick takes the three over: it serves all five');
SELECT ok((SELECT bool_and(generation >= 3) FROM flowforge.engine e
           WHERE e.engine_id = 'e1' AND e.status = 'serving'
             AND e.organization_id NOT IN (SELECT organization_id FROM e1_held)),
          'each under a new generation, as after a lapse (a late write of e2''s is refused by _serves)');
SELECT throws_ok($$SELECT flowforge.leave_duties(NULL)$$, 'FF003', NULL, 'leave_duties(NULL): FF003');
SELECT throws_ok($$SELECT flowforge.leave_duties('')$$, 'FF003', NULL, 'leave_duties(empty): FF003');

SELECT * FROM finish();
ROLLBACK;
