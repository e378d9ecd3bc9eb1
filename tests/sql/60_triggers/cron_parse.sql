-- Cron syntax: _cron_parse's normalised form, the day rule as cron_next applies
-- it, and every refusal (FF002, naming the field), including time zones and
-- the DST options.
BEGIN;
SELECT plan(156);

-- One field's values: _cron_parse with the other four fields *.
CREATE FUNCTION pg_temp.field(p_field text, p_text text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT flowforge._cron_parse(CASE p_field
        WHEN 'minute' THEN p_text || ' * * * *' WHEN 'hour' THEN '* ' || p_text || ' * * *'
        WHEN 'dom' THEN '* * ' || p_text || ' * *' WHEN 'month' THEN '* * * ' || p_text || ' *'
        ELSE '* * * * ' || p_text END) -> p_field
$$;

-- A refused expression: FF002, and the message names the field (two tests).
CREATE FUNCTION pg_temp.refused(p_expr text, p_field text, p_what text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    RETURN NEXT throws_ok(format('SELECT flowforge._cron_parse(%L)', p_expr), 'FF002'::char(5), NULL::text,
                          p_what || ': FF002');
    RETURN NEXT throws_like(format('SELECT flowforge._cron_parse(%L)', p_expr), '%' || p_field || '%',
                            p_what || ': the message names ' || p_field);
END;
$$;

-- ------------------------------------------------------------------ the parsed form
SELECT is(flowforge._cron_parse('*/15 9-17 * * MON-FRI'),
          '{"minute": [0, 15, 30, 45], "hour": [9, 10, 11, 12, 13, 14, 15, 16, 17],
            "dom": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31],
            "month": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], "dow": [1, 2, 3, 4, 5],
            "dom_star": true, "dow_star": false, "hour_star": false, "minute_star": true}'::jsonb,
          'the parsed form: sorted value arrays per field and whether each field starts with *');

-- numbers, lists, ranges
SELECT is(pg_temp.field('minute', '7'), '[7]', 'a number');
SELECT is(pg_temp.field('minute', '05'), '[5]', 'a number with a leading zero');
SELECT is(pg_temp.field('minute', '5,1,30,5'), '[1, 5, 30]', 'a list: sorted, duplicates dropped');
SELECT is(pg_temp.field('hour', '10-12'), '[10, 11, 12]', 'a range includes both ends');
SELECT is(pg_temp.field('hour', '1-3,20-21,12'), '[1, 2, 3, 12, 20, 21]', 'a list of ranges and numbers');
SELECT is(pg_temp.field('dom', '31'), '[31]', 'day-of-month 31');
SELECT is(pg_temp.field('minute', '0-59'), pg_temp.field('minute', '*'), '0-59 is every minute');
-- steps
SELECT is(pg_temp.field('minute', '*/20'), '[0, 20, 40]', '*/n steps from the field''s minimum');
SELECT is(pg_temp.field('dom', '*/10'), '[1, 11, 21, 31]', '*/n in day-of-month starts at 1');
SELECT is(pg_temp.field('minute', '10-30/10'), '[10, 20, 30]', 'a-b/n');
SELECT is(pg_temp.field('minute', '10-35/10'), '[10, 20, 30]', 'a-b/n stops at b');
SELECT is(pg_temp.field('minute', '50/5'), '[50, 55]', 'a/n runs from a to the field''s maximum');
SELECT is(pg_temp.field('hour', '*/5'), '[0, 5, 10, 15, 20]', '*/5 hours');
SELECT is(pg_temp.field('minute', '*/90'), '[0]', 'a step longer than the field takes the start only');
SELECT is(pg_temp.field('month', '*/3'), '[1, 4, 7, 10]', '*/3 months: quarters');
SELECT is(pg_temp.field('minute', '59/15'), '[59]', 'a/n starting at the maximum is the maximum');
SELECT is(pg_temp.field('minute', '0-10/5,30'), '[0, 5, 10, 30]', 'a step inside a list');
-- names
SELECT is(pg_temp.field('month', 'JAN'), '[1]', 'month name');
SELECT is(pg_temp.field('month', 'jan-Mar'), '[1, 2, 3]', 'month names in a range, any case');
SELECT is(pg_temp.field('month', 'jul,DEC,feb'), '[2, 7, 12]', 'a list of month names');
SELECT is(pg_temp.field('month', 'FEB/3'), '[2, 5, 8, 11]', 'a month name with a step');
SELECT is(pg_temp.field('month', 'jun-8'), '[6, 7, 8]', 'a name and a number in one range');
SELECT is(pg_temp.field('dow', 'SUN'), '[0]', 'weekday name: SUN = 0');
SELECT is(pg_temp.field('dow', 'mon-fri'), '[1, 2, 3, 4, 5]', 'weekday names in a range');
SELECT is(pg_temp.field('dow', 'Mon-Sat/2'), '[1, 3, 5]', 'weekday range with a step');
SELECT is(pg_temp.field('dow', 'sat,TUE'), '[2, 6]', 'a list of weekday names');
-- 7 = Sunday
SELECT is(pg_temp.field('dow', '7'), '[0]', 'weekday 7 is Sunday, stored as 0');
SELECT is(pg_temp.field('dow', '0,7'), '[0]', '0 and 7 are one day');
SELECT is(pg_temp.field('dow', '5-7'), '[0, 5, 6]', 'FRI-7: Friday to Sunday');
SELECT is(pg_temp.field('dow', '*'), '[0, 1, 2, 3, 4, 5, 6]', '* in day-of-week: each day once');
SELECT is(pg_temp.field('dow', '1/2'), '[0, 1, 3, 5]', 'a/n in day-of-week runs to 7: 1/2 = Mon, Wed, Fri, Sun');
SELECT is(pg_temp.field('dow', '*/2'), '[0, 2, 4, 6]', '*/2 in day-of-week');
-- the star flags
SELECT is(flowforge._cron_parse('* * * * *') - ARRAY['minute', 'hour', 'dom', 'month', 'dow'],
          '{"dom_star": true, "dow_star": true, "hour_star": true, "minute_star": true}', 'all * : all flags set');
SELECT is(flowforge._cron_parse('0 */3 */2 * 1') - ARRAY['minute', 'hour', 'dom', 'month', 'dow'],
          '{"dom_star": true, "dow_star": false, "hour_star": true, "minute_star": false}',
          'a field starting with */n is starred too (Vixie)');
SELECT is(flowforge._cron_parse('0 0-23 1-31 * 0-7') - ARRAY['minute', 'hour', 'dom', 'month', 'dow'],
          '{"dom_star": false, "dow_star": false, "hour_star": false, "minute_star": false}',
          'a full range written out is not starred');
-- macros
SELECT is(flowforge._cron_parse('@yearly'), flowforge._cron_parse('0 0 1 1 *'), '@yearly = 0 0 1 1 *');
SELECT is(flowforge._cron_parse('@annually'), flowforge._cron_parse('0 0 1 1 *'), '@annually = 0 0 1 1 *');
SELECT is(flowforge._cron_parse('@monthly'), flowforge._cron_parse('0 0 1 * *'), '@monthly = 0 0 1 * *');
SELECT is(flowforge._cron_parse('@weekly'), flowforge._cron_parse('0 0 * * 0'), '@weekly = 0 0 * * 0');
SELECT is(flowforge._cron_parse('@daily'), flowforge._cron_parse('0 0 * * *'), '@daily = 0 0 * * *');
SELECT is(flowforge._cron_parse('@midnight'), flowforge._cron_parse('0 0 * * *'), '@midnight = 0 0 * * *');
SELECT is(flowforge._cron_parse('@hourly'), flowforge._cron_parse('0 * * * *'), '@hourly = 0 * * * *');
SELECT is(flowforge._cron_parse(' @Daily '), flowforge._cron_parse('0 0 * * *'), 'macros: any case, blanks around');
-- whitespace
SELECT is(flowforge._cron_parse(E'  0\t12   * *\t* '), flowforge._cron_parse('0 12 * * *'),
          'fields are separated by any run of spaces and tabs; leading and trailing blanks are ignored');

-- ------------------------------------------------------------------ the day rule, as cron_next applies it
-- January 2024: Monday the 1st; Fridays 5, 12, 19, 26.
SELECT is(ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse('0 0 13 * 5'), '2024-01-01 00:00+00', '2024-01-31 00:00+00', 'UTC')),
          ARRAY['2024-01-05', '2024-01-12', '2024-01-13', '2024-01-19', '2024-01-26']::timestamptz[],
          'both day fields restricted: a day matches if EITHER matches (the 13th, and every Friday)');
SELECT is(ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse('0 0 13 * *'), '2024-01-01 00:00+00', '2024-03-31 00:00+00', 'UTC')),
          ARRAY['2024-01-13', '2024-02-13', '2024-03-13']::timestamptz[],
          'day-of-week * : only day-of-month counts');
SELECT is(ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse('0 0 * * FRI'), '2024-01-01 00:00+00', '2024-01-31 00:00+00', 'UTC')),
          ARRAY['2024-01-05', '2024-01-12', '2024-01-19', '2024-01-26']::timestamptz[],
          'day-of-month * : only day-of-week counts');
SELECT is(ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse('0 0 */2 * MON'), '2023-12-31 00:00+00', '2024-02-29 00:00+00', 'UTC')),
          ARRAY['2024-01-01', '2024-01-15', '2024-01-29', '2024-02-05', '2024-02-19']::timestamptz[],
          'day-of-month */2 starts with *: a day must match both (odd days that are Mondays), as in Vixie cron');
SELECT is(ARRAY(SELECT flowforge._cron_slots(flowforge._cron_parse('0 0 1-31 * 1'), '2024-01-01 00:00+00', '2024-01-04 00:00+00', 'UTC')),
          ARRAY['2024-01-02', '2024-01-03', '2024-01-04']::timestamptz[],
          '1-31 does not start with *: OR with day-of-week, so every day');
SELECT is(flowforge.cron_next('0 0 30 2 MON', '2024-01-01 00:00+00'), '2024-02-05 00:00+00',
          'February 30 never exists, but under the OR rule the Mondays of February fire');
SELECT is(flowforge.cron_next('0 0 31 * *', '2024-04-01 00:00+00'), '2024-05-31 00:00+00',
          'the 31st skips months that have none');
SELECT is(flowforge.cron_next('0 0 29 2 *', '2027-03-01 00:00+00'), '2028-02-29 00:00+00', 'leap day: the next leap year');
SELECT is(flowforge.cron_next('0 0 29 2 *', '2096-03-01 00:00+00'), '2104-02-29 00:00+00', 'leap day: 2100 is no leap year');
SELECT is(flowforge.cron_next('0 0 29 2 */7', '2097-01-01 00:00+00'), '2128-02-29 00:00+00',
          'a leap day that is a Sunday: 31 years ahead');
SELECT is(flowforge.cron_next('15 10 * * *', '2024-05-01 10:15:00+00'), '2024-05-02 10:15:00+00', 'strictly after: a slot equal to after is not returned');
SELECT is(flowforge.cron_next('* * * * *', '2024-05-01 10:15:00.5+00'), '2024-05-01 10:16:00+00', 'slots are whole minutes');
SELECT is(flowforge.cron_next('@yearly', '2024-05-01 00:00+00'), '2025-01-01 00:00+00', 'cron_next reads macros');
SELECT is(flowforge.cron_next('0 9 * jan-mar mon-fri', '2024-03-29 09:00+00'), '2025-01-01 09:00+00',
          'month and weekday names together (Wednesday 1 January 2025)');

-- ------------------------------------------------------------------ refusals (FF002, naming the field)
SELECT pg_temp.refused('* * * *', 'fields', 'four fields');
SELECT pg_temp.refused('* * * * * *', 'fields', 'six fields');
SELECT pg_temp.refused('', 'missing', 'an empty expression');
SELECT pg_temp.refused('   ', 'missing', 'a blank expression');
SELECT throws_ok('SELECT flowforge._cron_parse(NULL)', 'FF002'::char(5), NULL::text, 'NULL: FF002');
SELECT pg_temp.refused('60 * * * *', 'minute field', 'minute 60');
SELECT pg_temp.refused('* 24 * * *', 'hour field', 'hour 24');
SELECT pg_temp.refused('* * 0 * *', 'day-of-month field', 'day-of-month 0');
SELECT pg_temp.refused('* * 32 * *', 'day-of-month field', 'day-of-month 32');
SELECT pg_temp.refused('* * * 0 *', 'month field', 'month 0');
SELECT pg_temp.refused('* * * 13 *', 'month field', 'month 13');
SELECT pg_temp.refused('* * * * 8', 'day-of-week field', 'day-of-week 8');
SELECT pg_temp.refused('5-60 * * * *', 'minute field', 'a range ending out of range');
SELECT pg_temp.refused('99999999999 * * * *', 'minute field', 'a huge number');
SELECT pg_temp.refused('*/0 * * * *', 'minute field', 'step 0');
SELECT pg_temp.refused('* 1-5/00 * * *', 'hour field', 'step 00 in a range');
SELECT pg_temp.refused('* * 20-10 * *', 'day-of-month field', 'a reversed range');
SELECT pg_temp.refused('* * * * FRI-MON', 'day-of-week field', 'a reversed range of names');
SELECT pg_temp.refused('* * * FOO *', 'month field', 'an unknown month name');
SELECT pg_temp.refused('* * * MON *', 'month field', 'a weekday name in the month field');
SELECT pg_temp.refused('* * * * JAN', 'day-of-week field', 'a month name in the day-of-week field');
SELECT pg_temp.refused('a * * * *', 'minute field', 'a letter in the minute field');
SELECT pg_temp.refused('1,,2 * * * *', 'minute field', 'an empty list item');
SELECT pg_temp.refused('* 1, * * *', 'hour field', 'a trailing comma');
SELECT pg_temp.refused('* * ,1 * *', 'day-of-month field', 'a leading comma');
SELECT pg_temp.refused('1-2-3 * * * *', 'minute field', 'garbage: 1-2-3');
SELECT pg_temp.refused('*-5 * * * *', 'minute field', 'garbage: *-5');
SELECT pg_temp.refused('* * ? * *', 'day-of-month field', 'garbage: ? (Quartz)');
SELECT pg_temp.refused('* * L * *', 'day-of-month field', 'garbage: L (Quartz)');
SELECT pg_temp.refused('* * * * 1#2', 'day-of-week field', 'garbage: 1#2 (Quartz)');
SELECT pg_temp.refused('5/ * * * *', 'minute field', 'garbage: 5/');
SELECT pg_temp.refused('-5 * * * *', 'minute field', 'garbage: a negative number');
SELECT pg_temp.refused('@reboot', 'macro', 'an unknown macro');
SELECT pg_temp.refused('0 0 30 2 *', 'never fires', 'February 30 never fires');
SELECT pg_temp.refused('0 0 31 4,6,9,11 *', 'never fires', 'the 31st of 30-day months never fires');
SELECT pg_temp.refused('0 0 30,31 feb */2', 'never fires', 'a starred day-of-week offers no alternative');
SELECT lives_ok($$SELECT flowforge._cron_parse('0 0 29 2 *')$$, 'February 29 fires (in leap years)');
SELECT lives_ok($$SELECT flowforge._cron_parse('0 0 31 1,2 *')$$, 'one listed month holding the day is enough');

-- ------------------------------------------------------------------ time zones and the DST options
SELECT is(flowforge._check_timezone('America/New_York'), 'America/New_York', 'an IANA zone name is returned as given');
SELECT is(flowforge._check_timezone('UTC'), 'UTC', 'UTC');
SELECT is(flowforge._check_timezone('EST5EDT'), 'EST5EDT', 'an upper-case zone name with a digit (looked up in the catalog)');
SELECT is((SELECT count(*) FROM pg_timezone_names WHERE flowforge._check_timezone(name) = name),
          (SELECT count(*) FROM pg_timezone_names), 'every name pg_timezone_names lists is accepted');
SELECT throws_ok($$SELECT flowforge._check_timezone('Mars/Olympus_Mons')$$, 'FF002'::char(5), NULL::text, 'an unknown zone: FF002');
SELECT throws_like($$SELECT flowforge._check_timezone('Mars/Olympus_Mons')$$, '%unknown time zone%', 'the message says unknown time zone');
SELECT throws_ok($$SELECT flowforge._check_timezone('america/new_york')$$, 'FF002'::char(5), NULL::text, 'a wrong-case name: FF002');
SELECT throws_like($$SELECT flowforge._check_timezone('america/new_york')$$, '%did you mean "America/New_York"%',
                   'the message gives the catalog spelling');
SELECT throws_ok($$SELECT flowforge._check_timezone('CEST')$$, 'FF002'::char(5), NULL::text, 'an abbreviation: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('ABC+3')$$, 'FF002'::char(5), NULL::text, 'a POSIX rule: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('EST6EDT')$$, 'FF002'::char(5), NULL::text, 'a POSIX rule shaped like EST5EDT: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('+05:30')$$, 'FF002'::char(5), NULL::text, 'a numeric offset: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('5')$$, 'FF002'::char(5), NULL::text, 'a number of hours: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('right/UTC')$$, 'FF002'::char(5), NULL::text, 'a leap-second zone (not in the catalog): FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone('')$$, 'FF002'::char(5), NULL::text, 'an empty name: FF002');
SELECT throws_ok($$SELECT flowforge._check_timezone(NULL)$$, 'FF002'::char(5), NULL::text, 'NULL: FF002');
SELECT throws_ok($$SELECT flowforge.cron_next('* * * * *', now(), 'Mars/Olympus_Mons')$$, 'FF002'::char(5), NULL::text,
                 'cron_next refuses an unknown zone');
SELECT throws_ok($$SELECT flowforge._cron_next(flowforge._cron_parse('* * * * *'), now(), 'UTC', 'later')$$,
                 'FF002'::char(5), NULL::text, 'on_gap other than shift/skip: FF002');
SELECT throws_like($$SELECT flowforge._cron_next(flowforge._cron_parse('* * * * *'), now(), 'UTC', 'later')$$,
                   '%on_gap%', 'the message names on_gap');
SELECT throws_ok($$SELECT flowforge._cron_next(flowforge._cron_parse('* * * * *'), now(), 'UTC', 'shift', 'second')$$,
                 'FF002'::char(5), NULL::text, 'on_repeat other than first/last/both: FF002');
SELECT throws_ok($$SELECT flowforge._cron_next(flowforge._cron_parse('* * * * *'), now(), 'UTC', NULL)$$,
                 'FF002'::char(5), NULL::text, 'on_gap NULL: FF002');
SELECT throws_ok($$SELECT * FROM flowforge._cron_slots(flowforge._cron_parse('* * * * *'), now(), now(), 'UTC', 'shift', 'BOTH')$$,
                 'FF002'::char(5), NULL::text, '_cron_slots checks on_repeat too (exact spelling)');
SELECT throws_ok($$SELECT flowforge._cron_next('{"minute": [60]}', now(), 'UTC')$$, 'FF002'::char(5), NULL::text,
                 'a parsed form not made by _cron_parse: FF002');
SELECT throws_ok($$SELECT flowforge._cron_next(jsonb_set(flowforge._cron_parse('0 0 * * *'), '{hour}', '[24]'), now(), 'UTC')$$,
                 'FF002'::char(5), NULL::text, 'a parsed form with a value out of range: FF002');

SELECT * FROM finish();
ROLLBACK;
