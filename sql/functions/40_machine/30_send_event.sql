-- send_event: the one way an event reaches a machine.
--
--   send_event(run_id, event, payload, event_id) -> {"outcome", "state", "live", "suspended"}
--
-- Synchronous and worker-free: the caller learns in the same transaction
-- whether the event moved the machine (applied), waits for its action
-- (queued), was already seen (duplicate), or was refused (FF012, nothing
-- written). Concurrent senders to one run queue on its directory row.

CREATE OR REPLACE FUNCTION flowforge._send_event(p_org uuid, p_run_id uuid, p_event text, p_payload jsonb,
                                                 p_event_id text, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_org constant uuid := p_org;
    v_now constant timestamptz := p_now;
    v_payload constant jsonb := coalesce(p_payload, '{}');
    v_engine text;
    v_run record;
    v_outcome text;
    v_reason text;
BEGIN
    IF p_event IS NULL OR p_event !~ '^[A-Za-z][A-Za-z0-9_.:-]{0,199}$' THEN
        RAISE EXCEPTION 'event must be a name of 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter, got %',
            coalesce(quote_literal(p_event), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'The event names a machine definition''s "on" keys, such as ''paid''.';
    END IF;
    IF jsonb_typeof(v_payload) <> 'object' THEN
        RAISE EXCEPTION 'event payload must be a JSON object, got %', jsonb_typeof(v_payload)
            USING ERRCODE = 'FF003', HINT = 'Wrap the value: {"value": ...}.';
    END IF;
    PERFORM flowforge._check_size(v_payload, 'event payload');
    IF p_event_id IS NOT NULL AND length(p_event_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'event_id must be 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'Use the id the event carries, such as a webhook delivery id.';
    END IF;

    -- Lock order: the run's directory row first; every writer of the run does the same.
    v_engine := flowforge._lock_run(v_org, p_run_id);
    IF v_engine IS NULL THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_engine <> 'statemachine' THEN
        PERFORM flowforge._event_refused(p_run_id, p_event,
            format('run %s is a %s run, and only statemachine runs take events', p_run_id, v_engine),
            'Send events to the run of a workflow of kind "statemachine".');
    END IF;

    -- A redelivered event is a key lookup, never a scan of the history.
    IF p_event_id IS NOT NULL THEN
        INSERT INTO flowforge.machine_event_seen (organization_id, run_id, event_id, seen_at)
        VALUES (v_org, p_run_id, p_event_id, v_now)
        ON CONFLICT ON CONSTRAINT machine_event_seen_pkey DO NOTHING;
        IF NOT FOUND THEN
            v_outcome := 'duplicate';
        END IF;
    END IF;

    SELECT m.state, m.status, m.live, m.suspended, m.reason, m.definition_id, w.name AS definition INTO STRICT v_run
    FROM flowforge.machine_run m JOIN flowforge.workflow w ON w.id = m.definition_id AND w.organization_id = m.organization_id
    WHERE m.organization_id = v_org AND m.run_id = p_run_id;

    IF v_outcome IS NULL THEN
        IF NOT v_run.live THEN
            PERFORM flowforge._event_refused(p_run_id, p_event,
                format('the run has ended (%s: %s)', v_run.status, coalesce(v_run.reason, 'no reason given')),
                'An ended machine takes no events; start a new run (or retry_run a failed or cancelled one).');
        ELSIF v_run.suspended THEN
            -- It waits for its action; the state it resumes in decides. An
            -- event no state of the machine accepts could never apply.
            IF NOT EXISTS (SELECT 1 FROM flowforge.task t
                           WHERE t.organization_id = v_org AND t.workflow_id = v_run.definition_id
                             AND t.spec -> 'on' ? p_event) THEN
                PERFORM flowforge._event_refused(p_run_id, p_event,
                    format('no state of machine "%s" accepts it', v_run.definition),
                    'workflow show lists the events each state accepts.');
            END IF;
            INSERT INTO flowforge.machine_event_queue (organization_id, run_id, seq, event, payload, event_id, received_at)
            SELECT v_org, p_run_id, m.next_event_seq, p_event, v_payload, p_event_id, v_now
            FROM flowforge.machine_run m WHERE m.organization_id = v_org AND m.run_id = p_run_id;
            UPDATE flowforge.machine_run m SET next_event_seq = m.next_event_seq + 1
            WHERE m.organization_id = v_org AND m.run_id = p_run_id;
            v_outcome := 'queued';
        ELSE
            v_reason := flowforge._machine_apply(v_org, p_run_id, p_event, v_payload,
                                                 p_event_id, NULL, v_now);
            IF v_reason IS NOT NULL THEN
                PERFORM flowforge._event_refused(p_run_id, p_event, v_reason,
                    'Nothing was written. get_run shows the state the machine rests in and its context.');
            END IF;
            v_outcome := 'applied';
        END IF;
    END IF;

    SELECT m.state, m.live, m.suspended INTO STRICT v_run
    FROM flowforge.machine_run m WHERE m.organization_id = v_org AND m.run_id = p_run_id;
    RETURN jsonb_build_object('outcome', v_outcome, 'state', v_run.state, 'live', v_run.live,
                              'suspended', v_run.suspended);
END;
$$;
COMMENT ON FUNCTION flowforge._send_event(uuid, uuid, text, jsonb, text, timestamptz) IS
  'Internal: send_event for organization p_org (shared with fire_trigger''s signal action): the checks, the run''s '
  'lock, the duplicate key, then applied / queued / refused. Errors as send_event''s.';

CREATE OR REPLACE FUNCTION flowforge.send_event(run_id uuid, event text, payload jsonb DEFAULT '{}',
                                                event_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
BEGIN
    RETURN flowforge._send_event(v_org, send_event.run_id, send_event.event, send_event.payload, send_event.event_id,
                                 flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.send_event(uuid, text, jsonb, text) IS
  'send_event(run_id uuid, event text, payload jsonb default ''{}'', event_id text default null) -> jsonb '
  '{"outcome": "applied" | "queued" | "duplicate", "state", "live", "suspended"}. Sends an event to a statemachine '
  'run of the caller''s organization, serialised with every other writer of the run. A resting machine takes at most '
  'one transition in this transaction: the first candidate of the event in its state whose guard holds over '
  '{"event": payload, "context"}, with its assignments; the state entered, the event and its time go to the history '
  '(run_events kind state_entered); a final state ends the run (live false, reason). A suspended machine (its '
  'action running) queues the event, applied in arrival order when it resumes. An event_id already seen for this run '
  'returns "duplicate" and changes nothing. Errors: FF012 the event is refused and nothing was written — the run has '
  'ended, its state has no transition for the event, no guard holds, no state of the machine accepts it (while '
  'suspended), or the run is not a statemachine; FF001 no such run; FF003 a bad event name, payload not an object, '
  'event_id not 1-200 characters; FF009 payload over the limits; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.send_event(uuid,text,jsonb,text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
