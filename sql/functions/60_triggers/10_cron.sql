-- Cron schedules, evaluated in SQL, in the schedule's IANA time zone.
--
--   cron_next(expr, after, timezone default 'UTC') -> timestamptz   the first slot strictly after `after`
--   _cron_parse(expr) -> jsonb                                      validated, normalised form (stored by triggers)
--   _cron_next(parsed, after, timezone, on_gap, on_repeat) -> timestamptz
--   _cron_slots(parsed, after, until, timezone, on_gap, on_repeat, max_slots) -> setof timestamptz
--   _check_timezone(timezone) -> text                               FF002 unless pg_timezone_names has the name
--
-- Syntax and DST rules, with worked examples: docs/cron.md. In short: five fields
-- (minute hour day-of-month month day-of-week) with *, numbers, lists, ranges,
-- steps (*/n, a-b/n, a/n = a-max/n), JAN-DEC and SUN-SAT, 7 = Sunday, the @yearly
-- .. @hourly macros, and Vixie's day rule: when neither day field starts with *,
-- a day matches if EITHER matches; otherwise it must match both (a plain * matches
-- every day, so only the other field counts).
--
-- A slot is a local wall-clock time in the zone. When the hour field starts with
-- * the schedule fires at every real instant whose local time matches (both
-- passes of a repeated hour; nothing in a skipped hour). Otherwise a slot that
-- falls in a gap fires once at the first instant after the gap (on_gap 'shift',
-- several slots of one gap collapse into that one firing) or not at all ('skip');
-- a slot that occurs twice fires at the first occurrence ('first'), the second
-- ('last') or both ('both').
--
-- How a slot is found. Everything works on naive local minutes L (timestamp
-- without time zone) and asks the zone only about candidates:
--   1. Start at L0 = local(after), or, when the UTC offset falls within the 24
--      hours after `after`, the local time just after the fall if that is
--      earlier (the second pass of a repeated hour reads earlier than
--      local(after) but is later in time). The fall is found by bisection.
--   2. _cron_local_next walks the calendar from L0: a month the month field does
--      not list is left in one step (to the first day of the next listed month);
--      in a listed month it tests each day against the day rule; on a matching
--      day it takes the first listed hour and minute at or after the start. No
--      minute-by-minute stepping.
--   3. The candidate is mapped to instants with the session TimeZone set to the
--      schedule's zone (set_config inside these functions; the function's own
--      SET clause restores the caller's value on exit). The offsets 24 hours
--      before, at and 24 hours after L::timestamptz are compared: all equal (the
--      common case) means no transition is near and L is exactly one instant.
--      Otherwise every distinct offset o is tried, and L - o is an occurrence of
--      L when it round-trips ((L - o)::timestamp = L): none is a gap, two a
--      repeat. For a gap the first instant after it (the transition) is found by
--      bisection over the whole seconds between L - max(o) and L - min(o), at
--      most 17 steps for a one-day gap, and the walk resumes at the gap's end.
--      No zone's rules are written down here.
--   4. Instants at or before `after` are dropped and the smallest remaining one
--      is kept. A later candidate can only undercut it if it reads at most the
--      latest local time of an instant in (after, answer] - local(answer), or the
--      local time just before a fall in that span - so the walk stops at the
--      first candidate past that. Outside a transition that is the very next
--      candidate: usually two candidates per search.
--   Cost bound, per slot: one step per run of unlisted months, one test per day
--   of a listed month until the match (the search gives up, returning NULL,
--   after 400 years: a full Gregorian cycle, so a day combination that exists
--   at all is found), at most 24 + 60 hour and minute tests on the matching
--   day, and four time zone conversions per candidate. Next to a transition: a
--   bisection (at most 17 conversions) for the start, for the stop bound and for
--   each gap, and, in a repeated hour, up to one candidate per listed minute of
--   the shift (a 'both' or wildcard-hour schedule listing every minute looks at
--   about 30 candidates per slot there). `0 0 29 2 *` from 2027-03-01: one month
--   step and 29 day tests. _cron_parse refuses expressions that cannot fire, and
--   _cron_slots re-checks a stored form, so NULL is not reached in practice.
--   _cron_slots repeats the search from each slot it returns, so the slots of
--   one gap collapse (the next search is strictly after the previous slot).
--
-- Why set_config('TimeZone') and not AT TIME ZONE: AT TIME ZONE looks a name up
-- as a time zone abbreviation first, so AT TIME ZONE 'CET' (or EET, MET, WET) is
-- the fixed offset +01:00 all year, while the IANA zone CET observes summer time.
-- The TimeZone setting always loads the zone itself.

-- Raise FF002 for a refused schedule. Never returns.
CREATE OR REPLACE FUNCTION flowforge._cron_invalid(p_message text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'invalid cron schedule: %', p_message
        USING ERRCODE = 'FF002',
              HINT = 'Fix the cron expression, time zone or DST option; nothing was evaluated. See docs/cron.md for the syntax.';
END;
$$;
COMMENT ON FUNCTION flowforge._cron_invalid(text) IS
  'Internal: raises FF002 (invalid definition) with ''invalid cron schedule: '' and the given message. Never returns. '
  'Errors: FF002 always.';

-- One field of an expression -> its sorted distinct values.
CREATE OR REPLACE FUNCTION flowforge._cron_field(p_field text, p_text text, p_min integer, p_max integer,
                                                 p_names text[] DEFAULT NULL, p_name_base integer DEFAULT 0)
RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_item text;
    v_parts text[];
    v_low integer;
    v_high integer;
    v_step integer;
    v_values integer[] := '{}'::integer[];
    v_bound text;
    v_number integer;
BEGIN
    FOREACH v_item IN ARRAY pg_catalog.string_to_array(p_text, ',') LOOP
        IF v_item = '' THEN
            PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": empty list item', p_field, p_text));
        END IF;
        -- start [- end] [/ step]; start is *, a number or a name.
        v_parts := pg_catalog.regexp_match(v_item, '^(\*|[0-9A-Za-z]+)(?:-([0-9A-Za-z]+))?(?:/([0-9]+))?$');
        IF v_parts IS NULL OR (v_parts[1] = '*' AND v_parts[2] IS NOT NULL) THEN
            PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": cannot read "%s"', p_field, p_text, v_item));
        END IF;
        IF v_parts[1] = '*' THEN
            v_low := p_min;
            v_high := p_max;
        ELSE
            FOR v_i IN 1..2 LOOP
                v_bound := v_parts[v_i];
                CONTINUE WHEN v_bound IS NULL;
                IF v_bound ~ '^[0-9]+$' THEN
                    -- Length first, so a long digit string cannot overflow the cast.
                    v_number := CASE WHEN pg_catalog.length(pg_catalog.ltrim(v_bound, '0')) <= 4 THEN v_bound::integer END;
                    IF v_number IS NULL OR v_number NOT BETWEEN p_min AND p_max THEN
                        PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": %s is out of range %s-%s',
                                                                          p_field, p_text, v_bound, p_min, p_max));
                    END IF;
                ELSIF p_names IS NULL THEN
                    PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": "%s" is not a number',
                                                                      p_field, p_text, v_bound));
                ELSE
                    v_number := pg_catalog.array_position(p_names, pg_catalog.upper(v_bound));
                    IF v_number IS NULL THEN
                        PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": unknown name "%s" (known: %s)',
                            p_field, p_text, v_bound, pg_catalog.array_to_string(p_names, ' ')));
                    END IF;
                    v_number := v_number - 1 + p_name_base;
                END IF;
                IF v_i = 1 THEN v_low := v_number; ELSE v_high := v_number; END IF;
            END LOOP;
            IF v_parts[2] IS NULL THEN
                -- a alone is a single value; a/n runs from a to the field's maximum.
                v_high := CASE WHEN v_parts[3] IS NULL THEN v_low ELSE p_max END;
            ELSIF v_low > v_high THEN
                PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": reversed range "%s" (write ranges low-high)',
                                                                  p_field, p_text, v_item));
            END IF;
        END IF;
        IF v_parts[3] IS NULL THEN
            v_step := 1;
        ELSIF pg_catalog.ltrim(v_parts[3], '0') = '' THEN
            PERFORM flowforge._cron_invalid(pg_catalog.format('%s field "%s": step 0 in "%s"', p_field, p_text, v_item));
        ELSE
            -- A step longer than the field is legal (it takes the start only); cap it before the cast.
            v_step := CASE WHEN pg_catalog.length(pg_catalog.ltrim(v_parts[3], '0')) > 3 THEN 100 ELSE v_parts[3]::integer END;
        END IF;
        v_values := v_values || ARRAY(SELECT pg_catalog.generate_series(v_low, v_high, v_step));
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT v FROM pg_catalog.unnest(v_values) v ORDER BY v);
END;
$$;
COMMENT ON FUNCTION flowforge._cron_field(text, text, integer, integer, text[], integer) IS
  'Internal: _cron_field(field, text, min, max, names, name_base) -> integer[]: the sorted distinct values of one cron '
  'field (a comma list of *, n, a-b, each optionally /step; a/step runs to max; names are matched case-insensitively, '
  'the first name being name_base). Errors: FF002 naming the field and the token: empty item, unreadable item, value '
  'out of range, unknown name, reversed range, step 0.';

-- Can a day rule over these sets match any day at all?
CREATE OR REPLACE FUNCTION flowforge._cron_fires_ever(p_doms integer[], p_months integer[], p_day_or boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- Under the OR rule the day-of-week side matches in every month. Otherwise a
    -- listed month must hold the smallest listed day (February counts 29). Every
    -- (month, day) pair falls on each weekday in some year of the 400-year
    -- Gregorian cycle, so the day-of-week side never empties a feasible pair.
    SELECT p_day_or OR EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_months) m
         WHERE (SELECT pg_catalog.min(d) FROM pg_catalog.unnest(p_doms) d)
               <= CASE WHEN m = 2 THEN 29 WHEN m IN (4, 6, 9, 11) THEN 30 ELSE 31 END)
$$;
COMMENT ON FUNCTION flowforge._cron_fires_ever(integer[], integer[], boolean) IS
  'Internal: _cron_fires_ever(doms, months, day_or) -> boolean: false when no day can ever match (a day-of-month set '
  'that no listed month can hold, February having 29 days, and no day-of-week alternative). Errors: none.';

CREATE OR REPLACE FUNCTION flowforge._cron_parse(expr text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_months constant text[] := ARRAY['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
    c_days constant text[] := ARRAY['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
    v_text text := pg_catalog.btrim(_cron_parse.expr, E' \t\r\n');
    v_fields text[];
    v_minute integer[];
    v_hour integer[];
    v_dom integer[];
    v_month integer[];
    v_dow integer[];
    v_dom_star boolean;
    v_dow_star boolean;
BEGIN
    IF v_text IS NULL OR v_text = '' THEN
        PERFORM flowforge._cron_invalid('the cron expression is missing (NULL or blank)');
    END IF;
    IF pg_catalog.left(v_text, 1) = '@' THEN
        v_text := CASE pg_catalog.lower(v_text)
                      WHEN '@yearly' THEN '0 0 1 1 *' WHEN '@annually' THEN '0 0 1 1 *'
                      WHEN '@monthly' THEN '0 0 1 * *' WHEN '@weekly' THEN '0 0 * * 0'
                      WHEN '@daily' THEN '0 0 * * *' WHEN '@midnight' THEN '0 0 * * *'
                      WHEN '@hourly' THEN '0 * * * *' END;
        IF v_text IS NULL THEN
            PERFORM flowforge._cron_invalid(pg_catalog.format(
                'unknown macro "%s" (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)', _cron_parse.expr));
        END IF;
    END IF;
    v_fields := pg_catalog.regexp_split_to_array(v_text, '[ \t\r\n]+');
    IF pg_catalog.cardinality(v_fields) <> 5 THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format(
            '"%s" has %s fields; a cron expression has 5: minute hour day-of-month month day-of-week',
            _cron_parse.expr, pg_catalog.cardinality(v_fields)));
    END IF;
    v_minute := flowforge._cron_field('minute', v_fields[1], 0, 59);
    v_hour := flowforge._cron_field('hour', v_fields[2], 0, 23);
    v_dom := flowforge._cron_field('day-of-month', v_fields[3], 1, 31);
    v_month := flowforge._cron_field('month', v_fields[4], 1, 12, c_months, 1);
    -- 0-7 with 7 = Sunday, so * and a/n run to 7 (Vixie's range); 7 is stored as 0.
    v_dow := ARRAY(SELECT DISTINCT d % 7 FROM pg_catalog.unnest(flowforge._cron_field('day-of-week', v_fields[5], 0, 7, c_days, 0)) d
                   ORDER BY 1);
    -- Vixie: a field is "starred" when its text starts with * (so */2 is starred too).
    v_dom_star := pg_catalog.left(v_fields[3], 1) = '*';
    v_dow_star := pg_catalog.left(v_fields[5], 1) = '*';
    IF NOT flowforge._cron_fires_ever(v_dom, v_month, NOT v_dom_star AND NOT v_dow_star) THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format(
            '"%s" never fires: no listed month has day %s, and the day-of-week field "%s" starts with * so it offers no alternative day',
            _cron_parse.expr, v_dom[1], v_fields[5]));
    END IF;
    RETURN pg_catalog.jsonb_build_object(
        'minute', v_minute, 'hour', v_hour, 'dom', v_dom, 'month', v_month, 'dow', v_dow,
        'dom_star', v_dom_star, 'dow_star', v_dow_star,
        'hour_star', pg_catalog.left(v_fields[2], 1) = '*',
        'minute_star', pg_catalog.left(v_fields[1], 1) = '*');
END;
$$;
COMMENT ON FUNCTION flowforge._cron_parse(text) IS
  'Internal: _cron_parse(expr text) -> jsonb {"minute","hour","dom","month","dow": sorted distinct integer arrays '
  '(dow 0-6, Sunday 0), "dom_star","dow_star","hour_star","minute_star": whether that field''s text starts with *}. '
  'Five whitespace-separated fields or a macro (@yearly @annually @monthly @weekly @daily @midnight @hourly); '
  '*, n, a-b, */n, a-b/n, a/n (= a-max/n), lists, JAN-DEC and SUN-SAT (any case), 7 = Sunday. '
  'Pure: depends on the text only. '
  'Errors: FF002 naming the field and the token: wrong field count, unknown macro, value out of range (minute 0-59, '
  'hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-7), step 0, reversed range, unknown name, empty list item, '
  'unreadable token; FF002 "never fires" when a day-of-month set no listed month can hold has no day-of-week '
  'alternative (e.g. 0 0 30 2 *).';

CREATE OR REPLACE FUNCTION flowforge._check_timezone(timezone text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
    v_zone constant text := _check_timezone.timezone;
    v_loaded text;
BEGIN
    IF v_zone IS NULL OR v_zone !~ '^[A-Za-z0-9_+/-]{1,200}$' THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format('unknown time zone "%s"', v_zone));
    END IF;
    -- pg_timezone_names reads every zone file (~30 ms), so ask it only when the
    -- cheap test cannot tell. Loading the name as the TimeZone setting either
    -- fails (unknown), or loads a zone file and reports the file's spelling, or
    -- parses a POSIX rule such as "ABC+3" and reports it upper-cased; a POSIX
    -- rule always holds a digit (its UTC offset).
    BEGIN
        v_loaded := pg_catalog.set_config('TimeZone', v_zone, true);
    EXCEPTION WHEN invalid_parameter_value THEN
        v_loaded := NULL;
    END;
    IF v_loaded IS DISTINCT FROM v_zone THEN
        -- Refused; the catalog's cost is fine on this path, to suggest the spelling.
        SELECT n.name INTO v_loaded FROM pg_catalog.pg_timezone_names n WHERE pg_catalog.lower(n.name) = pg_catalog.lower(v_zone);
        PERFORM flowforge._cron_invalid(pg_catalog.format('unknown time zone "%s"%s', v_zone,
            CASE WHEN v_loaded IS NOT NULL THEN pg_catalog.format(' (did you mean "%s"?)', v_loaded) ELSE '' END));
    END IF;
    IF v_zone ~ '[a-z]' OR v_zone !~ '[0-9]' THEN
        RETURN v_zone;   -- a zone file, so a row of pg_timezone_names
    END IF;
    -- Upper case with a digit: a zone file such as EST5EDT or GMT0, or a POSIX rule.
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_timezone_names n WHERE n.name = v_zone) THEN
        RETURN v_zone;
    END IF;
    PERFORM flowforge._cron_invalid(pg_catalog.format('unknown time zone "%s" (a POSIX rule, not an IANA zone name)', v_zone));
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION flowforge._check_timezone(text) IS
  'Internal: _check_timezone(timezone text) -> text: the name itself when pg_timezone_names has it (exact spelling; '
  'a wrong-case name is refused with the right spelling in the message). Time zone abbreviations, POSIX rules and '
  'numeric offsets are refused. Microseconds for almost every name; only an upper-case name with a digit (EST5EDT, '
  'GMT0 ...) reads pg_timezone_names. Errors: FF002 unknown time zone (also for NULL).';

-- The first naive local minute >= p_from matching the sets, or NULL if there is none <= p_limit.
CREATE OR REPLACE FUNCTION flowforge._cron_local_next(p_minutes integer[], p_hours integer[], p_doms integer[],
                                                      p_months integer[], p_dows integer[], p_day_or boolean,
                                                      p_from timestamp, p_limit timestamp)
RETURNS timestamp
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_start constant timestamp := pg_catalog.date_trunc('minute', p_from)
        + CASE WHEN p_from > pg_catalog.date_trunc('minute', p_from) THEN interval '1 minute' ELSE interval '0' END;
    v_limit_day constant date := p_limit::date;
    v_day date := v_start::date;
    v_hour0 integer := EXTRACT(hour FROM v_start)::integer;
    v_minute0 integer := EXTRACT(minute FROM v_start)::integer;
    v_month integer;
    v_next integer;
    v_dom_match boolean;
    v_dow_match boolean;
    v_hour integer;
    v_minute integer;
    v_result timestamp;
BEGIN
    LOOP
        IF v_day > v_limit_day THEN
            RETURN NULL;
        END IF;
        v_month := EXTRACT(month FROM v_day)::integer;
        IF NOT v_month = ANY (p_months) THEN
            -- One step to the first day of the next listed month.
            v_next := NULL;
            FOREACH v_next IN ARRAY p_months LOOP
                EXIT WHEN v_next > v_month;
            END LOOP;
            v_day := (pg_catalog.date_trunc('year', v_day::timestamp)
                      + pg_catalog.make_interval(months => CASE WHEN v_next > v_month THEN v_next - 1 ELSE p_months[1] + 11 END))::date;
            v_hour0 := 0;
            v_minute0 := 0;
            CONTINUE;
        END IF;
        v_dom_match := EXTRACT(day FROM v_day)::integer = ANY (p_doms);
        v_dow_match := EXTRACT(dow FROM v_day)::integer = ANY (p_dows);
        IF (p_day_or AND (v_dom_match OR v_dow_match)) OR (v_dom_match AND v_dow_match) THEN
            FOREACH v_hour IN ARRAY p_hours LOOP
                CONTINUE WHEN v_hour < v_hour0;
                FOREACH v_minute IN ARRAY p_minutes LOOP
                    CONTINUE WHEN v_hour = v_hour0 AND v_minute < v_minute0;
                    v_result := v_day + pg_catalog.make_interval(hours => v_hour, mins => v_minute);
                    RETURN CASE WHEN v_result <= p_limit THEN v_result END;
                END LOOP;
            END LOOP;
        END IF;
        v_day := v_day + 1;
        v_hour0 := 0;
        v_minute0 := 0;
    END LOOP;
    RETURN NULL;   -- not reached: the loop returns
END;
$$;
COMMENT ON FUNCTION flowforge._cron_local_next(integer[], integer[], integer[], integer[], integer[], boolean, timestamp, timestamp) IS
  'Internal: _cron_local_next(minutes, hours, doms, months, dows, day_or, from, limit) -> timestamp: the first wall-clock '
  'minute at or after from (rounded up to the minute) whose month, day (day_or: either day set matches, else both), '
  'hour and minute are listed, or NULL when there is none up to limit. No time zone: pure calendar arithmetic. Arrays '
  'must be sorted ascending (as _cron_parse returns them). Unlisted months are skipped in one step. Errors: none.';

-- The first whole second in (p_low, p_high] whose UTC offset is p_high's (session TimeZone).
CREATE OR REPLACE FUNCTION flowforge._cron_transition(p_low timestamptz, p_high timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_offset constant double precision := pg_catalog.date_part('timezone', p_high);
    v_low bigint := pg_catalog.floor(pg_catalog.date_part('epoch', p_low))::bigint;
    v_high bigint := pg_catalog.ceil(pg_catalog.date_part('epoch', p_high))::bigint;
    v_mid bigint;
BEGIN
    -- Bisection: the offset differs at v_low and equals v_offset at v_high.
    -- Zone transitions fall on whole seconds; one day takes 17 steps.
    WHILE v_high - v_low > 1 LOOP
        v_mid := (v_low + v_high) / 2;
        IF pg_catalog.date_part('timezone', pg_catalog.to_timestamp(v_mid)) = v_offset THEN
            v_high := v_mid;
        ELSE
            v_low := v_mid;
        END IF;
    END LOOP;
    RETURN pg_catalog.to_timestamp(v_high);
END;
$$;
COMMENT ON FUNCTION flowforge._cron_transition(timestamptz, timestamptz) IS
  'Internal to _cron_step: _cron_transition(low, high) -> timestamptz: the instant the session time zone''s UTC offset '
  'changes to high''s, given that it differs at low and changes once in between. Errors: none.';

-- The core search; the session TimeZone must already be the schedule's zone.
CREATE OR REPLACE FUNCTION flowforge._cron_step(p_minutes integer[], p_hours integer[], p_doms integer[],
                                                p_months integer[], p_dows integer[], p_day_or boolean,
                                                p_shift boolean, p_first boolean, p_last boolean,
                                                p_after timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_day constant interval := interval '24 hours';   -- an exact duration: '1 day' would keep the local clock
    v_local timestamp;
    v_limit timestamp;
    v_at timestamptz;
    v_offsets double precision[];
    v_offset double precision;
    v_occurrences timestamptz[];
    v_fires timestamptz[];
    v_fire timestamptz;
    v_best timestamptz;
    v_change timestamptz;
BEGIN
    -- 1. Start at the lowest local time of an instant in (after, after + 24 hours]:
    --    local(after), or, when the offset falls in that span, the local time
    --    just after the fall (the second pass of a repeated hour).
    v_local := p_after::timestamp;
    IF pg_catalog.date_part('timezone', p_after) > pg_catalog.date_part('timezone', p_after + c_day) THEN
        v_change := flowforge._cron_transition(p_after, p_after + c_day);
        v_local := LEAST(v_local, v_change::timestamp);
    END IF;
    v_limit := v_local + interval '400 years';
    LOOP
        -- 2. The next listed wall-clock minute.
        v_local := flowforge._cron_local_next(p_minutes, p_hours, p_doms, p_months, p_dows, p_day_or, v_local, v_limit);
        EXIT WHEN v_local IS NULL;
        -- 3. Its instants.
        v_at := v_local::timestamptz;
        v_offsets := ARRAY[pg_catalog.date_part('timezone', v_at - c_day), pg_catalog.date_part('timezone', v_at),
                           pg_catalog.date_part('timezone', v_at + c_day)];
        IF v_offsets[1] = v_offsets[2] AND v_offsets[2] = v_offsets[3] THEN
            -- No transition within 24 hours: exactly one instant.
            v_fires := ARRAY[v_at];
        ELSE
            v_occurrences := '{}';
            FOREACH v_offset IN ARRAY v_offsets LOOP
                v_fire := (v_local - pg_catalog.make_interval(secs => v_offset)) AT TIME ZONE 'UTC';
                IF v_fire::timestamp = v_local AND NOT v_fire = ANY (v_occurrences) THEN
                    v_occurrences := v_occurrences || v_fire;
                END IF;
            END LOOP;
            v_occurrences := ARRAY(SELECT o FROM pg_catalog.unnest(v_occurrences) o ORDER BY o);
            IF pg_catalog.cardinality(v_occurrences) = 0 THEN
                -- A gap: the first instant after it is the transition between
                -- L - (highest offset) and L - (lowest offset).
                v_change := flowforge._cron_transition(
                    (v_local - pg_catalog.make_interval(secs => (SELECT pg_catalog.max(o) FROM pg_catalog.unnest(v_offsets) o))) AT TIME ZONE 'UTC',
                    (v_local - pg_catalog.make_interval(secs => (SELECT pg_catalog.min(o) FROM pg_catalog.unnest(v_offsets) o))) AT TIME ZONE 'UTC');
                v_fires := CASE WHEN p_shift THEN ARRAY[v_change] ELSE '{}' END;
                -- Every later minute before the gap's end is in the gap too (same
                -- firing, or none): resume the walk at the end of the gap.
                v_local := GREATEST(v_local, v_change::timestamp - interval '1 minute');
            ELSIF pg_catalog.cardinality(v_occurrences) = 1 THEN
                v_fires := v_occurrences;
            ELSE
                -- A repeat: the first pass, the last pass, or every pass.
                v_fires := CASE WHEN p_first AND p_last THEN v_occurrences
                                WHEN p_first THEN v_occurrences[1:1]
                                ELSE v_occurrences[pg_catalog.cardinality(v_occurrences):] END;
            END IF;
        END IF;
        -- 4. Keep the earliest instant after `after`. A later candidate can only
        --    undercut it if one of its instants t lies in (after, best], so if it
        --    is at most the highest local time in that span: local(best), or,
        --    when the offset fell within the 24 hours before best, the local
        --    time just before the fall.
        FOREACH v_fire IN ARRAY v_fires LOOP
            IF v_fire > p_after AND (v_best IS NULL OR v_fire < v_best) THEN
                v_best := v_fire;
                v_limit := v_best::timestamp;
                v_change := GREATEST(p_after, v_best - c_day);
                IF pg_catalog.date_part('timezone', v_change) > pg_catalog.date_part('timezone', v_best) THEN
                    v_change := flowforge._cron_transition(v_change, v_best);
                    v_limit := GREATEST(v_limit, (v_change - interval '1 second')::timestamp + interval '1 second');
                END IF;
            END IF;
        END LOOP;
        v_local := v_local + interval '1 minute';
    END LOOP;
    RETURN v_best;
END;
$$;
COMMENT ON FUNCTION flowforge._cron_step(integer[], integer[], integer[], integer[], integer[], boolean, boolean, boolean, boolean, timestamptz) IS
  'Internal to _cron_slots: _cron_step(minutes, hours, doms, months, dows, day_or, shift, first, last, after) -> '
  'timestamptz: the first firing strictly after `after`, evaluated in the SESSION time zone (the caller sets it). '
  'shift: a slot in a gap fires at the first instant after the gap (else not at all); first/last: which occurrence '
  'of a repeated slot fires (both true: each). NULL when nothing fires within 400 years. Errors: none.';

CREATE OR REPLACE FUNCTION flowforge._cron_slots(parsed jsonb, after timestamptz, until timestamptz, timezone text,
                                                 on_gap text DEFAULT 'shift', on_repeat text DEFAULT 'first',
                                                 max_slots integer DEFAULT 1000)
RETURNS SETOF timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
-- Restored on exit: the body points the session TimeZone at the schedule's zone.
SET TimeZone = 'UTC'
AS $$
DECLARE
    v_minutes integer[];
    v_hours integer[];
    v_doms integer[];
    v_months integer[];
    v_dows integer[];
    v_dom_star boolean;
    v_dow_star boolean;
    v_day_or boolean;
    v_hour_star boolean;
    v_shift boolean;
    v_first boolean;
    v_last boolean;
    v_slot timestamptz := _cron_slots.after;
    v_count integer := 0;
BEGIN
    IF _cron_slots.on_gap IS NULL OR _cron_slots.on_gap NOT IN ('shift', 'skip') THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format('on_gap must be ''shift'' or ''skip'', got %L', _cron_slots.on_gap));
    END IF;
    IF _cron_slots.on_repeat IS NULL OR _cron_slots.on_repeat NOT IN ('first', 'last', 'both') THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format('on_repeat must be ''first'', ''last'' or ''both'', got %L', _cron_slots.on_repeat));
    END IF;
    PERFORM flowforge._check_timezone(_cron_slots.timezone);
    IF _cron_slots.max_slots IS NULL OR _cron_slots.max_slots NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'max_slots must be 1 to 100000, got %', coalesce(_cron_slots.max_slots::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Catch up in batches: call again after the last slot returned.';
    END IF;
    IF _cron_slots.after < timestamptz '0001-01-02 00:00+00' OR _cron_slots.after >= timestamptz '10000-01-01 00:00+00' THEN
        RAISE EXCEPTION 'after must lie in the years 1 to 9999, got %', _cron_slots.after
            USING ERRCODE = 'FF003', HINT = 'Pass the instant of the last firing, or now().';
    END IF;
    BEGIN
        SELECT (SELECT pg_catalog.array_agg(DISTINCT e::integer ORDER BY e::integer) FROM pg_catalog.jsonb_array_elements_text(p.v -> 'minute') e),
               (SELECT pg_catalog.array_agg(DISTINCT e::integer ORDER BY e::integer) FROM pg_catalog.jsonb_array_elements_text(p.v -> 'hour') e),
               (SELECT pg_catalog.array_agg(DISTINCT e::integer ORDER BY e::integer) FROM pg_catalog.jsonb_array_elements_text(p.v -> 'dom') e),
               (SELECT pg_catalog.array_agg(DISTINCT e::integer ORDER BY e::integer) FROM pg_catalog.jsonb_array_elements_text(p.v -> 'month') e),
               (SELECT pg_catalog.array_agg(DISTINCT e::integer ORDER BY e::integer) FROM pg_catalog.jsonb_array_elements_text(p.v -> 'dow') e),
               (p.v ->> 'dom_star')::boolean, (p.v ->> 'dow_star')::boolean, (p.v ->> 'hour_star')::boolean
          INTO v_minutes, v_hours, v_doms, v_months, v_dows, v_dom_star, v_dow_star, v_hour_star
          FROM (SELECT _cron_slots.parsed AS v) p;
    EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range OR invalid_parameter_value THEN
        v_minutes := NULL;
    END;
    -- Vixie's day rule: either day set matches only when neither field starts with *.
    v_day_or := NOT v_dom_star AND NOT v_dow_star;
    IF v_minutes IS NULL OR v_hours IS NULL OR v_doms IS NULL OR v_months IS NULL OR v_dows IS NULL
       OR v_dom_star IS NULL OR v_dow_star IS NULL OR v_hour_star IS NULL
       OR NOT (0 <= ALL (v_minutes) AND 59 >= ALL (v_minutes) AND 0 <= ALL (v_hours) AND 23 >= ALL (v_hours)
               AND 1 <= ALL (v_doms) AND 31 >= ALL (v_doms) AND 1 <= ALL (v_months) AND 12 >= ALL (v_months)
               AND 0 <= ALL (v_dows) AND 6 >= ALL (v_dows))
       OR NOT flowforge._cron_fires_ever(v_doms, v_months, v_day_or) THEN
        PERFORM flowforge._cron_invalid(pg_catalog.format('not a parsed cron expression (make one with flowforge._cron_parse): %s',
                                                          pg_catalog.left(_cron_slots.parsed::text, 200)));
    END IF;
    IF _cron_slots.after IS NULL OR _cron_slots.until IS NULL THEN
        RETURN;
    END IF;
    -- A wildcard hour fires at real instants: nothing in a gap, every pass of a repeat.
    v_shift := NOT v_hour_star AND _cron_slots.on_gap = 'shift';
    v_first := v_hour_star OR _cron_slots.on_repeat IN ('first', 'both');
    v_last := v_hour_star OR _cron_slots.on_repeat IN ('last', 'both');
    PERFORM pg_catalog.set_config('TimeZone', _cron_slots.timezone, true);
    WHILE v_count < _cron_slots.max_slots LOOP
        v_slot := flowforge._cron_step(v_minutes, v_hours, v_doms, v_months, v_dows, v_day_or,
                                       v_shift, v_first, v_last, v_slot);
        EXIT WHEN v_slot IS NULL OR v_slot > _cron_slots.until;
        RETURN NEXT v_slot;
        v_count := v_count + 1;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION flowforge._cron_slots(jsonb, timestamptz, timestamptz, text, text, text, integer) IS
  'Internal: _cron_slots(parsed jsonb, after, until, timezone, on_gap default ''shift'', on_repeat default ''first'', '
  'max_slots default 1000) -> setof timestamptz: every firing in (after, until], ascending, at most max_slots (catch-up '
  'after downtime: call again from the last slot for more). parsed comes from _cron_parse. An hour field starting with * '
  'fires at every real instant whose local time matches; otherwise a slot in a gap fires at the first instant after it '
  '(on_gap shift; slots of one gap are one firing) or not (skip), and a repeated slot fires at its first, last or both '
  'occurrences (on_repeat). Empty when after or until is NULL or until <= after. '
  'Errors: FF002 bad on_gap or on_repeat, unknown time zone, parsed not a _cron_parse result; FF003 max_slots not '
  '1-100000, after outside the years 1-9999.';

CREATE OR REPLACE FUNCTION flowforge._cron_next(parsed jsonb, after timestamptz, timezone text,
                                                on_gap text DEFAULT 'shift', on_repeat text DEFAULT 'first')
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_slot timestamptz;
BEGIN
    SELECT s INTO v_slot
      FROM flowforge._cron_slots(_cron_next.parsed, _cron_next.after, timestamptz 'infinity', _cron_next.timezone,
                                 _cron_next.on_gap, _cron_next.on_repeat, 1) s;
    RETURN v_slot;
END;
$$;
COMMENT ON FUNCTION flowforge._cron_next(jsonb, timestamptz, text, text, text) IS
  'Internal: _cron_next(parsed jsonb, after, timezone, on_gap default ''shift'', on_repeat default ''first'') -> '
  'timestamptz: the first firing strictly after `after` under the rules of _cron_slots; NULL when after is NULL. '
  'Errors: FF002 bad on_gap or on_repeat, unknown time zone, parsed not a _cron_parse result; FF003 after outside the '
  'years 1-9999.';

CREATE OR REPLACE FUNCTION flowforge.cron_next(expr text, after timestamptz, timezone text DEFAULT 'UTC')
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN flowforge._cron_next(flowforge._cron_parse(cron_next.expr), cron_next.after, cron_next.timezone);
END;
$$;
COMMENT ON FUNCTION flowforge.cron_next(text, timestamptz, text) IS
  'cron_next(expr text, after timestamptz, timezone text default ''UTC'') -> timestamptz: the first slot of the cron '
  'expression strictly after `after`, with slots read as wall-clock times in the IANA zone and the default DST rules: '
  'a slot in a skipped hour fires at the first instant after the gap, a slot in a repeated hour at its first '
  'occurrence, and an hour field starting with * at every real instant whose local time matches (docs/cron.md). '
  'NULL when after is NULL. Errors: FF002 invalid expression (naming the field and token), an expression that never '
  'fires, unknown time zone; FF003 after outside the years 1-9999.';
SELECT flowforge._rights('flowforge.cron_next(text,timestamptz,text)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');
