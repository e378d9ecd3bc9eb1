-- The graph's run verbs, reached through the hooks: start (enter the start
-- node), cancel (its outstanding work item too), retry (the node it stopped at).

CREATE OR REPLACE FUNCTION flowforge._graph_start_run(p_org uuid, p_run_id uuid, p_workflow_id uuid, p_spec jsonb,
                                                      p_input jsonb, p_idempotency_key text, p_now timestamptz,
                                                      p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM flowforge._record_run(p_org, p_run_id, 'graph', p_workflow_id, p_now, p_created_by => p_created_by);
    PERFORM flowforge._lock_run(p_org, p_run_id);
    INSERT INTO flowforge.graph_run (organization_id, run_id, definition_id, max_steps, state, input, status,
                                     idempotency_key, created_at, created_by, started_at)
    VALUES (p_org, p_run_id, p_workflow_id, (p_spec ->> 'max_steps')::integer, p_input, p_input, 'running',
            p_idempotency_key, p_now, p_created_by, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_started', ARRAY[NULL::uuid], ARRAY[NULL::text],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('workflow_id', p_workflow_id, 'actor', session_user::text, 'start', p_spec ->> 'start')],
        p_now);
    PERFORM flowforge._graph_enter(p_org, p_run_id,
        (SELECT t.id FROM flowforge.task t
         WHERE t.organization_id = p_org AND t.workflow_id = p_workflow_id AND t.key = p_spec ->> 'start'), p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz, text) IS
  'Internal (graph hook): a running graph_run of p_created_by whose data starts as the run input, its directory row, event '
  'run_started, and the start node entered (step 1).';

-- Cancel the run's outstanding work: holders of a dispatched item lose their
-- token, so their next write is refused (FF004).
CREATE OR REPLACE FUNCTION flowforge._cancel_run_items(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_ids uuid[];
    v_from text[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    WITH open AS MATERIALIZED (
        SELECT w.id, w.status AS from_status FROM flowforge.work_item w
        WHERE w.organization_id = p_org AND w.run_id = p_run_id AND w.status IN ('pending', 'dispatched')
        FOR UPDATE
    ), cancelled AS (
        UPDATE flowforge.work_item w
        SET status = 'cancelled', completed_at = greatest(p_now, w.dispatched_at), lease_expires_at = NULL,
            fencing_token = CASE WHEN o.from_status = 'dispatched' THEN w.fencing_token + 1 ELSE w.fencing_token END
        FROM open o WHERE w.organization_id = p_org AND w.id = o.id
        RETURNING w.id, o.from_status, w.fencing_token, w.retry_count
    )
    SELECT array_agg(c.id), array_agg(c.from_status::text), array_agg(c.fencing_token), array_agg(c.retry_count + 1)
    INTO v_ids, v_from, v_tokens, v_attempts
    FROM cancelled c;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM flowforge._append_events(p_org, p_run_id, 'cancelled', array_fill(NULL::uuid, ARRAY[cardinality(v_ids)]),
        v_from, array_fill('cancelled'::text, ARRAY[cardinality(v_ids)]), v_tokens, v_attempts,
        array_fill(NULL::jsonb, ARRAY[cardinality(v_ids)]), p_now, v_ids);
    RETURN cardinality(v_ids);
END;
$$;
COMMENT ON FUNCTION flowforge._cancel_run_items(uuid, uuid, timestamptz) IS
  'Internal: cancels every pending or dispatched work item of a run (a dispatched one''s fencing token moves on); '
  'event cancelled per item. Returns how many.';

CREATE OR REPLACE FUNCTION flowforge._graph_cancel_run(p_org uuid, p_run_id uuid, p_reason text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_status text;
BEGIN
    PERFORM flowforge._lock_run(p_org, p_run_id);
    SELECT g.status INTO v_status FROM flowforge.graph_run g WHERE g.organization_id = p_org AND g.run_id = p_run_id;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_status <> 'running' THEN
        RAISE EXCEPTION 'cancel_run refused: run % is already %', p_run_id, v_status
            USING ERRCODE = 'FF005', HINT = 'Only a running run can be cancelled.';
    END IF;
    PERFORM flowforge._cancel_run_items(p_org, p_run_id, p_now);
    PERFORM flowforge._fanout_run_cancelled(p_org, p_run_id, p_now);
    PERFORM flowforge._graph_finish(p_org, p_run_id, 'cancelled', p_reason, NULL, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_cancel_run(uuid, uuid, text, timestamptz) IS
  'Internal (graph hook): the run and its outstanding work item become cancelled (the holder''s token moves on). '
  'Errors: FF005 the run already finished.';

-- Retry goes on from the node the run stopped at, with a fresh attempt
-- budget; a run that broke one of its own bounds (max_steps, max_visits, no
-- matching edge) would break it again and is not retried.
CREATE OR REPLACE FUNCTION flowforge._graph_retry_run(p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run record;
    v_node flowforge.task;
    v_visit integer;
    v_item uuid;
BEGIN
    PERFORM flowforge._lock_run(p_org, p_run_id);
    SELECT g.status, g.reason, g.task, g.definition_id, g.state, w.name AS definition INTO v_run
    FROM flowforge.graph_run g JOIN flowforge.workflow w ON w.id = g.definition_id AND w.organization_id = g.organization_id
    WHERE g.organization_id = p_org AND g.run_id = p_run_id;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_run.status NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'retry_run refused: run % is %', p_run_id, v_run.status
            USING ERRCODE = 'FF005', HINT = 'Only a failed or cancelled run can be retried.';
    END IF;
    -- Only a failure carries the engine's reason; a cancelled run's reason is
    -- the canceller's own text, whatever it says.
    IF v_run.status = 'failed'
       AND (v_run.reason IN ('max_steps', 'max_visits') OR v_run.reason LIKE 'no edge from node %') THEN
        RAISE EXCEPTION 'retry_run refused: graph run % stopped on its own bound (%)', p_run_id, v_run.reason
            USING ERRCODE = 'FF005', HINT = 'It would stop the same way; start a new run (with a changed definition).';
    END IF;
    SELECT * INTO STRICT v_node FROM flowforge.task t
    WHERE t.organization_id = p_org AND t.workflow_id = v_run.definition_id AND t.key = v_run.task;
    v_visit := (SELECT v.visits FROM flowforge.graph_visit v
                WHERE v.organization_id = p_org AND v.run_id = p_run_id AND v.node = v_node.key);
    UPDATE flowforge.graph_run g
    SET status = 'running', reason = NULL, error = NULL, finished_at = NULL, updated_at = p_now
    WHERE g.organization_id = p_org AND g.run_id = p_run_id;
    PERFORM flowforge._record_run_reopened(p_org, p_run_id, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_retried', ARRAY[NULL::uuid], ARRAY[v_run.status::text],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('node', v_node.key, 'actor', session_user::text)], p_now);
    -- The same step and visit again (no new step is counted): a new work item for it.
    v_item := flowforge._enqueue_work(p_org, 'graph', p_run_id, v_node.id, v_node.key,
        jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visit),
        CASE WHEN v_node.spec ? 'map' THEN NULL
             ELSE flowforge._affinity_key(v_node.affinity, p_run_id, v_run.definition,
                                          jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visit))
        END,
        p_now);
    UPDATE flowforge.graph_step s SET work_item_id = v_item
    WHERE s.run_id = p_run_id AND s.step = (SELECT g.steps FROM flowforge.graph_run g
                                            WHERE g.organization_id = p_org AND g.run_id = p_run_id);
    -- A fanning node resumes its fan-out: the same visit, so the same generation.
    IF v_node.spec ? 'map' THEN
        PERFORM flowforge._graph_fan_out(p_org, p_run_id, v_node.id, v_item, v_visit,
            jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visit), p_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._graph_retry_run(uuid, uuid, timestamptz) IS
  'Internal (graph hook): a failed or cancelled graph run goes on from the node it stopped at with a new work item '
  '(a fresh attempt budget; the step and visit are not counted again; a fanning node resumes its fan-out, its '
  'succeeded elements kept). Errors: FF005 the run is not failed or '
  'cancelled, or it stopped on its own bound (max_steps, max_visits, no matching edge).';
