-- State-machine definitions: states, the events each accepts, timers, actions.
--
--   {"name": "order", "kind": "statemachine", "initial": "awaiting_payment", "context": {"total": 100},
--    "states": {
--      "awaiting_payment": {"on": {"paid": [{"target": "shipping", "guard": "$.event.amount >= $.context.total",
--                                             "assign": {"paid_amount": "$.event.amount"}}],
--                                  "cancel": "cancelled"},
--                           "after": [{"delay": "2 days", "target": "expired"}]},
--      "shipping": {"action": {"task": "ship", "max_attempts": 3}, "on_done": "delivered", "on_error": "needs_attention"},
--      "delivered": {"final": true}, ...}}
--
-- A state is a task row of its definition (its action's queue, priority,
-- retries, timeout, selectors, affinity; defaults for a state without one)
-- whose spec column holds the state's normalized spec, so applying an event
-- reads one row by primary key. Normalized, every transition is a list of
-- candidates {target, guard?, assign?}: a bare target name is a list of one.

-- One event's transition: a target name, a candidate object, or a list of
-- candidates tried in order. Returns the list, normalized.
CREATE OR REPLACE FUNCTION flowforge._normalize_machine_transition(p_value jsonb, p_state text, p_event text,
                                                                  p_states jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_label constant text := format('state "%s", event "%s"', p_state, p_event);
    v_candidates jsonb;
    v_candidate jsonb;
    v_field text;
    v_key text;
    v_path jsonb;
    v_assign jsonb;
    v_out jsonb := '[]';
    v_ord integer := 0;
BEGIN
    v_candidates := CASE jsonb_typeof(p_value)
                        WHEN 'string' THEN jsonb_build_array(jsonb_build_object('target', p_value))
                        WHEN 'object' THEN jsonb_build_array(p_value)
                        WHEN 'array' THEN p_value
                    END;
    IF v_candidates IS NULL OR jsonb_array_length(v_candidates) NOT BETWEEN 1 AND 100 THEN
        PERFORM flowforge._invalid_definition(format(
            '%s: a transition is a target state name or a list of 1 to 100 candidates {"target", "guard", "assign"}, '
            'got %s', v_label, p_value));
    END IF;
    FOR v_candidate IN SELECT value FROM jsonb_array_elements(v_candidates) LOOP
        v_ord := v_ord + 1;
        IF jsonb_typeof(v_candidate) <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('%s, candidate %s: must be an object, got %s', v_label, v_ord,
                                                         v_candidate));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_candidate) LOOP
            IF v_field NOT IN ('target', 'guard', 'assign', 'description') THEN
                PERFORM flowforge._invalid_definition(format(
                    '%s, candidate %s: unknown field "%s" (known: target, guard, assign, description)', v_label, v_ord, v_field));
            END IF;
        END LOOP;
        IF jsonb_typeof(v_candidate -> 'target') IS DISTINCT FROM 'string' OR NOT p_states ? (v_candidate ->> 'target') THEN
            PERFORM flowforge._invalid_definition(format('%s: target names unknown state %s', v_label,
                                                         coalesce((v_candidate -> 'target')::text, 'nothing')));
        END IF;
        -- IS NOT TRUE, not NOT: a path that finds nothing in the probe document
        -- ("$.event.amount") is no predicate, whatever the helper answers for it.
        IF v_candidate ? 'guard' AND (jsonb_typeof(v_candidate -> 'guard') <> 'string'
                                      OR flowforge._is_jsonpath_predicate(v_candidate ->> 'guard') IS NOT TRUE) THEN
            PERFORM flowforge._invalid_definition(format(
                '%s: guard must be a jsonpath predicate over {"event", "context"}, such as '
                '"$.event.amount >= $.context.total", got %s', v_label, v_candidate -> 'guard'));
        END IF;
        IF v_candidate ? 'description' AND jsonb_typeof(v_candidate -> 'description') <> 'string' THEN
            PERFORM flowforge._invalid_definition(format('%s: description must be a string', v_label));
        END IF;
        v_assign := NULL;
        IF v_candidate ? 'assign' THEN
            IF jsonb_typeof(v_candidate -> 'assign') <> 'object' OR v_candidate -> 'assign' = '{}' THEN
                PERFORM flowforge._invalid_definition(format(
                    '%s: assign must be a non-empty object of context keys and jsonpath expressions, such as '
                    '{"paid_amount": "$.event.amount"}', v_label));
            END IF;
            v_assign := '{}';
            FOR v_key, v_path IN SELECT key, value FROM jsonb_each(v_candidate -> 'assign') LOOP
                IF length(v_key) NOT BETWEEN 1 AND 200 THEN
                    PERFORM flowforge._invalid_definition(format('%s: assign keys must be 1 to 200 characters', v_label));
                END IF;
                IF jsonb_typeof(v_path) <> 'string' OR NOT flowforge._is_jsonpath(v_path #>> '{}') THEN
                    PERFORM flowforge._invalid_definition(format(
                        '%s: assign "%s" must be a jsonpath expression over {"event", "context"}, got %s',
                        v_label, v_key, v_path));
                END IF;
                v_assign := v_assign || jsonb_build_object(v_key, ((v_path #>> '{}')::jsonpath)::text);
            END LOOP;
        END IF;
        -- One element: the candidate object is built first (array || object would append its pairs).
        v_out := v_out || jsonb_build_array(
            jsonb_build_object('target', v_candidate ->> 'target')
            || CASE WHEN v_candidate ? 'guard'
                    THEN jsonb_build_object('guard', ((v_candidate ->> 'guard')::jsonpath)::text) ELSE '{}' END
            || CASE WHEN v_assign IS NOT NULL THEN jsonb_build_object('assign', v_assign) ELSE '{}' END
            || CASE WHEN v_candidate ? 'description'
                    THEN jsonb_build_object('description', v_candidate -> 'description') ELSE '{}' END);
    END LOOP;
    RETURN v_out;
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_machine_transition(jsonb, text, text, jsonb) IS
  'Internal: validates the transition of event p_event in state p_state (a target name, a candidate, or a list of '
  '1..100 candidates {target, guard, assign, description}) against the states p_states and returns the list, '
  'jsonpaths canonical. Errors: FF002 naming the state and event.';

-- One state: final, an action (with on_done / on_error), or events and timers.
CREATE OR REPLACE FUNCTION flowforge._normalize_machine_state(p_name text, p_state jsonb, p_states jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET intervalstyle = 'postgres'
AS $$
DECLARE
    c_task_pattern constant text := '^[A-Za-z][A-Za-z0-9_-]{0,62}$';
    c_event_pattern constant text := '^[A-Za-z][A-Za-z0-9_.:-]{0,199}$';
    v_field text;
    v_event text;
    v_value jsonb;
    v_timer jsonb;
    v_delay interval;
    v_action jsonb;
    v_on jsonb := '{}';
    v_after jsonb := '[]';
    v_out jsonb;
    v_ord integer := 0;
BEGIN
    IF jsonb_typeof(p_state) <> 'object' THEN
        PERFORM flowforge._invalid_definition(format('state "%s" must be an object, got %s', p_name, p_state));
    END IF;
    FOR v_field IN SELECT jsonb_object_keys(p_state) LOOP
        IF v_field NOT IN ('on', 'after', 'action', 'on_done', 'on_error', 'final', 'description') THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s": unknown field "%s" (known: on, after, action, on_done, on_error, final, description)',
                p_name, v_field));
        END IF;
    END LOOP;
    IF p_state ? 'description' AND jsonb_typeof(p_state -> 'description') <> 'string' THEN
        PERFORM flowforge._invalid_definition(format('state "%s": description must be a string', p_name));
    END IF;
    IF p_state ? 'final' AND jsonb_typeof(p_state -> 'final') <> 'boolean' THEN
        PERFORM flowforge._invalid_definition(format('state "%s": final must be true or false', p_name));
    END IF;
    v_out := jsonb_build_object('final', coalesce((p_state ->> 'final')::boolean, false))
             || CASE WHEN p_state ? 'description' THEN jsonb_build_object('description', p_state -> 'description')
                     ELSE '{}' END;

    IF (p_state ->> 'final')::boolean IS TRUE THEN
        -- A final state ends the run: nothing leaves it and nothing runs in it.
        FOR v_field IN SELECT jsonb_object_keys(p_state) LOOP
            IF v_field NOT IN ('final', 'description') THEN
                PERFORM flowforge._invalid_definition(format(
                    'state "%s" is final: it ends the run, so it takes no "%s" (only final, description)', p_name, v_field));
            END IF;
        END LOOP;
        RETURN v_out;
    END IF;

    IF p_state ? 'action' THEN
        -- Events wait in the queue while the action runs, so an action state is
        -- left only by its action's end: it takes on_done / on_error, not on / after.
        IF p_state ? 'on' OR p_state ? 'after' THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s" has an action: events wait while it runs and it is left by on_done / on_error, so it '
                'takes no "on" or "after" (put them on the state on_done leads to)', p_name));
        END IF;
        v_action := p_state -> 'action';
        IF jsonb_typeof(v_action) <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('state "%s": action must be an object {"task", ...}', p_name));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_action) LOOP
            IF v_field NOT IN ('task', 'queue', 'priority', 'max_attempts', 'backoff', 'backoff_factor', 'max_backoff',
                               'timeout', 'description', 'worker_params', 'affinity', 'affinity_policy', 'concurrency',
                               'rate_limit', 'fairness') THEN
                PERFORM flowforge._invalid_definition(format('state "%s", action: unknown field "%s"', p_name, v_field));
            END IF;
        END LOOP;
        IF jsonb_typeof(v_action -> 'task') IS DISTINCT FROM 'string' OR (v_action ->> 'task') !~ c_task_pattern THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s", action: task must be the task name a worker handles (1-63 letters, digits, "_" or "-" '
                'starting with a letter), got %s', p_name, coalesce((v_action -> 'task')::text, 'nothing')));
        END IF;
        IF NOT p_state ? 'on_done' THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s" has an action but no on_done: name the state the machine enters when it succeeds', p_name));
        END IF;
        FOREACH v_field IN ARRAY ARRAY['on_done', 'on_error'] LOOP
            IF p_state ? v_field AND (jsonb_typeof(p_state -> v_field) <> 'string' OR NOT p_states ? (p_state ->> v_field)) THEN
                PERFORM flowforge._invalid_definition(format('state "%s": %s names unknown state %s', p_name, v_field,
                                                             p_state -> v_field));
            END IF;
        END LOOP;
        RETURN v_out || jsonb_build_object(
            'action', jsonb_build_object('task', v_action ->> 'task')
                      || flowforge._spec_unit(v_action, format('state "%s", action', p_name)),
            'on_done', p_state ->> 'on_done')
            || CASE WHEN p_state ? 'on_error' THEN jsonb_build_object('on_error', p_state ->> 'on_error') ELSE '{}' END;
    END IF;

    IF p_state ? 'on_done' OR p_state ? 'on_error' THEN
        PERFORM flowforge._invalid_definition(format(
            'state "%s": on_done and on_error follow an action, and this state has none', p_name));
    END IF;
    IF p_state ? 'on' THEN
        IF jsonb_typeof(p_state -> 'on') <> 'object' THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s": on must be an object of event names and transitions, such as {"paid": "shipping"}', p_name));
        END IF;
        FOR v_event, v_value IN SELECT key, value FROM jsonb_each(p_state -> 'on') LOOP
            IF v_event !~ c_event_pattern THEN
                PERFORM flowforge._invalid_definition(format(
                    'state "%s": event name "%s" must be 1-200 letters, digits, "_", ".", ":" or "-" starting with a '
                    'letter', p_name, v_event));
            END IF;
            v_on := v_on || jsonb_build_object(v_event,
                                               flowforge._normalize_machine_transition(v_value, p_name, v_event, p_states));
        END LOOP;
    END IF;
    IF p_state ? 'after' THEN
        IF jsonb_typeof(p_state -> 'after') <> 'array' OR jsonb_array_length(p_state -> 'after') NOT BETWEEN 1 AND 10 THEN
            PERFORM flowforge._invalid_definition(format(
                'state "%s": after must be a list of 1 to 10 timers {"delay", "target"}', p_name));
        END IF;
        FOR v_timer IN SELECT value FROM jsonb_array_elements(p_state -> 'after') LOOP
            v_ord := v_ord + 1;
            IF jsonb_typeof(v_timer) <> 'object' THEN
                PERFORM flowforge._invalid_definition(format('state "%s", timer %s: must be an object {"delay", "target"}',
                                                             p_name, v_ord));
            END IF;
            FOR v_field IN SELECT jsonb_object_keys(v_timer) LOOP
                IF v_field NOT IN ('delay', 'target', 'description') THEN
                    PERFORM flowforge._invalid_definition(format(
                        'state "%s", timer %s: unknown field "%s" (known: delay, target, description)', p_name, v_ord, v_field));
                END IF;
            END LOOP;
            IF jsonb_typeof(v_timer -> 'target') IS DISTINCT FROM 'string' OR NOT p_states ? (v_timer ->> 'target') THEN
                PERFORM flowforge._invalid_definition(format('state "%s", timer %s: target names unknown state %s',
                                                             p_name, v_ord, coalesce((v_timer -> 'target')::text, 'nothing')));
            END IF;
            -- Negative durations are refused by _spec_interval, zero here; a
            -- missing delay is JSON null to it (SQL NULL would pass its checks).
            v_delay := flowforge._spec_interval(coalesce(v_timer -> 'delay', 'null'),
                                                format('state "%s", timer %s: delay', p_name, v_ord));
            IF v_delay = interval '0' THEN
                PERFORM flowforge._invalid_definition(format('state "%s", timer %s: delay must be longer than zero',
                                                             p_name, v_ord));
            END IF;
            IF v_delay > interval '366 days' THEN
                PERFORM flowforge._invalid_definition(format('state "%s", timer %s: delay must be at most 366 days, got %s',
                                                             p_name, v_ord, v_timer -> 'delay'));
            END IF;
            IF v_timer ? 'description' AND jsonb_typeof(v_timer -> 'description') <> 'string' THEN
                PERFORM flowforge._invalid_definition(format('state "%s", timer %s: description must be a string',
                                                             p_name, v_ord));
            END IF;
            v_after := v_after || jsonb_build_array(
                jsonb_build_object('delay', v_delay::text, 'target', v_timer ->> 'target')
                || CASE WHEN v_timer ? 'description' THEN jsonb_build_object('description', v_timer -> 'description')
                        ELSE '{}' END);
        END LOOP;
    END IF;
    IF v_on = '{}' AND v_after = '[]' THEN
        PERFORM flowforge._invalid_definition(format(
            'state "%s" is not final and has no way out: give it "on" events, "after" timers or an action', p_name));
    END IF;
    RETURN v_out || jsonb_build_object('on', v_on)
        || CASE WHEN v_after <> '[]' THEN jsonb_build_object('after', v_after) ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_machine_state(text, jsonb, jsonb) IS
  'Internal: validates state p_name of a machine whose states are p_states and returns it normalized: {final, '
  'description?} for a final state; {final, action {task, unit fields}, on_done, on_error?} for an action state; '
  '{final, on {event: [candidates]}, after? [{delay, target}]} otherwise. Errors: FF002 naming the state.';

CREATE OR REPLACE FUNCTION flowforge._normalize_machine_spec(p_spec jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_name_pattern constant text := '^[A-Za-z][A-Za-z0-9_-]{0,62}$';
    c_max_states constant integer := 1000;
    v_field text;
    v_name text;
    v_state jsonb;
    v_states jsonb := '{}';
    v_reached text[];
    v_frontier text[];
BEGIN
    FOR v_field IN SELECT jsonb_object_keys(p_spec) LOOP
        IF v_field NOT IN ('name', 'kind', 'description', 'initial', 'context', 'states') THEN
            PERFORM flowforge._invalid_definition(format(
                'unknown field "%s" (known for a statemachine: name, kind, description, initial, context, states)', v_field));
        END IF;
    END LOOP;
    IF jsonb_typeof(p_spec -> 'name') IS DISTINCT FROM 'string' OR (p_spec ->> 'name') !~ c_name_pattern THEN
        PERFORM flowforge._invalid_definition(format(
            'name must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got %s',
            coalesce((p_spec -> 'name')::text, 'nothing')));
    END IF;
    IF p_spec ? 'description' AND jsonb_typeof(p_spec -> 'description') <> 'string' THEN
        PERFORM flowforge._invalid_definition('description must be a string');
    END IF;
    IF p_spec ? 'context' AND jsonb_typeof(p_spec -> 'context') <> 'object' THEN
        PERFORM flowforge._invalid_definition(format('context must be a JSON object (the machine''s starting data), got %s',
                                                     jsonb_typeof(p_spec -> 'context')));
    END IF;
    IF jsonb_typeof(p_spec -> 'states') IS DISTINCT FROM 'object' OR p_spec -> 'states' = '{}' THEN
        PERFORM flowforge._invalid_definition('states must be a non-empty object of state names and states');
    END IF;
    IF (SELECT count(*) FROM jsonb_object_keys(p_spec -> 'states')) > c_max_states THEN
        PERFORM flowforge._invalid_definition(format('a statemachine has at most %s states', c_max_states));
    END IF;
    FOR v_name IN SELECT jsonb_object_keys(p_spec -> 'states') LOOP
        IF v_name !~ c_name_pattern THEN
            PERFORM flowforge._invalid_definition(format(
                'state name "%s" must be 1-63 letters, digits, "_" or "-" starting with a letter', v_name));
        END IF;
    END LOOP;
    IF jsonb_typeof(p_spec -> 'initial') IS DISTINCT FROM 'string' THEN
        PERFORM flowforge._invalid_definition('initial must name the state a run begins in');
    END IF;
    IF NOT (p_spec -> 'states') ? (p_spec ->> 'initial') THEN
        PERFORM flowforge._invalid_definition(format('initial names unknown state "%s"', p_spec ->> 'initial'));
    END IF;

    FOR v_name, v_state IN SELECT key, value FROM jsonb_each(p_spec -> 'states') LOOP
        v_states := v_states || jsonb_build_object(v_name,
                                                   flowforge._normalize_machine_state(v_name, v_state, p_spec -> 'states'));
    END LOOP;

    -- Every state can be reached from initial: breadth first over events,
    -- timers and action outcomes.
    v_reached := ARRAY[p_spec ->> 'initial'];
    v_frontier := v_reached;
    WHILE cardinality(v_frontier) > 0 LOOP
        SELECT coalesce(array_agg(DISTINCT t.target), '{}') INTO v_frontier
        FROM unnest(v_frontier) AS f(name)
        CROSS JOIN LATERAL (
            SELECT c ->> 'target' FROM jsonb_each(v_states -> f.name -> 'on') AS o(event, candidates),
                                       jsonb_array_elements(o.candidates) AS c
            UNION ALL SELECT a ->> 'target' FROM jsonb_array_elements(coalesce(v_states -> f.name -> 'after', '[]')) AS a
            UNION ALL SELECT v_states -> f.name ->> 'on_done'
            UNION ALL SELECT v_states -> f.name ->> 'on_error'
        ) AS t(target)
        WHERE t.target IS NOT NULL AND NOT t.target = ANY (v_reached);
        v_reached := v_reached || v_frontier;
    END LOOP;
    FOR v_name IN SELECT k FROM jsonb_object_keys(v_states) AS k WHERE NOT k = ANY (v_reached) ORDER BY k LOOP
        PERFORM flowforge._invalid_definition(format('state "%s" cannot be reached from initial "%s"', v_name,
                                                     p_spec ->> 'initial'));
    END LOOP;

    RETURN jsonb_build_object('name', p_spec ->> 'name', 'kind', 'statemachine', 'initial', p_spec ->> 'initial',
                              'context', coalesce(p_spec -> 'context', '{}'), 'states', v_states)
        || CASE WHEN p_spec ? 'description' THEN jsonb_build_object('description', p_spec -> 'description') ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_machine_spec(jsonb) IS
  'Internal: validates a statemachine spec (initial, context, states with on / after / action / on_done / on_error / '
  'final) and returns it normalized. Errors: FF002 naming the first problem — unknown initial or target, a state '
  'unreachable from initial, a final state with transitions or an action, an action state without on_done (or with '
  'on / after), a state with no way out, an invalid guard or assignment jsonpath (naming the state and event), a zero, '
  'negative or over-366-day delay, unknown fields.';

-- A new machine version's states: one task row each, its spec beside it.
CREATE OR REPLACE FUNCTION flowforge._machine_define(p_org uuid, p_workflow_id uuid, p_spec jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.task (organization_id, workflow_id, key, queue, priority, max_attempts, backoff,
                                backoff_factor, max_backoff, timeout, dependency_count, is_final, worker_params,
                                affinity, affinity_policy, spec, flow, created_at)
    SELECT p_org, p_workflow_id, s.name, coalesce(a ->> 'queue', 'default'), coalesce((a ->> 'priority')::integer, 0),
           coalesce((a ->> 'max_attempts')::integer, 1), coalesce((a ->> 'backoff')::interval, interval '1 second'),
           coalesce((a ->> 'backoff_factor')::numeric, 2), coalesce((a ->> 'max_backoff')::interval, interval '10 minutes'),
           (a ->> 'timeout')::interval, 0, (s.state ->> 'final')::boolean, a -> 'worker_params', a ->> 'affinity',
           coalesce(a ->> 'affinity_policy', 'soft'), s.state, flowforge._unit_flow(a), p_now
    FROM jsonb_each(p_spec -> 'states') AS s(name, state)
    CROSS JOIN LATERAL (SELECT s.state -> 'action') AS x(a);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_define(uuid, uuid, jsonb, timestamptz) IS
  'Internal (statemachine hook): inserts one task row per state of a new machine version — its action''s unit '
  'fields (defaults for a state without an action) and the state''s normalized spec in task.spec.';
