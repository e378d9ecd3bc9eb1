-- Cron slots across DST transitions: wildcard hour (real instants) versus a fixed
-- hour (on_gap shift/skip, on_repeat first/last/both), in both hemispheres, for a
-- 30-minute shift, for non-hour offsets, and in UTC. Every expected instant is
-- written in UTC with the local reading beside it.
BEGIN;
SELECT plan(61);

CREATE FUNCTION pg_temp.slots(p_expr text, p_after timestamptz, p_until timestamptz, p_zone text,
                              p_gap text DEFAULT 'shift', p_repeat text DEFAULT 'first') RETURNS timestamptz[]
LANGUAGE sql AS $$
    SELECT ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse(p_expr), p_after, p_until, p_zone, p_gap, p_repeat))
$$;
CREATE FUNCTION pg_temp.next(p_expr text, p_after timestamptz, p_zone text,
                             p_gap text DEFAULT 'shift', p_repeat text DEFAULT 'first') RETURNS timestamptz
LANGUAGE sql AS $$
    SELECT flowforge._cron_next(flowforge._cron_parse(p_expr), p_after, p_zone, p_gap, p_repeat)
$$;

-- ============================================================ America/New_York
-- Spring forward 2024-03-10 at 07:00Z: 02:00 EST -> 03:00 EDT (02:00-02:59 does not exist).
SELECT is(pg_temp.slots('30 * * * *', '2024-03-10 05:00+00', '2024-03-10 09:00+00', 'America/New_York'),
          ARRAY['2024-03-10 05:30+00', '2024-03-10 06:30+00', '2024-03-10 07:30+00', '2024-03-10 08:30+00']::timestamptz[],
          'New York spring, wildcard hour: 00:30 EST, 01:30 EST, (02:30 does not exist), 03:30 EDT, 04:30 EDT');
SELECT is(pg_temp.slots('0 */2 * * *', '2024-03-10 04:00+00', '2024-03-10 09:00+00', 'America/New_York'),
          ARRAY['2024-03-10 05:00+00', '2024-03-10 08:00+00']::timestamptz[],
          'New York spring, */2 hour is a wildcard: 00:00 EST, (02:00 does not exist), 04:00 EDT');
SELECT is(pg_temp.slots('30 * * * *', '2024-03-10 05:00+00', '2024-03-10 09:00+00', 'America/New_York', 'shift', 'first'),
          pg_temp.slots('30 * * * *', '2024-03-10 05:00+00', '2024-03-10 09:00+00', 'America/New_York', 'skip', 'last'),
          'a wildcard hour ignores on_gap and on_repeat');
SELECT is(pg_temp.next('30 2 * * *', '2024-03-10 00:00+00', 'America/New_York', 'shift'), '2024-03-10 07:00+00',
          'New York spring, fixed hour, shift: 02:30 fires at the end of the gap, 03:00 EDT');
SELECT is(flowforge.cron_next('30 2 * * *', '2024-03-10 00:00+00', 'America/New_York'), '2024-03-10 07:00+00',
          'shift is cron_next''s default');
SELECT is(pg_temp.next('30 2 * * *', '2024-03-10 00:00+00', 'America/New_York', 'skip'), '2024-03-11 06:30+00',
          'New York spring, fixed hour, skip: no firing on the 10th; next 02:30 EDT on the 11th');
SELECT is(pg_temp.slots('0,15,30,45 2 * * *', '2024-03-10 05:00+00', '2024-03-11 07:00+00', 'America/New_York'),
          ARRAY['2024-03-10 07:00+00', '2024-03-11 06:00+00', '2024-03-11 06:15+00', '2024-03-11 06:30+00', '2024-03-11 06:45+00']::timestamptz[],
          'shift: four slots in one gap are one firing at 03:00 EDT');
SELECT is(pg_temp.slots('0,30 2-3 * * *', '2024-03-10 05:00+00', '2024-03-10 09:00+00', 'America/New_York'),
          ARRAY['2024-03-10 07:00+00', '2024-03-10 07:30+00']::timestamptz[],
          'shift: 02:00 and 02:30 collapse into the real 03:00 EDT slot; then 03:30 EDT');
SELECT is(pg_temp.slots('0,30 2-3 * * *', '2024-03-10 05:00+00', '2024-03-10 09:00+00', 'America/New_York', 'skip'),
          ARRAY['2024-03-10 07:00+00', '2024-03-10 07:30+00']::timestamptz[],
          'skip: the real 03:00 and 03:30 EDT slots still fire');
SELECT is(pg_temp.next('0 3 * * *', '2024-03-10 00:00+00', 'America/New_York'), '2024-03-10 07:00+00',
          'a slot at the end of the gap is an ordinary slot');
SELECT is(pg_temp.next('30 2 * * *', '2024-03-10 07:00+00', 'America/New_York', 'shift'), '2024-03-11 06:30+00',
          'after the shifted firing itself: the next day');

-- Fall back 2024-11-03 at 06:00Z: 02:00 EDT -> 01:00 EST (01:00-01:59 happens twice).
SELECT is(pg_temp.slots('30 * * * *', '2024-11-03 04:00+00', '2024-11-03 08:00+00', 'America/New_York'),
          ARRAY['2024-11-03 04:30+00', '2024-11-03 05:30+00', '2024-11-03 06:30+00', '2024-11-03 07:30+00']::timestamptz[],
          'New York fall, wildcard hour: 00:30 EDT, 01:30 EDT, 01:30 EST, 02:30 EST (both passes)');
SELECT is(pg_temp.next('*/20 * * * *', '2024-11-03 05:50+00', 'America/New_York'), '2024-11-03 06:00+00',
          'wildcard hour, after 01:50 EDT: 01:00 EST, an earlier wall clock but the next instant');
SELECT is(pg_temp.next('*/20 * * * *', '2024-11-03 06:10+00', 'America/New_York'), '2024-11-03 06:20+00',
          'wildcard hour, inside the second pass: 01:20 EST');
SELECT is(pg_temp.next('30 1 * * *', '2024-11-03 00:00+00', 'America/New_York', 'shift', 'first'), '2024-11-03 05:30+00',
          'New York fall, fixed hour, first: 01:30 EDT');
SELECT is(pg_temp.next('30 1 * * *', '2024-11-03 05:30+00', 'America/New_York', 'shift', 'first'), '2024-11-04 06:30+00',
          'first: after 01:30 EDT the next firing is the next day (01:30 EST is not one)');
SELECT is(flowforge.cron_next('30 1 * * *', '2024-11-03 05:30+00', 'America/New_York'), '2024-11-04 06:30+00',
          'first is cron_next''s default');
SELECT is(pg_temp.next('30 1 * * *', '2024-11-03 00:00+00', 'America/New_York', 'shift', 'last'), '2024-11-03 06:30+00',
          'New York fall, fixed hour, last: 01:30 EST');
SELECT is(pg_temp.slots('30 1 * * *', '2024-11-02 12:00+00', '2024-11-04 12:00+00', 'America/New_York', 'shift', 'both'),
          ARRAY['2024-11-03 05:30+00', '2024-11-03 06:30+00', '2024-11-04 06:30+00']::timestamptz[],
          'New York fall, fixed hour, both: 01:30 EDT and 01:30 EST');
SELECT is(pg_temp.slots('30 1 * * *', '2024-11-02 12:00+00', '2024-11-04 12:00+00', 'America/New_York', 'shift', 'last'),
          ARRAY['2024-11-03 06:30+00', '2024-11-04 06:30+00']::timestamptz[],
          'last: one firing on the transition day');
SELECT is(pg_temp.next('30 1 * * *', '2024-11-03 05:45+00', 'America/New_York', 'shift', 'last'), '2024-11-03 06:30+00',
          'last, after 01:45 EDT: 01:30 EST');
SELECT is(pg_temp.next('30 1 * * *', '2024-11-03 05:45+00', 'America/New_York', 'shift', 'both'), '2024-11-03 06:30+00',
          'both, after 01:45 EDT: 01:30 EST');
SELECT is(pg_temp.slots('0 1-3 * * *', '2024-11-03 00:00+00', '2024-11-03 12:00+00', 'America/New_York'),
          ARRAY['2024-11-03 05:00+00', '2024-11-03 07:00+00', '2024-11-03 08:00+00']::timestamptz[],
          'fixed hours 1-3, first: 01:00 EDT, 02:00 EST, 03:00 EST');

-- ============================================================ Europe/Berlin
-- Spring forward 2024-03-31 at 01:00Z: 02:00 CET -> 03:00 CEST.
SELECT is(pg_temp.slots('30 * * * *', '2024-03-30 23:00+00', '2024-03-31 03:00+00', 'Europe/Berlin'),
          ARRAY['2024-03-30 23:30+00', '2024-03-31 00:30+00', '2024-03-31 01:30+00', '2024-03-31 02:30+00']::timestamptz[],
          'Berlin spring, wildcard hour: 00:30 CET, 01:30 CET, (02:30 does not exist), 03:30 CEST, 04:30 CEST');
SELECT is(pg_temp.next('30 2 * * *', '2024-03-30 12:00+00', 'Europe/Berlin', 'shift'), '2024-03-31 01:00+00',
          'Berlin spring, fixed hour, shift: 03:00 CEST');
SELECT is(pg_temp.next('30 2 * * *', '2024-03-30 12:00+00', 'Europe/Berlin', 'skip'), '2024-04-01 00:30+00',
          'Berlin spring, fixed hour, skip: 02:30 CEST on 1 April');
-- Fall back 2024-10-27 at 01:00Z: 03:00 CEST -> 02:00 CET (02:00-02:59 twice).
SELECT is(pg_temp.slots('30 * * * *', '2024-10-26 23:00+00', '2024-10-27 03:00+00', 'Europe/Berlin'),
          ARRAY['2024-10-26 23:30+00', '2024-10-27 00:30+00', '2024-10-27 01:30+00', '2024-10-27 02:30+00']::timestamptz[],
          'Berlin fall, wildcard hour: 01:30 CEST, 02:30 CEST, 02:30 CET, 03:30 CET');
SELECT is(pg_temp.next('30 2 * * *', '2024-10-26 12:00+00', 'Europe/Berlin', 'shift', 'first'), '2024-10-27 00:30+00',
          'Berlin fall, fixed hour, first: 02:30 CEST');
SELECT is(pg_temp.next('30 2 * * *', '2024-10-26 12:00+00', 'Europe/Berlin', 'shift', 'last'), '2024-10-27 01:30+00',
          'Berlin fall, fixed hour, last: 02:30 CET');
SELECT is(pg_temp.slots('30 2 * * *', '2024-10-26 12:00+00', '2024-10-28 12:00+00', 'Europe/Berlin', 'shift', 'both'),
          ARRAY['2024-10-27 00:30+00', '2024-10-27 01:30+00', '2024-10-28 01:30+00']::timestamptz[],
          'Berlin fall, fixed hour, both: 02:30 CEST and 02:30 CET');
SELECT is(pg_temp.next('30 2 * * *', '2024-10-27 00:30+00', 'Europe/Berlin', 'shift', 'first'), '2024-10-28 01:30+00',
          'first, after 02:30 CEST: the next day');

-- ============================================================ Australia/Lord_Howe (30-minute shift)
-- Spring forward 2024-10-05 at 15:30Z: 02:00 (+10:30) -> 02:30 (+11); 02:00-02:29 does not exist.
SELECT is(pg_temp.slots('*/15 * * * *', '2024-10-05 15:00+00', '2024-10-05 15:45+00', 'Australia/Lord_Howe'),
          ARRAY['2024-10-05 15:15+00', '2024-10-05 15:30+00', '2024-10-05 15:45+00']::timestamptz[],
          'Lord Howe spring, wildcard hour: 01:45 (+10:30), (02:00, 02:15 do not exist), 02:30 (+11), 02:45');
SELECT is(pg_temp.next('15 2 * * *', '2024-10-05 12:00+00', 'Australia/Lord_Howe', 'shift'), '2024-10-05 15:30+00',
          'Lord Howe spring, fixed hour, shift: 02:15 fires at 02:30 (+11)');
SELECT is(pg_temp.next('15 2 * * *', '2024-10-05 12:00+00', 'Australia/Lord_Howe', 'skip'), '2024-10-06 15:15+00',
          'Lord Howe spring, fixed hour, skip: 02:15 (+11) the next day');
SELECT is(pg_temp.next('45 2 * * *', '2024-10-05 12:00+00', 'Australia/Lord_Howe', 'skip'), '2024-10-05 15:45+00',
          'Lord Howe spring: 02:45 exists (only half the hour is skipped)');
SELECT is(pg_temp.slots('*/10 2 * * *', '2024-10-05 12:00+00', '2024-10-05 18:00+00', 'Australia/Lord_Howe'),
          ARRAY['2024-10-05 15:30+00', '2024-10-05 15:40+00', '2024-10-05 15:50+00']::timestamptz[],
          'Lord Howe spring, shift: 02:00, 02:10, 02:20 and the real 02:30 are one firing');
-- Fall back 2024-04-06 at 15:00Z: 02:00 (+11) -> 01:30 (+10:30); 01:30-01:59 twice.
SELECT is(pg_temp.slots('*/15 * * * *', '2024-04-06 14:15+00', '2024-04-06 15:30+00', 'Australia/Lord_Howe'),
          ARRAY['2024-04-06 14:30+00', '2024-04-06 14:45+00', '2024-04-06 15:00+00', '2024-04-06 15:15+00', '2024-04-06 15:30+00']::timestamptz[],
          'Lord Howe fall, wildcard hour: 01:30, 01:45 (+11), 01:30, 01:45, 02:00 (+10:30)');
SELECT is(pg_temp.next('45 1 * * *', '2024-04-06 12:00+00', 'Australia/Lord_Howe', 'shift', 'first'), '2024-04-06 14:45+00',
          'Lord Howe fall, fixed hour, first: 01:45 (+11)');
SELECT is(pg_temp.next('45 1 * * *', '2024-04-06 12:00+00', 'Australia/Lord_Howe', 'shift', 'last'), '2024-04-06 15:15+00',
          'Lord Howe fall, fixed hour, last: 01:45 (+10:30)');
SELECT is(pg_temp.slots('45 1 * * *', '2024-04-06 12:00+00', '2024-04-06 18:00+00', 'Australia/Lord_Howe', 'shift', 'both'),
          ARRAY['2024-04-06 14:45+00', '2024-04-06 15:15+00']::timestamptz[],
          'Lord Howe fall, fixed hour, both');
SELECT is(pg_temp.slots('15 1 * * *', '2024-04-06 12:00+00', '2024-04-06 18:00+00', 'Australia/Lord_Howe', 'shift', 'both'),
          ARRAY['2024-04-06 14:15+00']::timestamptz[],
          'Lord Howe fall: 01:15 is before the repeated half hour, so it occurs once');

-- ============================================================ Australia/Sydney (southern hemisphere)
-- Spring forward 2024-10-05 at 16:00Z: 02:00 AEST -> 03:00 AEDT. Fall back 2024-04-06 at 16:00Z: 03:00 AEDT -> 02:00 AEST.
SELECT is(pg_temp.next('30 2 * * *', '2024-10-05 12:00+00', 'Australia/Sydney', 'shift'), '2024-10-05 16:00+00',
          'Sydney spring (October), shift: 03:00 AEDT');
SELECT is(pg_temp.next('30 2 * * *', '2024-10-05 12:00+00', 'Australia/Sydney', 'skip'), '2024-10-06 15:30+00',
          'Sydney spring, skip: 02:30 AEDT the next day');
SELECT is(pg_temp.next('30 2 * * *', '2024-04-06 12:00+00', 'Australia/Sydney', 'shift', 'first'), '2024-04-06 15:30+00',
          'Sydney fall (April), first: 02:30 AEDT');
SELECT is(pg_temp.next('30 2 * * *', '2024-04-06 12:00+00', 'Australia/Sydney', 'shift', 'last'), '2024-04-06 16:30+00',
          'Sydney fall, last: 02:30 AEST');
SELECT is(pg_temp.slots('30 * * * *', '2024-04-06 14:00+00', '2024-04-06 17:00+00', 'Australia/Sydney'),
          ARRAY['2024-04-06 14:30+00', '2024-04-06 15:30+00', '2024-04-06 16:30+00']::timestamptz[],
          'Sydney fall, wildcard hour: 01:30 AEDT, 02:30 AEDT, 02:30 AEST');
SELECT is(pg_temp.next('0 12 * * *', '2024-07-01 00:00+00', 'Australia/Sydney'), '2024-07-01 02:00+00',
          'Sydney in July is standard time (+10)');

-- ============================================================ non-hour offsets
SELECT is(flowforge.cron_next('0 9 * * *', '2024-06-01 00:00+00', 'Asia/Kolkata'), '2024-06-01 03:30+00', 'Kolkata +05:30');
SELECT is(flowforge.cron_next('0 9 * * *', '2024-06-01 00:00+00', 'Asia/Kathmandu'), '2024-06-01 03:15+00', 'Kathmandu +05:45');
-- Kathmandu moved from +05:30 to +05:45 at 1986-01-01 00:00 local (1985-12-31 18:30Z): 00:00-00:14 does not exist.
SELECT is(pg_temp.next('5 0 1 1 *', '1985-12-31 12:00+00', 'Asia/Kathmandu', 'shift'), '1985-12-31 18:30+00',
          'Kathmandu 1986, a 15-minute gap, shift: 00:05 fires at 00:15 (+05:45)');
SELECT is(pg_temp.next('5 0 1 1 *', '1985-12-31 12:00+00', 'Asia/Kathmandu', 'skip'), '1986-12-31 18:20+00',
          'Kathmandu 1986, skip: next year''s 00:05 (+05:45)');
SELECT is(pg_temp.slots('*/5 * * * *', '1985-12-31 18:20+00', '1985-12-31 18:40+00', 'Asia/Kathmandu'),
          ARRAY['1985-12-31 18:25+00', '1985-12-31 18:30+00', '1985-12-31 18:35+00', '1985-12-31 18:40+00']::timestamptz[],
          'Kathmandu 1986, wildcard hour: 23:55 (+05:30), (00:00-00:10 do not exist), 00:15, 00:20, 00:25 (+05:45)');

-- ============================================================ Pacific/Apia: a whole day skipped
-- 2011-12-30 10:00Z: 29 December 23:59:59 (-10) -> 31 December 00:00 (+14); 30 December never happened.
SELECT is(pg_temp.next('0 12 30 12 *', '2011-12-29 00:00+00', 'Pacific/Apia', 'shift'), '2011-12-30 10:00+00',
          'Apia 2011, shift: 30 December 12:00 fires at the end of the missing day, 31 December 00:00 (+14)');
SELECT is(pg_temp.next('0 12 30 12 *', '2011-12-29 00:00+00', 'Pacific/Apia', 'skip'), '2012-12-29 22:00+00',
          'Apia 2011, skip: 30 December 2012 12:00 (+14)');
SELECT is(pg_temp.slots('0 */6 * * *', '2011-12-29 12:00+00', '2011-12-30 20:00+00', 'Pacific/Apia'),
          ARRAY['2011-12-29 16:00+00', '2011-12-29 22:00+00', '2011-12-30 04:00+00', '2011-12-30 10:00+00',
                '2011-12-30 16:00+00']::timestamptz[],
          'Apia 2011, wildcard hour: 29 December 06:00, 12:00, 18:00 (-10), then 31 December 00:00, 06:00 (+14)');

-- ============================================================ UTC and the caller's session
SELECT is(flowforge.cron_next('30 2 * * *', '2024-03-10 00:00+00'), '2024-03-10 02:30+00', 'UTC is the default zone');
SELECT is(pg_temp.slots('30 2 * * *', '2024-03-09 00:00+00', '2024-03-12 00:00+00', 'UTC', 'skip', 'last'),
          ARRAY['2024-03-09 02:30+00', '2024-03-10 02:30+00', '2024-03-11 02:30+00']::timestamptz[],
          'UTC has no gaps or repeats: on_gap and on_repeat change nothing');
SELECT is(flowforge.cron_next('0 9 * * *', '2024-06-01 00:00+00', 'Etc/GMT+5'), '2024-06-01 14:00+00',
          'Etc/GMT+5 is UTC-05 (POSIX sign)');
SELECT is(flowforge.cron_next('0 12 * * *', '2024-07-01 00:00+00', 'CET'), '2024-07-01 10:00+00',
          'the zone CET keeps summer time (AT TIME ZONE ''CET'' would be the fixed abbreviation +01)');
SET LOCAL TimeZone = 'Asia/Tokyo';
SELECT is(flowforge.cron_next('30 1 * * *', '2024-11-03 00:00+00', 'America/New_York'), '2024-11-03 05:30+00',
          'the caller''s session time zone does not change the answer');
SELECT is(current_setting('TimeZone'), 'Asia/Tokyo', 'and the caller''s TimeZone setting is left as it was');

SELECT * FROM finish();
ROLLBACK;
