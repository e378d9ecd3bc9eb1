-- The graph engine's step: a run holds one position; entering a node is a
-- step. All of it happens in the transaction that completed the previous
-- node's work item, under the run's directory lock, and costs the same at
-- step 10 as at step 10,000: the walk is rows (graph_step, one per step), the
-- visit counts one counter per node (graph_visit), never a rewritten array.

-- The run ends (succeeded at a final node, failed by its own rules or a node's
-- failure, cancelled): its own row, its event, the directory.
CREATE OR REPLACE FUNCTION flowforge._graph_finish(p_org uuid, p_run_id uuid, p_status text, p_reason text,
                                                   p_error text, p_now timestamptz, p_state jsonb DEFAULT NULL,
                                                   p_run_written boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- One statement (every graph run ends here): the run, its directory row's end and its
    -- event. Fast path, measured (docs/execution-model.md, "the graph step"): the event row
    -- and the first-write-wins end inline, as _append_events and _record_run_ended write
    -- them (the directory-end plan test holds this copy too). p_run_written: the step into
    -- a final node already wrote the run's end with the step (_graph_enter), so the row is
    -- not written a second time; the directory and the event follow as for any end.
    WITH ended_run AS (
        UPDATE flowforge.graph_run g
        SET status = p_status, reason = p_reason, error = p_error, finished_at = greatest(p_now, g.started_at),
            state = coalesce(p_state, g.state), updated_at = p_now
        WHERE g.organization_id = p_org AND g.run_id = p_run_id AND g.status = 'running' AND NOT p_run_written
        RETURNING g.run_id
    ), ending AS (
        SELECT g.run_id FROM ended_run g
        UNION ALL
        SELECT p_run_id WHERE p_run_written
    ), ended AS (
        UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest(p_now, e.created_at))
        FROM ending g
        WHERE e.organization_id = p_org AND e.run_id = g.run_id
    )
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind, from_state, to_state, detail, created_at)
    SELECT p_org, g.run_id, 'run_' || p_status, 'running', p_status,
           jsonb_strip_nulls(jsonb_build_object('reason', p_reason, 'error', left(p_error, 1000))), p_now
    FROM ending g;
END;
$$;
COMMENT ON FUNCTION flowforge._graph_finish(uuid, uuid, text, text, text, timestamptz, jsonb, boolean) IS
  'Internal: a running graph run ends with p_status (succeeded, failed, cancelled), reason and error, and with '
  'p_state as its data when given (the completed node''s output merged by _graph_item_succeeded); event '
  'run_<status>; the directory row''s ended_at. With p_run_written the caller has already written the run''s '
  'end into graph_run in the same transaction (the step into a final node): only the directory and the event.';

-- Enter a node: count the step (max_steps) and the visit (max_visits), append
-- it to the walk, and either end the run (a final node) or queue the node's work.
CREATE OR REPLACE FUNCTION flowforge._graph_enter(p_org uuid, p_run_id uuid, p_node_id uuid, p_now timestamptz,
                                                  p_state jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_node flowforge.task;
    v_visits integer;
    v_run record;
    v_item uuid;
    v_end_reason text;        -- a final node's: written with the step and carried by the run's end event
BEGIN
    SELECT * INTO STRICT v_node FROM flowforge.task t WHERE t.id = p_node_id AND t.organization_id = p_org;
    IF v_node.is_final THEN
        v_end_reason := format('reached final node "%s"', v_node.key);
    END IF;
    SELECT v.visits INTO v_visits FROM flowforge.graph_visit v
    WHERE v.organization_id = p_org AND v.run_id = p_run_id AND v.node = v_node.key;
    IF v_node.max_visits IS NOT NULL AND coalesce(v_visits, 0) >= v_node.max_visits THEN
        PERFORM flowforge._graph_finish(p_org, p_run_id, 'failed', 'max_visits',
            format('node "%s" would be entered a %sth time (max_visits %s)', v_node.key, v_visits + 1, v_node.max_visits),
            p_now, p_state);
        RETURN;
    END IF;
    -- The step and the data the completed node merged (p_state) in one write of the run's row;
    -- at a final node the run's end too (_graph_finish then writes the directory and the event).
    UPDATE flowforge.graph_run g
    SET steps = g.steps + 1, task = v_node.key, state = coalesce(p_state, g.state), updated_at = p_now,
        status = CASE WHEN v_node.is_final THEN 'succeeded' ELSE g.status END,
        reason = CASE WHEN v_node.is_final THEN v_end_reason ELSE g.reason END,
        finished_at = CASE WHEN v_node.is_final THEN greatest(p_now, g.started_at) ELSE g.finished_at END
    FROM flowforge.workflow w
    WHERE g.organization_id = p_org AND g.run_id = p_run_id AND g.status = 'running' AND g.steps < g.max_steps
      AND w.id = g.definition_id AND w.organization_id = p_org
    RETURNING g.steps, g.state, w.name AS definition
    INTO v_run;
    IF NOT FOUND THEN
        PERFORM flowforge._graph_finish(p_org, p_run_id, 'failed', 'max_steps',
            format('entering node "%s" would be step %s, over max_steps %s', v_node.key,
                   (SELECT g.steps + 1 FROM flowforge.graph_run g WHERE g.organization_id = p_org AND g.run_id = p_run_id),
                   (SELECT g.max_steps FROM flowforge.graph_run g WHERE g.organization_id = p_org AND g.run_id = p_run_id)),
            p_now, p_state);
        RETURN;
    END IF;
    INSERT INTO flowforge.graph_visit AS v (organization_id, run_id, node, visits)
    VALUES (p_org, p_run_id, v_node.key, 1)
    ON CONFLICT ON CONSTRAINT graph_visit_pkey DO UPDATE SET visits = v.visits + 1
    RETURNING v.visits INTO v_visits;
    IF NOT v_node.is_final THEN
        -- A fanning node's own item is held by the engine; its children carry affinity.
        v_item := flowforge._enqueue_work(p_org, 'graph', p_run_id, v_node.id, v_node.key,
            jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visits),
            CASE WHEN v_node.spec ? 'map' THEN NULL
                 ELSE flowforge._affinity_key(v_node.affinity, p_run_id, v_run.definition,
                                              jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visits))
            END,
            p_now);
    END IF;
    INSERT INTO flowforge.graph_step (organization_id, run_id, step, node, visit, work_item_id, entered_at)
    VALUES (p_org, p_run_id, v_run.steps, v_node.key, v_visits, v_item, p_now);
    IF v_node.is_final THEN
        PERFORM flowforge._graph_finish(p_org, p_run_id, 'succeeded', v_end_reason, NULL, p_now,
                                        p_run_written => true);
    ELSIF v_node.spec ? 'map' THEN
        -- After the step is recorded: an empty map completes at once and enters the next node.
        PERFORM flowforge._graph_fan_out(p_org, p_run_id, v_node.id, v_item, v_visits,
            jsonb_build_object('state', v_run.state, 'node', v_node.key, 'visit', v_visits), p_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._graph_enter(uuid, uuid, uuid, timestamptz, jsonb) IS
  'Internal: run p_run_id enters node p_node_id, its data becoming p_state when given (the output of the node it '
  'leaves, merged) — fails with reason max_visits or max_steps when that bound would be '
  'crossed; otherwise steps + 1, the node''s visit count + 1, a graph_step row, and the node''s work item '
  '(payload {"state", "node", "visit"}; a fanning node''s is held by the engine and fans out over that input) or, '
  'for a final node, the run''s success.';

-- A node's work item completed: merge its output into the run's data, take
-- the first edge whose condition holds (or that has none), enter its target.
CREATE OR REPLACE FUNCTION flowforge._graph_item_succeeded(p_org uuid, p_run_id uuid, p_work_item_id uuid,
                                                           p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
    v_step record;
BEGIN
    SELECT w.organization_id, w.task_id, w.task_name, w.output INTO STRICT v_item
    FROM flowforge.work_item w WHERE w.id = p_work_item_id AND w.organization_id = p_org;
    -- One read for the merged data and the edge taken; the run's row is written once, by the
    -- step (_graph_enter) or the end (_graph_finish), with the merged data. The caller holds the
    -- run's directory lock (complete_work, the fan-out's end), so the row read here cannot change
    -- before that write. An object's top-level keys replace the data's; any other value is kept
    -- under the node's key. An edge whose predicate is unknown or cannot be evaluated is not taken.
    -- OFFSET 0 keeps each lateral a single evaluation: pulled up, the merge and the document
    -- would be rebuilt for every edge tried.
    SELECT m.state,
           (SELECT e.to_task_id FROM flowforge.graph_edge e
            WHERE e.organization_id = v_item.organization_id AND e.from_task_id = v_item.task_id
              AND (e.condition IS NULL OR jsonb_path_match(d.doc, e.condition, silent => true) IS TRUE)
            ORDER BY e.position
            LIMIT 1) AS next
    INTO v_step
    FROM flowforge.graph_run g
    CROSS JOIN LATERAL (SELECT CASE WHEN v_item.output IS NULL THEN g.state
                                    WHEN jsonb_typeof(v_item.output) = 'object' THEN g.state || v_item.output
                                    ELSE g.state || jsonb_build_object(v_item.task_name, v_item.output) END AS state
                        OFFSET 0) m
    CROSS JOIN LATERAL (SELECT jsonb_build_object('output', coalesce(v_item.output, 'null'), 'state', m.state,
                                                  'visits', (SELECT coalesce(jsonb_object_agg(v.node, v.visits), '{}')
                                                             FROM flowforge.graph_visit v
                                                             WHERE v.organization_id = v_item.organization_id
                                                               AND v.run_id = p_run_id)) AS doc
                        OFFSET 0) d
    WHERE g.organization_id = v_item.organization_id AND g.run_id = p_run_id AND g.status = 'running';
    IF NOT FOUND THEN
        RETURN;  -- the run already ended (cancelled while the item ran)
    END IF;
    IF v_step.next IS NULL THEN
        PERFORM flowforge._graph_finish(v_item.organization_id, p_run_id, 'failed',
            format('no edge from node "%s" matched', v_item.task_name), NULL, p_now, v_step.state);
        RETURN;
    END IF;
    PERFORM flowforge._graph_enter(v_item.organization_id, p_run_id, v_step.next, p_now, v_step.state);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_item_succeeded(uuid, uuid, uuid, timestamptz) IS
  'Internal (graph hook; every statement filters on organization p_org): merges the completed item''s output into the run''s data (an object''s keys replace the '
  'data''s; another value goes under the node''s key), evaluates the node''s edges in order with jsonb_path_match '
  'over {"output", "state", "visits"} and enters the first that holds; no edge: the run fails naming the node.';

CREATE OR REPLACE FUNCTION flowforge._graph_item_failed(p_org uuid, p_run_id uuid, p_work_item_id uuid,
                                                        p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
BEGIN
    SELECT w.task_name, w.error, w.retry_count INTO STRICT v_item
    FROM flowforge.work_item w WHERE w.id = p_work_item_id AND w.organization_id = p_org;
    PERFORM flowforge._graph_finish(p_org, p_run_id, 'failed',
        format('node "%s" failed after %s attempt(s)', v_item.task_name, v_item.retry_count + 1), v_item.error, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_item_failed(uuid, uuid, uuid, timestamptz) IS
  'Internal (graph hook): a node''s work item (organization p_org) failed for good — the run fails with the item''s '
  'error.';

-- A fanning node fans out over its input (the visit is the checkpoint's
-- generation: a node entered again fans out afresh; a retry of the same
-- visit resumes). One that cannot fan out fails for good, and the run with it.
CREATE OR REPLACE FUNCTION flowforge._graph_fan_out(p_org uuid, p_run_id uuid, p_node_id uuid, p_item_id uuid,
                                                    p_visit integer, p_input jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_error text;
    v_item record;
BEGIN
    PERFORM flowforge._fanout_hold_work_item(p_org, p_item_id, p_now);
    v_error := flowforge._fanout_begin(p_org, 'graph', p_run_id, p_node_id, NULL, p_item_id, p_visit, p_input, p_now);
    IF v_error IS NULL THEN
        RETURN;
    END IF;
    UPDATE flowforge.work_item w
    SET status = 'failed', error = v_error, completed_at = greatest(p_now, w.dispatched_at), lease_expires_at = NULL
    WHERE w.id = p_item_id AND w.organization_id = p_org
    RETURNING w.fencing_token, w.retry_count INTO STRICT v_item;
    PERFORM flowforge._append_events(p_org, p_run_id, 'failed', ARRAY[NULL::uuid], ARRAY['dispatched'], ARRAY['failed'],
        ARRAY[v_item.fencing_token], ARRAY[v_item.retry_count + 1],
        ARRAY[jsonb_build_object('error', left(v_error, 1000), 'retryable', false)], p_now, ARRAY[p_item_id]);
    PERFORM flowforge._on_task_failed_for_good('graph', p_org, p_run_id, p_item_id, p_node_id, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_fan_out(uuid, uuid, uuid, uuid, integer, jsonb, timestamptz) IS
  'Internal: the fanning node''s item p_item_id is held by the engine and the node fans out over p_input (checkpoint '
  'generation p_visit); an input that cannot fan out fails the item for good (retryable false) and so the run.';
