-- Batched completion, for workers that finish many short tasks: one call,
-- one transaction, set-based statements, instead of one round trip each.
--
--   complete_many(task_run_ids, fencing_tokens, outputs) -> per task: outcome
--
-- Same rules as complete(); a write that complete() would refuse is reported
-- per task instead of aborting the batch.

CREATE OR REPLACE FUNCTION flowforge.complete_many(task_run_ids uuid[], fencing_tokens bigint[], outputs jsonb[] DEFAULT NULL)
RETURNS TABLE (task_run_id uuid, outcome text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_run record;
    v_released integer;
    v_done_ids uuid[];
    v_done_runs uuid[];
    v_done_tasks uuid[];
    v_too_large uuid[];
BEGIN
    IF complete_many.task_run_ids IS NULL OR complete_many.fencing_tokens IS NULL
       OR cardinality(complete_many.task_run_ids) <> cardinality(complete_many.fencing_tokens)
       OR (complete_many.outputs IS NOT NULL AND cardinality(complete_many.outputs) <> cardinality(complete_many.task_run_ids))
       OR cardinality(complete_many.task_run_ids) > 1000 THEN
        RAISE EXCEPTION 'task_run_ids, fencing_tokens and outputs must be parallel arrays of at most 1000 items'
            USING ERRCODE = 'FF003', HINT = 'Pass outputs => NULL when no task has an output.';
    END IF;
    -- An output over the limits is refused for that task only (outcome too_large),
    -- like complete() refuses it with FF009: the rest of the batch goes on.
    SELECT coalesce(array_agg(i.id), '{}') INTO v_too_large
    FROM unnest(complete_many.task_run_ids, complete_many.outputs) AS i(id, output)
    WHERE flowforge._payload_problem(i.output, 'task output') IS NOT NULL;

    -- Lock order: every run first (in id order, so two batches cannot deadlock), then tasks.
    PERFORM 1 FROM flowforge.workflow_run r
    WHERE r.id IN (SELECT tr.workflow_run_id FROM flowforge.task_run tr
                   WHERE tr.id = ANY (complete_many.task_run_ids) AND tr.organization_id = v_org)
      AND r.organization_id = v_org
    ORDER BY r.id
    FOR NO KEY UPDATE;

    WITH item AS (
        SELECT i.id, i.token, i.output
        FROM unnest(complete_many.task_run_ids, complete_many.fencing_tokens,
                    coalesce(complete_many.outputs, array_fill(NULL::jsonb, ARRAY[cardinality(complete_many.task_run_ids)])))
             AS i(id, token, output)
    ), done AS (
        UPDATE flowforge.task_run tr
        SET state = 'succeeded', output = item.output, finished_at = v_now, lease_expires_at = NULL, error = NULL
        FROM item
        WHERE tr.id = item.id AND tr.fencing_token = item.token AND tr.state = 'running' AND tr.organization_id = v_org
          AND tr.lease_owner IS DISTINCT FROM flowforge._fanout_holder()
          AND NOT item.id = ANY (v_too_large)
        RETURNING tr.id, tr.organization_id, tr.workflow_run_id, tr.task_id, tr.attempt, tr.fencing_token
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT d.organization_id, d.workflow_run_id, d.id, 'completed', 'running', 'succeeded', d.fencing_token, d.attempt, v_now
        FROM done d
    )
    SELECT coalesce(array_agg(d.id), '{}'), coalesce(array_agg(d.workflow_run_id), '{}'), coalesce(array_agg(d.task_id), '{}')
    INTO v_done_ids, v_done_runs, v_done_tasks
    FROM done d;

    -- Dependents: one decrement per completed upstream, in one statement (the
    -- set-based twin of _release_dependents; complete_many_matches_complete.sql
    -- keeps the two in step).
    WITH decrement AS (
        SELECT tr.id, count(*)::integer AS n
        FROM unnest(v_done_runs, v_done_tasks) AS c(workflow_run_id, task_id)
        JOIN flowforge.task_dependency td ON td.depends_on_task_id = c.task_id AND td.organization_id = v_org
        JOIN flowforge.task_run tr ON tr.workflow_run_id = c.workflow_run_id AND tr.task_id = td.task_id
                                  AND tr.organization_id = v_org
        WHERE tr.state = 'pending'
        GROUP BY tr.id
    ), released AS (
        UPDATE flowforge.task_run tr
        SET remaining_deps = tr.remaining_deps - d.n,
            state = CASE WHEN tr.remaining_deps = d.n THEN 'ready' ELSE tr.state END,
            ready_at = CASE WHEN tr.remaining_deps = d.n THEN v_now ELSE tr.ready_at END
        FROM decrement d
        WHERE tr.organization_id = v_org AND tr.id = d.id
        RETURNING tr.id, tr.organization_id, tr.workflow_run_id, tr.state, tr.fencing_token, tr.attempt
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT r.organization_id, r.workflow_run_id, r.id, 'released', 'pending', 'ready', r.fencing_token, r.attempt, v_now
        FROM released r WHERE r.state = 'ready'
    )
    SELECT count(*) INTO v_released FROM released r WHERE r.state = 'ready';

    IF v_released > 0 THEN
        FOR v_run IN SELECT DISTINCT c.workflow_run_id FROM unnest(v_done_runs) AS c(workflow_run_id)
                     ORDER BY c.workflow_run_id LOOP
            PERFORM flowforge._tasks_ready(v_org, v_run.workflow_run_id, v_now);
        END LOOP;
    END IF;

    -- Settle every run of the batch in one statement: the set-based twin of
    -- _settle_run (its counters, its run_succeeded/run_failed event, the
    -- directory's first-write-wins ended_at), instead of one call per run —
    -- measured, the per-run call was two thirds of a batch's server time
    -- when every task is its run's last (docs/execution-model.md). Every run
    -- is already locked (above), so the order of the row updates is free.
    WITH finished AS (
        SELECT c.workflow_run_id AS id, count(*)::integer AS n
        FROM unnest(v_done_runs) AS c(workflow_run_id)
        GROUP BY c.workflow_run_id
    ), settled AS (
        UPDATE flowforge.workflow_run r
        SET tasks_remaining = r.tasks_remaining - f.n,
            state = CASE WHEN r.tasks_remaining = f.n
                         THEN CASE WHEN r.tasks_failed > 0 THEN 'failed' ELSE 'succeeded' END
                         ELSE r.state END,
            finished_at = CASE WHEN r.tasks_remaining = f.n THEN v_now END
        FROM finished f
        -- A primary-key probe per run, whatever the statistics say: r.id = ANY gives the
        -- index its condition, and the state test is written so that no index on
        -- state can serve it (with few rows analysed, a bitmap AND of the tenant
        -- and state indexes looked cheaper and read every running run). A task
        -- that was running belongs to a running run; the test stays as a guard. The
        -- organization completes the primary key (id, organization_id): one shard under Citus.
        WHERE r.id = ANY (v_done_runs) AND r.organization_id = v_org AND r.id = f.id AND (r.state = 'running') IS TRUE
        RETURNING r.id, r.state, r.organization_id, r.tasks_failed
    ), ended AS (
        -- First write wins by coalesce (as in _record_run_ended: no "ended_at IS NULL" for a plan to walk).
        UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest(v_now, e.created_at))
        FROM settled s
        WHERE s.state <> 'running' AND e.organization_id = s.organization_id AND e.run_id = s.id
    )
    -- The run events are the statement itself (a data-modifying CTE runs whether or not it is read).
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind, from_state, to_state, detail,
                                          created_at)
    SELECT s.organization_id, s.id, 'run_' || s.state, 'running', s.state,
           jsonb_build_object('tasks_failed', s.tasks_failed), v_now
    FROM settled s WHERE s.state <> 'running'
    ORDER BY s.id;

    RETURN QUERY
    SELECT i.id,
           CASE WHEN i.id = ANY (v_done_ids) THEN 'completed'
                WHEN tr.id IS NULL THEN 'not_found'
                WHEN tr.fencing_token = i.token AND tr.state = 'running' AND i.id = ANY (v_too_large) THEN 'too_large'
                WHEN tr.fencing_token <> i.token THEN 'stale'
                ELSE 'not_running' END
    FROM unnest(complete_many.task_run_ids, complete_many.fencing_tokens) WITH ORDINALITY AS i(id, token, n)
    LEFT JOIN flowforge.task_run tr ON tr.id = i.id AND tr.organization_id = v_org
    ORDER BY i.n;
END;
$$;
COMMENT ON FUNCTION flowforge.complete_many(uuid[], bigint[], jsonb[]) IS
  'complete_many(task_run_ids uuid[], fencing_tokens bigint[], outputs jsonb[] default null) -> setof (task_run_id, '
  'outcome). complete() for up to 1000 tasks in one transaction, with set-based statements: each running task held '
  'under its token succeeds with its output (event completed), dependents are released, runs settle. Per task the '
  'outcome is completed, stale (token moved on: drop the result), not_running (already completed/failed), '
  'not_found (no such task run in your organization) or too_large (the output is over max_payload_bytes or nested '
  'deeper than max_json_depth: the task is still running — fail it with retryable => false, as for complete''s '
  'FF009); refusals do not abort the batch. Errors: FF003 arrays of different lengths or over 1000 items; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.complete_many(uuid[],bigint[],jsonb[])', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');
