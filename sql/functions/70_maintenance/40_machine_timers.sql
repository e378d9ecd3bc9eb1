-- Duty: fire due machine timers ("after" transitions).
--
-- A timer is a row with a due time, never only a process's memory, so a
-- restart loses none. It fires once the machine has rested in the state for
-- the delay, and never if the machine left meanwhile: the timer carries the
-- run's transition count at the state's entry, and fires only if the count
-- is still that (compare-and-set), under the run's directory lock — the lock
-- every event takes — so a racing event and the timer never both apply.
-- Leaving a state deletes its timers; the count catches the rest.

-- One due timer, under its run's lock. Returns whether it moved the machine.
CREATE OR REPLACE FUNCTION flowforge._fire_machine_timer(p_org uuid, p_timer_id uuid, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_timer record;
    v_run record;
BEGIN
    SELECT t.organization_id, t.run_id INTO v_timer FROM flowforge.machine_timer t
    WHERE t.id = p_timer_id AND t.organization_id = p_org;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Busy run (an event, an action's end): a later tick fires it, if it still applies.
    IF NOT flowforge._try_lock_run(v_timer.organization_id, v_timer.run_id) THEN
        RETURN false;
    END IF;
    -- Re-read under the lock: an event that committed meanwhile deleted it.
    SELECT t.id, t.entered, t.target, t.delay, t.position, t.fire_at INTO v_timer
    FROM flowforge.machine_timer t WHERE t.id = p_timer_id AND t.organization_id = p_org;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT m.organization_id, m.run_id, m.state, m.context, m.transitions, m.live, m.suspended INTO v_run
    FROM flowforge.machine_run m
    JOIN flowforge.machine_timer t ON t.organization_id = m.organization_id AND t.run_id = m.run_id
    WHERE t.id = p_timer_id AND t.organization_id = p_org AND m.organization_id = p_org;
    IF NOT (v_run.live AND NOT v_run.suspended AND v_run.transitions = v_timer.entered) THEN
        DELETE FROM flowforge.machine_timer t
        WHERE t.id = p_timer_id AND t.organization_id = p_org;  -- stale: the machine left that entry
        RETURN false;
    END IF;
    PERFORM flowforge._machine_enter(v_run.organization_id, v_run.run_id, v_timer.target, v_run.context, 'timer',
        NULL, NULL, NULL,
        jsonb_build_object('delay', v_timer.delay::text, 'timer', v_timer.position, 'due_at', v_timer.fire_at),
        p_now);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._fire_machine_timer(uuid, uuid, timestamptz) IS
  'Internal: fires machine timer p_timer_id of organization p_org (every statement filters on it) if its run is not locked by another writer and still rests in the entry '
  'the timer was set for (transitions = entered): the timer''s target is entered (cause timer). A stale timer is '
  'deleted. Returns whether the machine moved.';

CREATE OR REPLACE FUNCTION flowforge._fire_machine_timers(p_orgs uuid[], p_max integer, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_due record;
    v_fired integer := 0;
    v_error text;
BEGIN
    FOR v_due IN
        SELECT t.id, t.organization_id FROM flowforge.machine_timer t
        WHERE t.fire_at <= p_now AND (p_orgs IS NULL OR t.organization_id = ANY (p_orgs))
        ORDER BY t.fire_at
        LIMIT p_max
    LOOP
        -- One timer that cannot fire (and says why) never keeps the others from firing.
        BEGIN
            IF flowforge._fire_machine_timer(v_due.organization_id, v_due.id, p_now) THEN
                v_fired := v_fired + 1;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            RAISE WARNING 'tick: machine timer % did not fire: %', v_due.id, v_error;
        END;
    END LOOP;
    RETURN v_fired;
END;
$$;
COMMENT ON FUNCTION flowforge._fire_machine_timers(uuid[], integer, timestamptz) IS
  'Internal (tick duty "timers_fired"): fires up to p_max due machine timers of organizations p_orgs (every '
  'organization when NULL), oldest due first (machine_timer_due_idx), each in its own subtransaction. Returns how '
  'many moved a machine.';
