-- The history's partitions (0032): tick() keeps this month and the next three
-- of task_run_event, audit_log and trigger_firing created (UTC calendar
-- months, whatever the session's time zone), as the installation's duty —
-- done by the daemon that serves the default organization, or a lone tick();
-- a row no month partition holds lands in the DEFAULT partition, so an insert
-- never fails; a month the DEFAULT partition already holds rows of is left to
-- it (reported as blocked) rather than failing the duty; a past month left
-- empty (purge truncates expired ones) is dropped. The clock is steered
-- (tests/fixtures/clock.sql).
BEGIN;
SET LOCAL client_min_messages = warning;
SELECT plan(21);

CREATE FUNCTION pg_temp.months(p_table text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(to_char(p.lo AT TIME ZONE 'UTC', 'YYYY-MM'), ',' ORDER BY p.lo)
    FROM flowforge._history_partitions(p_table) p WHERE p.lo >= '2032-01-01'
$$;

SET LOCAL TimeZone = 'Pacific/Auckland';
SELECT flowforge_test.freeze_clock('2032-03-31 23:30:00+00') \gset
-- (In Auckland it is already April 1st: the months are UTC's.)
SELECT is((flowforge.tick() ->> 'partitions')::int, 12, 'tick() at the end of March 2032 (UTC) makes twelve partitions');
SELECT is(pg_temp.months('task_run_event'), '2032-03,2032-04,2032-05,2032-06', 'task_run_event: March (UTC) and the next three');
SELECT is(pg_temp.months('audit_log'), '2032-03,2032-04,2032-05,2032-06', 'audit_log: the same months');
SELECT is(pg_temp.months('trigger_firing'), '2032-03,2032-04,2032-05,2032-06', 'trigger_firing: the same months');
SELECT results_eq(
    $$SELECT p.partition::text, p.lo, p.hi FROM flowforge._history_partitions('task_run_event') p
      WHERE p.lo = '2032-03-01 00:00:00+00'$$,
    $$VALUES ('flowforge_history.task_run_event_p203203'::text, '2032-03-01 00:00:00+00'::timestamptz,
              '2032-04-01 00:00:00+00'::timestamptz)$$,
    'a month partition is named for its UTC month and holds exactly it, [first day, first day of the next)');
SELECT is((flowforge.tick() ->> 'partitions')::int, 0, 'the next tick() has nothing to make');

SELECT flowforge_test.set_clock('2032-04-15 00:00:00+00') \gset
SELECT results_eq($$SELECT (t ->> 'partitions')::int, (t ->> 'partitions_dropped')::int FROM flowforge.tick() t$$,
                  $$VALUES (3, 3)$$, 'a month later: one more month per table (July), and March, past and empty, dropped');
SELECT is(pg_temp.months('audit_log'), '2032-04,2032-05,2032-06,2032-07', 'audit_log: April to July');

-- Rows land where their time says.
INSERT INTO flowforge.audit_log (organization_id, actor, action, entity, created_at)
VALUES ('00000000-0000-0000-0000-000000000001', 'tester', 'in-may', 'x', '2032-05-31 23:59:59.999999+00'),
       ('00000000-0000-0000-0000-000000000001', 'tester', 'in-june', 'x', '2032-06-01 00:00:00+00'),
       ('00000000-0000-0000-0000-000000000001', 'tester', 'far-ahead', 'x', '2040-01-01 00:00:00+00'),
       ('00000000-0000-0000-0000-000000000001', 'tester', 'far-back', 'x', '1999-01-01 00:00:00+00');
SELECT results_eq(
    $$SELECT action::text, tableoid::regclass::text FROM flowforge.audit_log WHERE actor = 'tester' ORDER BY created_at$$,
    $$VALUES ('far-back'::text, 'flowforge_history.audit_log_default'::text),
             ('in-may', 'flowforge_history.audit_log_p203205'), ('in-june', 'flowforge_history.audit_log_p203206'),
             ('far-ahead', 'flowforge_history.audit_log_default')$$,
    'each row in its month''s partition; one no month holds (years ahead or behind) in the DEFAULT partition: the insert never fails');
SELECT lives_ok($$SELECT flowforge.define_workflow('{"name": "hp_far", "tasks": [{"key": "a"}]}')$$,
                'the API writes history at any time of the clock');

-- A month the DEFAULT partition already holds rows of is left to it: the others are made.
SELECT flowforge_test.set_clock('2039-12-20 00:00:00+00') \gset
SELECT is(flowforge._history_partitions_ahead(flowforge.now()) -> 'blocked',
          '["audit_log_p204001 (23514)"]'::jsonb,
          'December 2039: January 2040 of audit_log is blocked (the DEFAULT partition holds a row of it), reported');
SELECT is((SELECT string_agg(to_char(p.lo AT TIME ZONE 'UTC', 'YYYY-MM'), ',' ORDER BY p.lo)
           FROM flowforge._history_partitions('audit_log') p WHERE p.lo >= '2039-01-01'),
          '2039-12,2040-02,2040-03', 'audit_log gets the other months');
SELECT is(pg_temp.months('task_run_event') LIKE '%2039-12,2040-01,2040-02,2040-03', true,
          'the other tables get all four');
SELECT is((SELECT tableoid::regclass::text FROM flowforge.audit_log WHERE action = 'far-ahead'),
          'flowforge_history.audit_log_default', 'the row stays in the DEFAULT partition, readable');
SELECT cmp_ok((flowforge.tick() ->> 'partitions')::int, '=', 0, 'tick() does not fail on the blocked month (a count, no error)');
SELECT is(flowforge.tick() -> 'errors', NULL, 'and reports no failed duty');

-- The installation's duty: the daemon that serves the default organization does it (tick's duty leases).
SELECT flowforge_test.set_clock('2041-06-30 23:59:50+00') \gset
SELECT is(jsonb_typeof(flowforge.tick('hp-daemon-1') -> 'serving' -> '00000000-0000-0000-0000-000000000001'), 'number',
          'fixture: daemon 1 serves the default organization (and made June to September)');
SELECT flowforge_test.set_clock('2041-07-01 00:00:05+00') \gset
SELECT is((flowforge.tick('hp-daemon-2') ->> 'partitions')::int, 0,
          'July 1st: a daemon that does not serve the default organization makes no partition');
SELECT is((flowforge.tick('hp-daemon-1') ->> 'partitions')::int, 3, 'the one that serves it makes October''s');

-- Dropping: only purge's emptied month partitions, never one with rows, never the DEFAULT partition.
SELECT throws_ok($$SELECT flowforge._history_partition_drop('flowforge_history.audit_log_p203205')$$, 'FF011', NULL,
                 'a month partition that holds rows cannot be dropped (purge empties it first)');
SELECT throws_ok($$SELECT flowforge._history_partition_drop('flowforge_history.audit_log_default')$$, 'FF003', NULL,
                 'the DEFAULT partition is never dropped');

SELECT * FROM finish();
ROLLBACK;
