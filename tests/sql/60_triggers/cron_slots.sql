-- _cron_slots: every slot in (after, until], ascending, at most max_slots — the
-- catch-up after downtime — and what one search costs.
BEGIN;
SELECT plan(24);

CREATE FUNCTION pg_temp.slots(p_expr text, p_after timestamptz, p_until timestamptz, p_zone text DEFAULT 'UTC',
                              p_max integer DEFAULT 1000, p_gap text DEFAULT 'shift', p_repeat text DEFAULT 'first')
RETURNS timestamptz[]
LANGUAGE sql AS $$
    SELECT ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse(p_expr), p_after, p_until, p_zone, p_gap, p_repeat, p_max))
$$;

-- ------------------------------------------------------------------ the window
SELECT is(pg_temp.slots('*/15 * * * *', '2024-05-01 10:00+00', '2024-05-01 11:00+00'),
          ARRAY['2024-05-01 10:15+00', '2024-05-01 10:30+00', '2024-05-01 10:45+00', '2024-05-01 11:00+00']::timestamptz[],
          'the window is (after, until]: after excluded, until included, ascending');
SELECT is(pg_temp.slots('*/15 * * * *', '2024-05-01 10:00+00', '2024-05-01 10:00+00'), '{}'::timestamptz[],
          'until = after: empty');
SELECT is(pg_temp.slots('*/15 * * * *', '2024-05-01 10:00+00', '2024-05-01 09:00+00'), '{}'::timestamptz[],
          'until before after: empty');
SELECT is(pg_temp.slots('0 0 1 1 *', '2024-05-01 00:00+00', '2024-12-31 23:59+00'), '{}'::timestamptz[],
          'no slot inside the window: empty');
SELECT is(pg_temp.slots('*/15 * * * *', NULL, '2024-05-01 10:00+00'), '{}'::timestamptz[], 'after NULL: empty');
SELECT is(pg_temp.slots('*/15 * * * *', '2024-05-01 10:00+00', NULL), '{}'::timestamptz[], 'until NULL: empty');
SELECT is(flowforge._cron_next(flowforge._cron_parse('* * * * *'), NULL, 'UTC'), NULL, '_cron_next with after NULL: NULL');

-- ------------------------------------------------------------------ max_slots
SELECT is(cardinality(pg_temp.slots('* * * * *', '2024-05-01 00:00+00', '2024-05-03 00:00+00')), 1000,
          'at most max_slots, 1000 by default');
SELECT is(pg_temp.slots('* * * * *', '2024-05-01 00:00+00', 'infinity', 'UTC', 3),
          ARRAY['2024-05-01 00:01+00', '2024-05-01 00:02+00', '2024-05-01 00:03+00']::timestamptz[],
          'max_slots 3: the first three (until may be infinity)');
SELECT is(pg_temp.slots('0 * * * *', '2024-05-01 00:00+00', '2024-05-01 06:00+00', 'UTC', 3)
          || pg_temp.slots('0 * * * *', '2024-05-01 03:00+00', '2024-05-01 06:00+00', 'UTC', 3),
          pg_temp.slots('0 * * * *', '2024-05-01 00:00+00', '2024-05-01 06:00+00'),
          'catching up in batches (resuming after the last slot) gives the same slots as one call');
SELECT is((SELECT bool_and(d > interval '0') FROM (
              SELECT s - lag(s) OVER (ORDER BY n) AS d
                FROM unnest(pg_temp.slots('*/7 */3 * * *', '2024-03-01 00:00+00', '2024-04-01 00:00+00', 'America/New_York'))
                     WITH ORDINALITY AS u(s, n)) x WHERE d IS NOT NULL),
          true, 'slots strictly increase, also across a DST change (no duplicates)');
SELECT throws_ok($$SELECT * FROM flowforge._cron_slots(flowforge._cron_parse('* * * * *'), now(), now(), 'UTC', 'shift', 'first', 0)$$,
                 'FF003'::char(5), NULL::text, 'max_slots 0: FF003');
SELECT throws_ok($$SELECT * FROM flowforge._cron_slots(flowforge._cron_parse('* * * * *'), now(), now(), 'UTC', 'shift', 'first', 100001)$$,
                 'FF003'::char(5), NULL::text, 'max_slots over 100000: FF003');
SELECT throws_ok($$SELECT * FROM flowforge._cron_slots(flowforge._cron_parse('* * * * *'), 'infinity', 'infinity', 'UTC')$$,
                 'FF003'::char(5), NULL::text, 'after infinity: FF003');
SELECT throws_ok($$SELECT * FROM flowforge._cron_slots('{}', now(), now(), 'UTC')$$,
                 'FF002'::char(5), NULL::text, 'a parsed form that is not one: FF002');

-- ------------------------------------------------------------------ catch-up across DST changes
SELECT is(pg_temp.slots('0 * * * *', '2024-11-03 03:00+00', '2024-11-03 09:00+00', 'America/New_York'),
          ARRAY['2024-11-03 04:00+00', '2024-11-03 05:00+00', '2024-11-03 06:00+00', '2024-11-03 07:00+00',
                '2024-11-03 08:00+00', '2024-11-03 09:00+00']::timestamptz[],
          'hourly through the fall back: every real hour, 01:00 twice (EDT, EST)');
SELECT is(pg_temp.slots('0 * * * *', '2024-03-10 03:00+00', '2024-03-10 09:00+00', 'America/New_York'),
          ARRAY['2024-03-10 04:00+00', '2024-03-10 05:00+00', '2024-03-10 06:00+00', '2024-03-10 07:00+00',
                '2024-03-10 08:00+00', '2024-03-10 09:00+00']::timestamptz[],
          'hourly through the spring forward: still every real hour (02:00 does not exist, 03:00 EDT does)');
SELECT is(pg_temp.slots('30 2 * * *', '2024-03-08 00:00+00', '2024-03-12 12:00+00', 'America/New_York'),
          ARRAY['2024-03-08 07:30+00', '2024-03-09 07:30+00', '2024-03-10 07:00+00', '2024-03-11 06:30+00',
                '2024-03-12 06:30+00']::timestamptz[],
          'daily 02:30 over five days of downtime: EST, EST, shifted to 03:00 EDT, EDT, EDT');
SELECT is(pg_temp.slots('30 2 * * *', '2024-03-08 00:00+00', '2024-03-12 12:00+00', 'America/New_York', 1000, 'skip'),
          ARRAY['2024-03-08 07:30+00', '2024-03-09 07:30+00', '2024-03-11 06:30+00', '2024-03-12 06:30+00']::timestamptz[],
          'the same with skip: four firings');
SELECT is(pg_temp.slots('0,30 1 * * *', '2024-11-02 00:00+00', '2024-11-05 00:00+00', 'America/New_York', 1000, 'shift', 'both'),
          ARRAY['2024-11-02 05:00+00', '2024-11-02 05:30+00', '2024-11-03 05:00+00', '2024-11-03 05:30+00',
                '2024-11-03 06:00+00', '2024-11-03 06:30+00', '2024-11-04 06:00+00', '2024-11-04 06:30+00']::timestamptz[],
          'both, through the fall back: the repeated hour''s slots in instant order (EDT pass, then EST pass)');
SELECT is(cardinality(pg_temp.slots('*/5 * * * *', '2024-10-26 00:00+00', '2024-10-28 00:00+00', 'Europe/Berlin')),
          48 * 12, 'every 5 minutes for 48 real hours across the Berlin fall back: 576 slots (the repeated hour twice)');
SELECT is(cardinality(pg_temp.slots('*/5 * * * *', '2024-03-30 00:00+00', '2024-04-01 00:00+00', 'Europe/Berlin')),
          48 * 12, 'and across the Berlin spring forward: 576 (every real instant, none for the missing hour)');

-- ------------------------------------------------------------------ cost
CREATE FUNCTION pg_temp.elapsed(p_sql text) RETURNS interval LANGUAGE plpgsql AS $$
DECLARE
    v_start timestamptz := clock_timestamp();
BEGIN
    EXECUTE p_sql;
    RETURN clock_timestamp() - v_start;
END;
$$;
SELECT cmp_ok(pg_temp.elapsed($$SELECT flowforge.cron_next('0 0 29 2 *', '2027-03-01 00:00+00', 'America/New_York')$$),
              '<', interval '100 ms', 'the next leap day from 2027-03-01 in well under 100 ms');
SELECT cmp_ok(pg_temp.elapsed($$SELECT count(*) FROM flowforge._cron_slots(flowforge._cron_parse('* * * * *'), '2024-11-02 12:00+00', 'infinity', 'America/New_York')$$),
              '<', interval '2 s', '1000 minute slots across a fall back (the costliest catch-up) in under 2 s');

SELECT * FROM finish();
ROLLBACK;
