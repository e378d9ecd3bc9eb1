-- The machine engine's step: a run rests in one state; an event, a timer or
-- its action's end moves it to the next. All of it happens under the run's
-- directory lock (send_event, complete_work / fail_work, the timer duty,
-- cancel_run and retry_run all take it first), so the transitions of one run
-- are one serial order. A step costs the same at the 10th event as at the
-- 10,000th: the history is rows (machine_transition), the state one row read
-- by key, the state's spec one task row read by key.

-- Append one entry to the run's history, and its run_events row.
CREATE OR REPLACE FUNCTION flowforge._machine_record(p_org uuid, p_run_id uuid, p_cause text, p_outcome text,
                                                     p_event text, p_event_id text, p_payload jsonb, p_from text,
                                                     p_to text, p_detail jsonb, p_now timestamptz,
                                                     p_n bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_n bigint := p_n;
BEGIN
    IF v_n IS NULL THEN
        UPDATE flowforge.machine_run m SET history_length = m.history_length + 1
        WHERE m.organization_id = p_org AND m.run_id = p_run_id
        RETURNING m.history_length INTO STRICT v_n;
    END IF;
    INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, event, event_id, payload,
                                              from_state, to_state, detail, created_at)
    VALUES (p_org, p_run_id, v_n, p_cause, p_outcome, p_event, p_event_id, p_payload, p_from, p_to, p_detail, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id,
        CASE p_outcome WHEN 'entered' THEN 'state_entered' WHEN 'refused' THEN 'event_refused' ELSE 'machine_stopped' END,
        ARRAY[NULL::uuid], ARRAY[p_from], ARRAY[coalesce(p_to, p_from)], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_strip_nulls(jsonb_build_object('n', v_n, 'cause', p_cause, 'event', p_event, 'event_id', p_event_id))
              || coalesce(p_detail, '{}')],
        p_now);
    RETURN v_n;
END;
$$;
COMMENT ON FUNCTION flowforge._machine_record(uuid, uuid, text, text, text, text, jsonb, text, text, jsonb, timestamptz, bigint) IS
  'Internal: appends history entry n of machine run p_run_id (cause, outcome, event, from/to state, detail) and its '
  'run_events row (kind state_entered, event_refused or machine_stopped); n is p_n when the caller already counted '
  'it in its own update of the run, else history_length + 1. Returns n.';

-- Every event still waiting in the queue is refused, oldest first: the run
-- ended, so none of them will ever apply.
CREATE OR REPLACE FUNCTION flowforge._machine_refuse_queued(p_org uuid, p_run_id uuid, p_state text, p_reason text,
                                                            p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_queued record;
    v_count integer := 0;
BEGIN
    FOR v_queued IN
        SELECT q.seq, q.event, q.event_id, q.payload, q.received_at FROM flowforge.machine_event_queue q
        WHERE q.organization_id = p_org AND q.run_id = p_run_id ORDER BY q.seq
    LOOP
        PERFORM flowforge._machine_record(p_org, p_run_id, 'event', 'refused', v_queued.event, v_queued.event_id,
            v_queued.payload, p_state, NULL,
            jsonb_build_object('reason', p_reason, 'queued', true, 'received_at', v_queued.received_at), p_now);
        v_count := v_count + 1;
    END LOOP;
    DELETE FROM flowforge.machine_event_queue q WHERE q.organization_id = p_org AND q.run_id = p_run_id;
    RETURN v_count;
END;
$$;
COMMENT ON FUNCTION flowforge._machine_refuse_queued(uuid, uuid, text, text, timestamptz) IS
  'Internal: records every queued event of run p_run_id as refused (with p_reason), in arrival order, and empties '
  'its queue. Returns how many.';

-- The run ends: succeeded (a final state was entered), failed (an action
-- failed with no on_error), cancelled.
CREATE OR REPLACE FUNCTION flowforge._machine_finish(p_org uuid, p_run_id uuid, p_status text, p_cause text,
                                                     p_reason text, p_failure text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_state text;
BEGIN
    UPDATE flowforge.machine_run m
    SET status = p_status, reason = p_reason, failure = p_failure, action_item_id = NULL,
        finished_at = greatest(p_now, m.started_at), updated_at = p_now, updated_by = flowforge._principal()
    WHERE m.organization_id = p_org AND m.run_id = p_run_id AND m.status = 'running'
    RETURNING m.state INTO v_state;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    DELETE FROM flowforge.machine_timer t WHERE t.organization_id = p_org AND t.run_id = p_run_id;
    -- Entering a final state is already in the history; a stop is not.
    IF p_status <> 'succeeded' THEN
        PERFORM flowforge._machine_record(p_org, p_run_id, p_cause, 'stopped', NULL, NULL, NULL, v_state, NULL,
            jsonb_strip_nulls(jsonb_build_object('status', p_status, 'reason', p_reason, 'failure', left(p_failure, 1000))),
            p_now);
    END IF;
    PERFORM flowforge._machine_refuse_queued(p_org, p_run_id, v_state, format('the run %s', p_status), p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_' || p_status, ARRAY[NULL::uuid], ARRAY['running'],
        ARRAY[p_status], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_strip_nulls(jsonb_build_object('reason', p_reason, 'error', left(p_failure, 1000), 'state', v_state))],
        p_now);
    PERFORM flowforge._record_run_ended(p_org, p_run_id, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_finish(uuid, uuid, text, text, text, text, timestamptz) IS
  'Internal: a running machine run ends with p_status (succeeded, failed, cancelled), reason and failure: no action, '
  'no timers, its queued events refused, a stopped entry in the history (unless a final state was entered), event '
  'run_<status>, the directory row''s ended_at.';

-- Enter a state: leave the old one (its timers go), count the transition,
-- record it, and start what the new state does — end the run (final), run
-- its action (suspended until it ends), or set its timers.
CREATE OR REPLACE FUNCTION flowforge._machine_enter(p_org uuid, p_run_id uuid, p_target text, p_context jsonb,
                                                    p_cause text, p_event text, p_event_id text, p_payload jsonb,
                                                    p_detail jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run record;
    v_node flowforge.task;
    v_payload jsonb;
    v_item uuid;
BEGIN
    DELETE FROM flowforge.machine_timer t WHERE t.organization_id = p_org AND t.run_id = p_run_id;
    UPDATE flowforge.machine_run m
    SET state = p_target, context = p_context, transitions = m.transitions + 1, history_length = m.history_length + 1,
        updated_at = p_now
    FROM flowforge.machine_run old, flowforge.workflow w
    WHERE m.organization_id = p_org AND m.run_id = p_run_id AND old.id = m.id AND old.organization_id = p_org
      AND w.id = m.definition_id AND w.organization_id = p_org
    RETURNING old.state AS from_state, m.transitions, m.history_length, m.definition_id, w.name AS definition
    INTO STRICT v_run;
    SELECT * INTO STRICT v_node FROM flowforge.task t
    WHERE t.organization_id = p_org AND t.workflow_id = v_run.definition_id AND t.key = p_target;
    PERFORM flowforge._machine_record(p_org, p_run_id, p_cause, 'entered', p_event, p_event_id, p_payload,
                                      CASE WHEN p_cause = 'start' THEN NULL ELSE v_run.from_state END, p_target,
                                      p_detail, p_now, v_run.history_length);
    IF v_node.is_final THEN
        PERFORM flowforge._machine_finish(p_org, p_run_id, 'succeeded', p_cause,
                                          format('reached final state "%s"', p_target), NULL, p_now);
    ELSIF v_node.spec ? 'action' THEN
        v_payload := jsonb_build_object('state', p_target, 'context', p_context);
        -- The work item's task name is the action's, not the state's: the
        -- registry a worker serves is keyed by task names.
        v_item := flowforge._enqueue_work(p_org, 'statemachine', p_run_id, v_node.id, v_node.spec #>> '{action,task}',
                                          v_payload,
                                          flowforge._affinity_key(v_node.affinity, p_run_id, v_run.definition, v_payload),
                                          p_now);
        UPDATE flowforge.machine_run m SET action_item_id = v_item
        WHERE m.organization_id = p_org AND m.run_id = p_run_id;
    ELSIF v_node.spec ? 'after' THEN
        INSERT INTO flowforge.machine_timer (organization_id, run_id, entered, position, target, delay, fire_at)
        SELECT p_org, p_run_id, v_run.transitions, a.position, a.timer ->> 'target', (a.timer ->> 'delay')::interval,
               p_now + (a.timer ->> 'delay')::interval
        FROM jsonb_array_elements(v_node.spec -> 'after') WITH ORDINALITY AS a(timer, position);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._machine_enter(uuid, uuid, text, jsonb, text, text, text, jsonb, jsonb, timestamptz) IS
  'Internal: machine run p_run_id enters state p_target with context p_context (transitions + 1, the old state''s '
  'timers deleted, a history entry with cause and event). A final state ends the run (succeeded); an action state '
  'queues the action''s work item (payload {"state", "context"}) and suspends the run; otherwise its "after" timers '
  'are set from now, stamped with the entry''s transition count.';

-- Which transition, if any, state p_state takes for an event: the first
-- candidate whose guard holds over {"event", "context"} (an unknown or
-- failing guard does not hold), with its assignments evaluated over the same
-- document (an expression that yields nothing, or fails, sets null).
-- Returns {"target", "context", "candidate"} or {"refused": why}.
CREATE OR REPLACE FUNCTION flowforge._machine_accept(p_state text, p_spec jsonb, p_event text, p_payload jsonb,
                                                     p_context jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_candidates constant jsonb := p_spec -> 'on' -> p_event;
    v_doc constant jsonb := jsonb_build_object('event', p_payload, 'context', p_context);
    v_candidate jsonb;
    v_position bigint;
    v_holds boolean;
    v_key text;
    v_path text;
    v_value jsonb;
    v_assigned jsonb;
BEGIN
    IF v_candidates IS NULL THEN
        RETURN jsonb_build_object('refused', format('state "%s" has no transition for event "%s" (it accepts: %s)',
            p_state, p_event,
            coalesce((SELECT string_agg(k, ', ' ORDER BY k) FROM jsonb_object_keys(p_spec -> 'on') AS k), 'no events')));
    END IF;
    FOR v_candidate, v_position IN SELECT value, ordinality FROM jsonb_array_elements(v_candidates) WITH ORDINALITY LOOP
        v_holds := NOT v_candidate ? 'guard';
        IF NOT v_holds THEN
            -- silent => true suppresses missing keys, wrong types and arithmetic
            -- errors, not all: comparing a date with a timestamptz raises 0A000
            -- even so. Such a guard cannot be evaluated, so it does not hold.
            BEGIN
                v_holds := jsonb_path_match(v_doc, (v_candidate ->> 'guard')::jsonpath, silent => true) IS TRUE;
            EXCEPTION WHEN data_exception OR feature_not_supported THEN
                v_holds := false;
            END;
        END IF;
        IF v_holds THEN
            v_assigned := '{}';
            FOR v_key, v_path IN SELECT a.key, a.value FROM jsonb_each_text(v_candidate -> 'assign') AS a LOOP
                BEGIN
                    v_value := jsonb_path_query_first(v_doc, v_path::jsonpath, silent => true);
                EXCEPTION WHEN data_exception OR feature_not_supported THEN
                    v_value := NULL;
                END;
                v_assigned := v_assigned || jsonb_build_object(v_key, coalesce(v_value, 'null'));
            END LOOP;
            RETURN jsonb_build_object('target', v_candidate ->> 'target', 'candidate', v_position,
                                      'context', p_context || v_assigned);
        END IF;
    END LOOP;
    RETURN jsonb_build_object('refused', format('no guard of event "%s" holds in state "%s"', p_event, p_state));
END;
$$;
COMMENT ON FUNCTION flowforge._machine_accept(text, jsonb, text, jsonb, jsonb) IS
  'Internal: the transition state p_state (normalized spec p_spec) takes for event p_event with payload p_payload '
  'and context p_context — {"target", "context" (assignments applied), "candidate" (its position)} for the first '
  'candidate whose guard holds, else {"refused": reason}.';

-- Apply one event to a resting machine (live, not suspended, locked).
-- Returns NULL when a transition was taken, the reason when it was refused
-- (the caller decides: send_event raises, a queued event is recorded).
CREATE OR REPLACE FUNCTION flowforge._machine_apply(p_org uuid, p_run_id uuid, p_event text, p_payload jsonb,
                                                    p_event_id text, p_detail jsonb, p_now timestamptz)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run record;
    v_taken jsonb;
BEGIN
    SELECT m.state, m.context, t.spec INTO STRICT v_run
    FROM flowforge.machine_run m
    JOIN flowforge.task t ON t.organization_id = m.organization_id AND t.workflow_id = m.definition_id AND t.key = m.state
    WHERE m.organization_id = p_org AND m.run_id = p_run_id;
    v_taken := flowforge._machine_accept(v_run.state, v_run.spec, p_event, p_payload, v_run.context);
    IF v_taken ? 'refused' THEN
        RETURN v_taken ->> 'refused';
    END IF;
    PERFORM flowforge._machine_enter(p_org, p_run_id, v_taken ->> 'target', v_taken -> 'context', 'event', p_event,
                                     p_event_id, p_payload,
                                     jsonb_build_object('candidate', (v_taken ->> 'candidate')::integer)
                                     || coalesce(p_detail, '{}'),
                                     p_now);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION flowforge._machine_apply(uuid, uuid, text, jsonb, text, jsonb, timestamptz) IS
  'Internal: applies event p_event to the resting machine run p_run_id (locked by the caller): the first candidate '
  'whose guard holds is taken (_machine_enter). Returns NULL when applied, the refusal reason otherwise (nothing '
  'written).';

-- The machine resumes (its action ended): the events that waited are
-- applied in arrival order, each once, until one suspends it again or it ends.
CREATE OR REPLACE FUNCTION flowforge._machine_resume(p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_queued record;
    v_reason text;
    v_state text;
    v_count integer := 0;
BEGIN
    LOOP
        IF NOT EXISTS (SELECT 1 FROM flowforge.machine_run m
                       WHERE m.organization_id = p_org AND m.run_id = p_run_id AND m.live AND NOT m.suspended) THEN
            EXIT;  -- ended, or suspended again: the rest keep waiting (or were refused by the end)
        END IF;
        DELETE FROM flowforge.machine_event_queue q
        WHERE q.organization_id = p_org AND q.run_id = p_run_id
          AND q.seq = (SELECT min(x.seq) FROM flowforge.machine_event_queue x
                       WHERE x.organization_id = p_org AND x.run_id = p_run_id)
        RETURNING q.seq, q.event, q.event_id, q.payload, q.received_at INTO v_queued;
        EXIT WHEN NOT FOUND;
        v_count := v_count + 1;
        v_reason := flowforge._machine_apply(p_org, p_run_id, v_queued.event, v_queued.payload, v_queued.event_id,
                                             jsonb_build_object('queued', true, 'received_at', v_queued.received_at),
                                             p_now);
        IF v_reason IS NOT NULL THEN
            SELECT m.state INTO v_state FROM flowforge.machine_run m
            WHERE m.organization_id = p_org AND m.run_id = p_run_id;
            PERFORM flowforge._machine_record(p_org, p_run_id, 'event', 'refused', v_queued.event, v_queued.event_id,
                v_queued.payload, v_state, NULL,
                jsonb_build_object('reason', v_reason, 'queued', true, 'received_at', v_queued.received_at), p_now);
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
COMMENT ON FUNCTION flowforge._machine_resume(uuid, uuid, timestamptz) IS
  'Internal: applies the queued events of a machine run that is resting again, oldest first, each exactly once: '
  'taken, or recorded as refused (the machine goes on), until it is suspended again or ends. Returns how many were '
  'taken off the queue.';

-- The action's work item completed: an object output is merged into the
-- context (any other value is kept under the state's name), then on_done.
CREATE OR REPLACE FUNCTION flowforge._machine_item_succeeded(p_org uuid, p_run_id uuid, p_work_item_id uuid,
                                                             p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
    v_run record;
BEGIN
    SELECT w.organization_id, w.output, w.task_name, w.retry_count INTO STRICT v_item
    FROM flowforge.work_item w WHERE w.id = p_work_item_id AND w.organization_id = p_org;
    UPDATE flowforge.machine_run m
    SET action_item_id = NULL,
        context = CASE WHEN v_item.output IS NULL THEN m.context
                       WHEN jsonb_typeof(v_item.output) = 'object' THEN m.context || v_item.output
                       ELSE m.context || jsonb_build_object(m.state, v_item.output) END
    FROM flowforge.task t
    WHERE m.organization_id = v_item.organization_id AND m.run_id = p_run_id AND m.action_item_id = p_work_item_id
      AND t.organization_id = m.organization_id AND t.workflow_id = m.definition_id AND t.key = m.state
    RETURNING m.context, t.spec ->> 'on_done' AS on_done INTO v_run;
    IF NOT FOUND THEN
        RETURN;  -- not this run's current action (the run was cancelled while it ran)
    END IF;
    PERFORM flowforge._machine_enter(v_item.organization_id, p_run_id, v_run.on_done, v_run.context, 'action_done',
        NULL, NULL, NULL,
        jsonb_build_object('work_item_id', p_work_item_id, 'task', v_item.task_name, 'attempts', v_item.retry_count + 1),
        p_now);
    PERFORM flowforge._machine_resume(v_item.organization_id, p_run_id, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_item_succeeded(uuid, uuid, uuid, timestamptz) IS
  'Internal (statemachine hook; every statement filters on organization p_org): the current action''s work item '
  'completed — its output merged into the context (an '
  'object''s keys replace the context''s; another value goes under the state''s name), the state''s on_done '
  'entered, then the queued events applied.';

-- The action failed for good (its retries spent): on_error, or the run fails.
CREATE OR REPLACE FUNCTION flowforge._machine_item_failed(p_org uuid, p_run_id uuid, p_work_item_id uuid,
                                                          p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
    v_run record;
BEGIN
    SELECT w.organization_id, w.error, w.task_name, w.retry_count INTO STRICT v_item
    FROM flowforge.work_item w WHERE w.id = p_work_item_id AND w.organization_id = p_org;
    UPDATE flowforge.machine_run m SET action_item_id = NULL
    FROM flowforge.task t
    WHERE m.organization_id = v_item.organization_id AND m.run_id = p_run_id AND m.action_item_id = p_work_item_id
      AND t.organization_id = m.organization_id AND t.workflow_id = m.definition_id AND t.key = m.state
    RETURNING m.state, m.context, t.spec ->> 'on_error' AS on_error INTO v_run;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_run.on_error IS NULL THEN
        PERFORM flowforge._machine_finish(v_item.organization_id, p_run_id, 'failed', 'action_error',
            format('action "%s" of state "%s" failed after %s attempt(s)', v_item.task_name, v_run.state,
                   v_item.retry_count + 1),
            coalesce(v_item.error, 'the action failed'), p_now);
        RETURN;
    END IF;
    PERFORM flowforge._machine_enter(v_item.organization_id, p_run_id, v_run.on_error, v_run.context, 'action_error',
        NULL, NULL, NULL,
        jsonb_build_object('work_item_id', p_work_item_id, 'task', v_item.task_name, 'attempts', v_item.retry_count + 1,
                           'error', left(v_item.error, 1000)),
        p_now);
    PERFORM flowforge._machine_resume(v_item.organization_id, p_run_id, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_item_failed(uuid, uuid, uuid, timestamptz) IS
  'Internal (statemachine hook; every statement filters on organization p_org): the current action''s work item '
  'failed with no attempt left — the state''s '
  'on_error is entered (the error in the history entry) and the queued events applied; without on_error the run '
  'fails with the error in failure.';
