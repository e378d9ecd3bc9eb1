-- A DAG task with a map fans out when it becomes ready: the engine holds it
-- (running, under a lease that never expires) while its children run as work
-- items, and it completes with their outputs (10_substrate/65_fanout.sql).

-- The ready fanning tasks of a run fan out. Called by _tasks_ready first, in
-- the transaction that made them ready, so no worker ever sees one ready.
CREATE OR REPLACE FUNCTION flowforge._dag_fan_out(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_task record;
    v_error text;
    v_count integer := 0;
BEGIN
    FOR v_task IN
        SELECT tr.id, tr.task_id FROM flowforge.task_run tr
        WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org AND tr.state = 'ready' AND tr.fans_out
        ORDER BY tr.task_key  -- a stable order when several fan out at once
    LOOP
        -- A nested fan-out (an empty map completing at once released this
        -- one) may have taken it already.
        CONTINUE WHEN NOT flowforge._fanout_hold_task_run(p_org, v_task.id, p_now);
        v_count := v_count + 1;
        v_error := flowforge._fanout_begin(p_org, 'dag', p_run_id, v_task.task_id, v_task.id, NULL, 1,
                                           flowforge._task_input(p_org, p_run_id, v_task.task_id), p_now);
        IF v_error IS NOT NULL THEN
            PERFORM flowforge._dag_task_refused(p_org, v_task.id, v_error, p_now);
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
COMMENT ON FUNCTION flowforge._dag_fan_out(uuid, uuid, timestamptz) IS
  'Internal: every ready fanning task run of run p_run_id (organization p_org) is held by the engine (event fanned_out) and fans out over '
  'its input; one whose input cannot fan out fails for good with the reason. Returns how many fanned out.';

-- A task the engine could not run (its map found no array, or too many
-- elements) fails for good at once: retrying would find the same input.
CREATE OR REPLACE FUNCTION flowforge._dag_task_refused(p_org uuid, p_task_run_id uuid, p_error text,
                                                       p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_task record;
BEGIN
    UPDATE flowforge.task_run tr
    SET state = 'failed', error = p_error, finished_at = greatest(p_now, tr.started_at), lease_expires_at = NULL
    WHERE tr.id = p_task_run_id AND tr.organization_id = p_org AND tr.state = 'running'
    RETURNING tr.workflow_run_id, tr.task_id, tr.fencing_token, tr.attempt INTO STRICT v_task;
    PERFORM flowforge._append_events(p_org, v_task.workflow_run_id, 'failed', ARRAY[p_task_run_id],
        ARRAY['running'], ARRAY['failed'], ARRAY[v_task.fencing_token], ARRAY[v_task.attempt],
        ARRAY[jsonb_build_object('error', left(p_error, 1000), 'retryable', false)], p_now);
    PERFORM flowforge._on_task_failed_for_good('dag', p_org, v_task.workflow_run_id, p_task_run_id, v_task.task_id,
                                               p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._dag_task_refused(uuid, uuid, text, timestamptz) IS
  'Internal: a running task run of organization p_org the engine holds fails for good with p_error (event failed, retryable false); its '
  'dependents are skipped and the run settles.';
