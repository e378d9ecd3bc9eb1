-- The machine's run verbs, reached through the hooks: start (enter initial),
-- cancel (its running action too), retry (the state it stopped in, again).

CREATE OR REPLACE FUNCTION flowforge._machine_start_run(p_org uuid, p_run_id uuid, p_workflow_id uuid, p_spec jsonb,
                                                        p_input jsonb, p_idempotency_key text, p_now timestamptz,
                                                        p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM flowforge._record_run(p_org, p_run_id, 'statemachine', p_workflow_id, p_now, p_created_by => p_created_by);
    PERFORM flowforge._lock_run(p_org, p_run_id);
    INSERT INTO flowforge.machine_run (organization_id, run_id, definition_id, state, context, status, input,
                                       idempotency_key, created_at, created_by, started_at)
    VALUES (p_org, p_run_id, p_workflow_id, p_spec ->> 'initial', coalesce(p_spec -> 'context', '{}') || p_input,
            'running', p_input, p_idempotency_key, p_now, p_created_by, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_started', ARRAY[NULL::uuid], ARRAY[NULL::text],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('workflow_id', p_workflow_id, 'actor', session_user::text, 'initial', p_spec ->> 'initial')],
        p_now);
    PERFORM flowforge._machine_enter(p_org, p_run_id, p_spec ->> 'initial', coalesce(p_spec -> 'context', '{}') || p_input,
                                     'start', NULL, NULL, NULL, NULL, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz, text) IS
  'Internal (statemachine hook): a running machine_run of p_created_by whose context is the definition''s context merged with the '
  'run input (the input''s keys win), its directory row, event run_started, and the initial state entered (its '
  'action queued or its timers set).';

CREATE OR REPLACE FUNCTION flowforge._machine_cancel_run(p_org uuid, p_run_id uuid, p_reason text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_status text;
BEGIN
    PERFORM flowforge._lock_run(p_org, p_run_id);
    SELECT m.status INTO v_status FROM flowforge.machine_run m WHERE m.organization_id = p_org AND m.run_id = p_run_id;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_status <> 'running' THEN
        RAISE EXCEPTION 'cancel_run refused: run % is already %', p_run_id, v_status
            USING ERRCODE = 'FF005', HINT = 'Only a running run can be cancelled.';
    END IF;
    -- The action's holder loses its token: its next write is refused (FF004).
    PERFORM flowforge._cancel_run_items(p_org, p_run_id, p_now);
    PERFORM flowforge._machine_finish(p_org, p_run_id, 'cancelled', 'cancel', coalesce(p_reason, 'cancelled'), NULL,
                                      p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_cancel_run(uuid, uuid, text, timestamptz) IS
  'Internal (statemachine hook): a running machine becomes cancelled — its action''s work item cancelled (the '
  'holder''s token moves on), its timers gone, its queued events refused, a stopped entry in the history. Errors: '
  'FF005 the run already ended.';

-- A failed or cancelled machine goes on in the state it stopped in, entered
-- again: its action runs again with a fresh attempt budget, its timers start
-- over. A machine that reached a final state succeeded and is not retried.
CREATE OR REPLACE FUNCTION flowforge._machine_retry_run(p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run record;
BEGIN
    PERFORM flowforge._lock_run(p_org, p_run_id);
    SELECT m.status, m.state, m.context INTO v_run
    FROM flowforge.machine_run m WHERE m.organization_id = p_org AND m.run_id = p_run_id;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_run.status NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'retry_run refused: run % is %', p_run_id, v_run.status
            USING ERRCODE = 'FF005', HINT = 'Only a failed or cancelled run can be retried.';
    END IF;
    UPDATE flowforge.machine_run m
    SET status = 'running', reason = NULL, failure = NULL, finished_at = NULL, updated_at = p_now,
        updated_by = flowforge._principal()
    WHERE m.organization_id = p_org AND m.run_id = p_run_id;
    PERFORM flowforge._record_run_reopened(p_org, p_run_id, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_retried', ARRAY[NULL::uuid], ARRAY[v_run.status::text],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('state', v_run.state, 'actor', session_user::text)], p_now);
    PERFORM flowforge._machine_enter(p_org, p_run_id, v_run.state, v_run.context, 'retry', NULL, NULL, NULL,
                                     jsonb_build_object('was', v_run.status), p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_retry_run(uuid, uuid, timestamptz) IS
  'Internal (statemachine hook): a failed or cancelled machine is running again, re-entering the state it stopped '
  'in (cause retry): an action state queues a new work item with a fresh attempt budget, timers start from now. '
  'Errors: FF005 the run is running or succeeded.';
