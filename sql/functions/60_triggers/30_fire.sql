-- fire_trigger: the one function every feeder calls.
--
--   fire_trigger(name, payload, fired_on, delivery_id) -> {"firing_id", "outcome", "run_id", "error"}
--
-- The action (start a run, or signal a machine run) runs inside a savepoint;
-- then exactly one trigger_firing row records what arrived and what became of
-- it: started / signalled, or refused (the trigger or its input said no) /
-- failed (the action raised for another reason), with the error. The refused
-- rows are why the table exists: they are the firings that leave no other
-- trace. A run it starts names the trigger and the firing in its directory row.

-- Which refusals are the input's or the target's doing (refused), as opposed
-- to something going wrong (failed): FlowForge's documented codes for "no".
CREATE OR REPLACE FUNCTION flowforge._is_refusal(p_sqlstate text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT p_sqlstate IN ('FF001', 'FF002', 'FF003', 'FF005', 'FF006', 'FF009', 'FF012', 'FF013') $$;
COMMENT ON FUNCTION flowforge._is_refusal(text) IS
  'Internal: true for the SQLSTATEs that mean "refused" (an unknown or deleted workflow, an unknown run, a bad input, '
  'an ended run, a refused event, a payload over the limits...), false for anything that means the action failed.';

-- The run a signal moves: the trigger's fixed run_id, or the uuid its
-- run_id_path finds in the payload.
CREATE OR REPLACE FUNCTION flowforge._trigger_signal_run(p_options jsonb, p_payload jsonb) RETURNS uuid
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_found text;
BEGIN
    IF p_options ? 'run_id' THEN
        RETURN (p_options ->> 'run_id')::uuid;
    END IF;
    v_found := jsonb_path_query_first(p_payload, (p_options ->> 'run_id_path')::jsonpath, silent => true) #>> '{}';
    IF v_found !~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' OR v_found IS NULL THEN
        RAISE EXCEPTION 'the payload names no run at % (found %)', p_options ->> 'run_id_path',
            coalesce(quote_literal(left(v_found, 100)), 'nothing')
            USING ERRCODE = 'FF003', HINT = 'The sender must put the machine run''s id where run_id_path points.';
    END IF;
    RETURN v_found::uuid;
END;
$$;
COMMENT ON FUNCTION flowforge._trigger_signal_run(jsonb, jsonb) IS
  'Internal: the run a signal trigger moves — options.run_id, or the uuid at options.run_id_path in p_payload. '
  'Errors: FF003 the payload holds no run id there.';

-- The one place a firing row is written (append-only: written once, after the outcome is known).
CREATE OR REPLACE FUNCTION flowforge._record_firing(p_id uuid, p_org uuid, p_trigger_id uuid, p_trigger_name text,
                                                    p_trigger_type text, p_payload jsonb, p_action text,
                                                    p_definition_id uuid, p_event text, p_run_id uuid, p_outcome text,
                                                    p_error text, p_fired_on timestamptz, p_delivery_id text,
                                                    p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- The delivery key first: a second firing of one delivery fails here
    -- (trigger_firing_delivery_uq), whichever partition its firing would land in.
    IF p_trigger_id IS NOT NULL AND p_delivery_id IS NOT NULL THEN
        INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
        VALUES (p_org, p_trigger_id, p_delivery_id, p_id, p_now);
    END IF;
    INSERT INTO flowforge.trigger_firing (id, organization_id, trigger_id, trigger_name, trigger_type, payload, action,
                                          definition_id, event, run_id, outcome, error, fired_on, recorded_at,
                                          delivery_id, created_by)
    VALUES (p_id, p_org, p_trigger_id, left(coalesce(p_trigger_name, ''), 63), p_trigger_type, p_payload, p_action,
            p_definition_id, p_event, p_run_id, p_outcome, left(p_error, 2000), coalesce(p_fired_on, p_now), p_now,
            p_delivery_id, flowforge._principal());
END;
$$;
COMMENT ON FUNCTION flowforge._record_firing(uuid, uuid, uuid, text, text, jsonb, text, uuid, text, uuid, text, text, timestamptz, text, timestamptz) IS
  'Internal: appends one trigger_firing row (the error cut to 2,000 characters, fired_on defaulting to now, ours in '
  'recorded_at, created_by the actor) and, for a trigger''s delivery with an id, its trigger_delivery key.';

-- The firing a delivery of a trigger already made, as fire_trigger answers a
-- replay; NULL when the delivery is new. Concurrent deliveries of one id queue
-- on the lock it takes (until the transaction ends), so only one of them acts.
CREATE OR REPLACE FUNCTION flowforge._delivered_firing(p_org uuid, p_trigger_id uuid, p_delivery_id text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_existing record;
BEGIN
    IF p_trigger_id IS NULL OR p_delivery_id IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_trigger_id::text || '/' || p_delivery_id, 0));
    -- The delivery key, then its firing by its whole primary key (one partition). A key whose firing
    -- retention purged (a live filesystem trigger's keys outlive their firings) is still a delivery made.
    SELECT d.firing_id AS id, f.id IS NULL AS purged, f.outcome, f.run_id, f.error INTO v_existing
    FROM flowforge.trigger_delivery d
    LEFT JOIN flowforge.trigger_firing f
      ON f.organization_id = d.organization_id AND f.id = d.firing_id AND f.recorded_at = d.recorded_at
    WHERE d.organization_id = p_org AND d.trigger_id = p_trigger_id AND d.delivery_id = p_delivery_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object('firing_id', v_existing.id, 'outcome', v_existing.outcome, 'run_id', v_existing.run_id,
                              'error', v_existing.error, 'duplicate', true)
           || CASE WHEN v_existing.purged THEN '{"purged": true}'::jsonb ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._delivered_firing(uuid, uuid, text) IS
  'Internal: {firing_id, outcome, run_id, error, duplicate: true} of the firing trigger p_trigger_id of p_org already '
  'made for delivery p_delivery_id (trigger_delivery''s key trigger_firing_delivery_uq, then the firing by its primary '
  'key; + purged: true, outcome NULL, when retention removed the firing but kept its key), NULL when there is none '
  '(or either is NULL); takes the transaction-level advisory lock that serialises deliveries of one id.';

CREATE OR REPLACE FUNCTION flowforge._fire_trigger(p_org uuid, p_trigger_id uuid, p_trigger_name text, p_payload jsonb,
                                                   p_fired_on timestamptz, p_delivery_id text, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_payload constant jsonb := coalesce(p_payload, '{}');
    v_fired_on constant timestamptz := coalesce(p_fired_on, p_now);
    v_firing_id constant uuid := flowforge.uuid7();
    v_trigger record;
    v_replay jsonb;
    v_outcome text;
    v_run_id uuid;
    v_error text;
    v_state text;
    v_definition uuid;
    v_event_id text;
    v_result jsonb;
BEGIN
    SELECT t.id, t.name, t.trigger_type, t.action, t.target, t.enabled, t.input, t.options, t.created_by INTO v_trigger
    FROM flowforge.scheduled_trigger t
    WHERE t.organization_id = p_org AND t.deleted_at IS NULL
      AND (t.id = p_trigger_id OR (p_trigger_id IS NULL AND t.name = p_trigger_name));

    -- A redelivery returns the first firing and does nothing.
    IF v_trigger.id IS NOT NULL THEN
        v_replay := flowforge._delivered_firing(p_org, v_trigger.id, p_delivery_id);
        IF v_replay IS NOT NULL THEN
            RETURN v_replay;
        END IF;
    END IF;

    IF v_trigger.id IS NULL THEN
        v_outcome := 'refused';
        v_error := format('no trigger named %s', coalesce(quote_literal(p_trigger_name), 'NULL'));
    ELSIF NOT v_trigger.enabled THEN
        v_outcome := 'refused';
        v_error := format('trigger %s is disabled', quote_literal(v_trigger.name));
    ELSE
        -- The action in a savepoint: whatever it raises becomes the firing's outcome.
        -- contains the errors of: flowforge._start_run, flowforge._send_event, flowforge._trigger_signal_run
        BEGIN
            IF v_trigger.action = 'start' THEN
                SELECT w.id INTO v_definition FROM flowforge.workflow w
                WHERE w.organization_id = p_org AND w.name = v_trigger.target AND w.superseded_at IS NULL;
                -- The run input: the payload's keys (a non-object payload under "payload"), then the trigger's own.
                v_run_id := flowforge._start_run(p_org, v_trigger.target,
                    CASE WHEN jsonb_typeof(v_payload) = 'object' THEN v_payload
                         ELSE jsonb_build_object('payload', v_payload) END || v_trigger.input,
                    NULL, p_now, v_trigger.name, v_firing_id, v_trigger.created_by);
                v_outcome := 'started';
            ELSE
                v_run_id := flowforge._trigger_signal_run(v_trigger.options, v_payload);
                v_event_id := coalesce(jsonb_path_query_first(v_payload, (v_trigger.options ->> 'event_id_path')::jsonpath,
                                                              silent => true) #>> '{}',
                                       p_delivery_id);
                v_result := flowforge._send_event(p_org, v_run_id, v_trigger.target,
                    CASE WHEN jsonb_typeof(v_payload) = 'object' THEN v_payload
                         ELSE jsonb_build_object('payload', v_payload) END || v_trigger.input,
                    left(v_event_id, 200), p_now);
                v_outcome := 'signalled';
                -- The machine it moved, for the record (a start records its workflow above).
                v_definition := (SELECT e.definition_id FROM flowforge.engine_run e
                                 WHERE e.organization_id = p_org AND e.run_id = v_run_id);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_error = MESSAGE_TEXT;
            v_outcome := CASE WHEN flowforge._is_refusal(v_state) THEN 'refused' ELSE 'failed' END;
            v_error := format('%s (%s)', v_error, v_state);
            v_run_id := NULL;
        END;
    END IF;

    PERFORM flowforge._record_firing(v_firing_id, p_org, v_trigger.id, coalesce(v_trigger.name, p_trigger_name),
                                     v_trigger.trigger_type, v_payload, v_trigger.action, v_definition,
                                     CASE WHEN v_trigger.action = 'signal' THEN v_trigger.target END, v_run_id,
                                     v_outcome, v_error, v_fired_on, p_delivery_id, p_now);
    IF v_trigger.id IS NOT NULL AND v_outcome IN ('started', 'signalled') THEN
        UPDATE flowforge.scheduled_trigger t SET last_fired_at = greatest(coalesce(t.last_fired_at, v_fired_on), v_fired_on)
        WHERE t.id = v_trigger.id AND t.organization_id = p_org;
    END IF;
    RETURN jsonb_build_object('firing_id', v_firing_id, 'outcome', v_outcome, 'run_id', v_run_id, 'error', v_error)
           || CASE WHEN v_result IS NOT NULL THEN jsonb_build_object('signal', v_result) ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._fire_trigger(uuid, uuid, text, jsonb, timestamptz, text, timestamptz) IS
  'Internal: fires trigger p_trigger_id (or, when NULL, the one named p_trigger_name) of organization p_org with '
  'p_payload: the action in a savepoint, then one trigger_firing row (started, signalled, refused, failed). A '
  'delivery id already recorded for the trigger returns that firing and does nothing. Returns {firing_id, outcome, '
  'run_id, error} (+ duplicate, + signal: send_event''s answer). A run it starts belongs to the trigger''s creator '
  '(created_by), whoever delivered the firing. The callers check the delivery id (1-200 characters; '
  '_check_delivery_id).';

-- The delivery id a caller names: what makes a redelivery a duplicate.
CREATE OR REPLACE FUNCTION flowforge._check_delivery_id(p_delivery_id text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_delivery_id IS NOT NULL AND length(p_delivery_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'delivery_id must be 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'The delivery id the sender gives each delivery (a header, a slot, a path).';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_delivery_id(text) IS
  'Internal: FF003 unless p_delivery_id is NULL or 1 to 200 characters.';

CREATE OR REPLACE FUNCTION flowforge.fire_trigger(name text, payload jsonb DEFAULT '{}', fired_on timestamptz DEFAULT NULL,
                                                  delivery_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
BEGIN
    PERFORM flowforge._check_size(fire_trigger.payload, 'trigger payload');
    PERFORM flowforge._check_delivery_id(fire_trigger.delivery_id);
    RETURN flowforge._fire_trigger(v_org, NULL, fire_trigger.name, fire_trigger.payload, fire_trigger.fired_on,
                                   fire_trigger.delivery_id, flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.fire_trigger(text, jsonb, timestamptz, text) IS
  'fire_trigger(name text, payload jsonb default ''{}'', fired_on timestamptz default null, delivery_id text default '
  'null) -> jsonb {"firing_id", "outcome", "run_id", "error"}. Fires a trigger of the caller''s organization: start — '
  'a run of its workflow with input = the payload''s keys merged with the trigger''s input (a non-object payload '
  'under "payload"), its directory row naming the trigger and the firing, the run belonging to the trigger''s '
  'creator (created_by) whoever fires it; signal — send_event of its event to the '
  'run at options.run_id_path in the payload (or options.run_id), event_id from options.event_id_path or the '
  'delivery id. The action runs in a savepoint, then exactly one trigger_firing row is appended with the payload, '
  'the source''s fired_on (default now) and ours: outcome started / signalled, or refused (unknown or disabled '
  'trigger, a deleted workflow, unknown / foreign / ended run, an event the machine refuses, an input that fails validation — the '
  'error names it) or failed (the action raised for another reason). The same delivery_id for the same trigger '
  'returns the first firing and does nothing. Errors: (raised, nothing written) FF003 delivery_id not 1-200 '
  'characters; FF009 payload over the limits; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.fire_trigger(text,jsonb,timestamptz,text)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');
