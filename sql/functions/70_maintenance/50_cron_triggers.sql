-- Duty: fire due cron triggers.
--
-- Each due trigger is taken FOR UPDATE SKIP LOCKED — two daemons ticking at
-- once never take the same one — and its slots fire through _fire_trigger
-- with the slot as the delivery id, the unique key per trigger and slot
-- (trigger_firing_delivery_uq): a slot fires at most once whatever happens.
-- After downtime, the trigger's catchup policy decides what fires:
--   latest  one firing, for the newest missed slot (the default)
--   all     every missed slot, oldest first, at most max_catchup of them
--   none    nothing that was missed: after downtime only the newest due slot,
--           and only when it is less than a minute late (a tick that came
--           a little late is not downtime)
-- (With no downtime — one slot due — all three fire it.)

-- The newest slot of a schedule at or before p_until, starting from a due slot.
CREATE OR REPLACE FUNCTION flowforge._cron_latest(p_parsed jsonb, p_slot timestamptz, p_until timestamptz,
                                                  p_timezone text, p_on_gap text, p_on_repeat text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_latest timestamptz := p_slot;
    v_next timestamptz;
BEGIN
    -- The last day holds at most 1,440 slots of any schedule; past that, the
    -- schedule is sparse enough to walk slot by slot.
    SELECT max(s) INTO v_next
    FROM flowforge._cron_slots(p_parsed, greatest(p_slot, p_until - interval '24 hours'), p_until, p_timezone,
                               p_on_gap, p_on_repeat, 100000) AS s;
    IF v_next IS NOT NULL THEN
        RETURN v_next;
    END IF;
    LOOP
        v_next := flowforge._cron_next(p_parsed, v_latest, p_timezone, p_on_gap, p_on_repeat);
        EXIT WHEN v_next IS NULL OR v_next > p_until;
        v_latest := v_next;
    END LOOP;
    RETURN v_latest;
END;
$$;
COMMENT ON FUNCTION flowforge._cron_latest(jsonb, timestamptz, timestamptz, text, text, text) IS
  'Internal: the newest slot of a parsed schedule that is at or before p_until, given p_slot, a slot due by then.';

CREATE OR REPLACE FUNCTION flowforge._fire_cron_trigger(p_org uuid, p_trigger_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_t record;
    v_parsed jsonb;
    v_slots timestamptz[];
    v_slot timestamptz;
    v_next timestamptz;
    v_fired integer := 0;
BEGIN
    SELECT t.id, t.organization_id, t.name, t.cron, t.timezone, t.options, t.next_fire_at INTO v_t
    FROM flowforge.scheduled_trigger t
    WHERE t.id = p_trigger_id AND t.organization_id = p_org AND t.enabled AND t.deleted_at IS NULL
      AND t.next_fire_at <= p_now
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;  -- taken by another daemon, or no longer due
    END IF;
    v_parsed := flowforge._cron_parse(v_t.cron);
    v_next := flowforge._cron_next(v_parsed, v_t.next_fire_at, v_t.timezone, v_t.options ->> 'on_gap',
                                   v_t.options ->> 'on_repeat');
    IF v_next IS NULL OR v_next > p_now THEN
        v_slots := ARRAY[v_t.next_fire_at];  -- on time: one slot due
    ELSE
        v_slots := CASE v_t.options ->> 'catchup'
            WHEN 'none' THEN ARRAY(
                SELECT l FROM (SELECT flowforge._cron_latest(v_parsed, v_t.next_fire_at, p_now, v_t.timezone,
                                                             v_t.options ->> 'on_gap', v_t.options ->> 'on_repeat') AS l) x
                WHERE x.l > p_now - interval '1 minute')
            WHEN 'all' THEN ARRAY[v_t.next_fire_at] || ARRAY(
                SELECT s FROM flowforge._cron_slots(v_parsed, v_t.next_fire_at, p_now, v_t.timezone,
                                                    v_t.options ->> 'on_gap', v_t.options ->> 'on_repeat',
                                                    greatest((v_t.options ->> 'max_catchup')::integer - 1, 1)) AS s
                LIMIT greatest((v_t.options ->> 'max_catchup')::integer - 1, 0))
            ELSE ARRAY[flowforge._cron_latest(v_parsed, v_t.next_fire_at, p_now, v_t.timezone,
                                              v_t.options ->> 'on_gap', v_t.options ->> 'on_repeat')]
        END;
    END IF;
    FOREACH v_slot IN ARRAY v_slots LOOP
        -- A slot already fired (its delivery id recorded) is not counted again.
        IF NOT coalesce((flowforge._fire_trigger(v_t.organization_id, v_t.id, v_t.name,
                             jsonb_build_object('trigger', v_t.name, 'slot', v_slot, 'timezone', v_t.timezone),
                             v_slot, 'cron:' || to_char(v_slot AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             p_now) ->> 'duplicate')::boolean, false) THEN
            v_fired := v_fired + 1;
        END IF;
    END LOOP;
    -- The next slot after now; a schedule with none left stops.
    v_next := flowforge._cron_next(v_parsed, p_now, v_t.timezone, v_t.options ->> 'on_gap', v_t.options ->> 'on_repeat');
    UPDATE flowforge.scheduled_trigger t
    SET next_fire_at = v_next, enabled = v_next IS NOT NULL, updated_at = p_now
    WHERE t.id = v_t.id AND t.organization_id = p_org;
    RETURN v_fired;
END;
$$;
COMMENT ON FUNCTION flowforge._fire_cron_trigger(uuid, uuid, timestamptz) IS
  'Internal: fires the due slots of cron trigger p_trigger_id of organization p_org (taken FOR UPDATE SKIP LOCKED: 0 when another daemon '
  'has it) under its catchup policy — each slot one _fire_trigger with delivery id cron:<slot in UTC>, fired_on the '
  'slot, payload {"trigger", "slot", "timezone"} — then moves next_fire_at to the first slot after now. Returns how '
  'many slots fired (a slot whose firing already existed is not counted).';

CREATE OR REPLACE FUNCTION flowforge._fire_cron_triggers(p_orgs uuid[], p_max integer, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_due record;
    v_fired integer := 0;
    v_error text;
BEGIN
    -- Oldest due first, through idx_trigger_due.
    FOR v_due IN
        SELECT t.id, t.organization_id FROM flowforge.scheduled_trigger t
        WHERE t.enabled AND t.next_fire_at <= p_now AND (p_orgs IS NULL OR t.organization_id = ANY (p_orgs))
        ORDER BY t.next_fire_at
        LIMIT p_max
    LOOP
        -- One trigger that cannot fire (and says why) never keeps the others from firing.
        BEGIN
            v_fired := v_fired + flowforge._fire_cron_trigger(v_due.organization_id, v_due.id, p_now);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            RAISE WARNING 'tick: cron trigger % did not fire: %', v_due.id, v_error;
        END;
    END LOOP;
    RETURN v_fired;
END;
$$;
COMMENT ON FUNCTION flowforge._fire_cron_triggers(uuid[], integer, timestamptz) IS
  'Internal (tick duty "cron_fired"): fires the due slots of up to p_max due cron triggers of organizations p_orgs '
  '(every organization when NULL), oldest due first, each trigger in its own subtransaction. Returns how many slots '
  'fired (a firing row each, whatever its outcome).';
