

-- The DAG's run verbs, reached through the hooks (10_substrate/25_engine_hooks.sql):
-- start (one workflow_run, one task_run per task), cancel, retry.
--
-- A DAG run is running from the moment it starts (its root tasks are ready at
-- once); pending is the state of a run admitted but not yet started.

CREATE OR REPLACE FUNCTION flowforge._dag_start_run(p_org uuid, p_run_id uuid, p_workflow_id uuid, p_spec jsonb,
                                                    p_input jsonb, p_idempotency_key text, p_now timestamptz,
                                                    p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_ids uuid[];
    v_states text[];
BEGIN
    INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, idempotency_key,
                                        tasks_total, tasks_remaining, created_at, created_by, started_at)
    VALUES (p_run_id, p_org, p_workflow_id, 'running', p_input, p_idempotency_key,
            jsonb_array_length(p_spec -> 'tasks'), jsonb_array_length(p_spec -> 'tasks'), p_now, p_created_by, p_now);
    PERFORM flowforge._record_run(p_org, p_run_id, 'dag', p_workflow_id, p_now, p_created_by => p_created_by);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_started', ARRAY[NULL::uuid], ARRAY[NULL::text],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('workflow_id', p_workflow_id, 'actor', session_user::text)], p_now);

    -- A task's affinity path is evaluated against {"run": <run input>} when the run starts.
    WITH created AS (
        INSERT INTO flowforge.task_run (organization_id, workflow_run_id, task_id, task_key, queue, priority, state,
                                        max_attempts, timeout, ready_at, remaining_deps, worker_params, affinity_key,
                                        affinity_policy, fans_out, flow_lane, created_at)
        SELECT p_org, p_run_id, t.id, t.key, t.queue, t.priority,
               CASE WHEN t.dependency_count = 0 THEN 'ready' ELSE 'pending' END,
               t.max_attempts, t.timeout,
               CASE WHEN t.dependency_count = 0 THEN p_now END,
               t.dependency_count, t.worker_params, a.key, CASE WHEN a.key IS NOT NULL THEN t.affinity_policy END,
               coalesce(t.spec ? 'map', false),
               -- Flow control's keys, against the same input as affinity (a fanning task's children carry them).
               CASE WHEN t.flow IS NOT NULL AND NOT coalesce(t.spec ? 'map', false)
                    THEN flowforge._flow_lane(p_org, t.flow, jsonb_build_object('run', p_input), p_now) END,
               p_now
        FROM flowforge.task t
        CROSS JOIN LATERAL (SELECT flowforge._affinity_key(t.affinity, p_run_id, p_spec ->> 'name',
                                                            jsonb_build_object('run', p_input)) AS key) a
        WHERE t.organization_id = p_org AND t.workflow_id = p_workflow_id
        RETURNING id, state
    )
    SELECT array_agg(c.id), array_agg(c.state::text) INTO v_ids, v_states FROM created c;
    PERFORM flowforge._append_events(p_org, p_run_id, 'created', v_ids,
        array_fill(NULL::text, ARRAY[cardinality(v_ids)]), v_states,
        array_fill(0::bigint, ARRAY[cardinality(v_ids)]), array_fill(1, ARRAY[cardinality(v_ids)]),
        array_fill(NULL::jsonb, ARRAY[cardinality(v_ids)]), p_now);
    IF 'ready' = ANY (v_states) THEN
        PERFORM flowforge._tasks_ready(p_org, p_run_id, p_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._dag_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz, text) IS
  'Internal (dag hook): one running workflow_run of p_created_by and one task_run per task of the definition; tasks without '
  'dependencies are ready at once (dispatched or announced). Events: run_started, created per task.';

-- start_runs' DAG path: _dag_start_run for many runs at once, set-based —
-- every run's workflow_run, directory row and run_started event, every task
-- run and its created event, each in one statement. The rows are exactly
-- _dag_start_run's (start_runs_matches_start_run.sql keeps the two in step);
-- the history rows are inline here, a measured fast path (a call per run was
-- what bulk enqueue cost, benchmarks/bench_enqueue.py).
CREATE OR REPLACE FUNCTION flowforge._dag_start_runs(p_org uuid, p_run_ids uuid[], p_workflow_id uuid, p_spec jsonb,
                                                     p_inputs jsonb[], p_idempotency_keys text[], p_now timestamptz,
                                                     p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_tasks constant integer := jsonb_array_length(p_spec -> 'tasks');
    v_ready_runs uuid[];
    v_fans boolean;
    v_run uuid;
BEGIN
    INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, idempotency_key,
                                        tasks_total, tasks_remaining, created_at, created_by, started_at)
    SELECT r.id, p_org, p_workflow_id, 'running', r.input, r.key, v_tasks, v_tasks, p_now, p_created_by, p_now
    FROM unnest(p_run_ids, p_inputs, p_idempotency_keys) AS r(id, input, key);
    -- The directory rows: fresh run ids, so _record_run's merge has nothing to merge.
    INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, created_at, created_by)
    SELECT p_org, r.id, 'dag', p_workflow_id, p_now, p_created_by
    FROM unnest(p_run_ids) AS r(id);
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind, to_state, detail, created_at)
    SELECT p_org, r.id, 'run_started', 'running', jsonb_build_object('workflow_id', p_workflow_id, 'actor', session_user::text),
           p_now
    FROM unnest(p_run_ids) WITH ORDINALITY AS r(id, n)
    ORDER BY r.n;

    WITH created AS (
        INSERT INTO flowforge.task_run (organization_id, workflow_run_id, task_id, task_key, queue, priority, state,
                                        max_attempts, timeout, ready_at, remaining_deps, worker_params, affinity_key,
                                        affinity_policy, fans_out, flow_lane, created_at)
        SELECT p_org, r.id, t.id, t.key, t.queue, t.priority,
               CASE WHEN t.dependency_count = 0 THEN 'ready' ELSE 'pending' END,
               t.max_attempts, t.timeout,
               CASE WHEN t.dependency_count = 0 THEN p_now END,
               t.dependency_count, t.worker_params, a.key, CASE WHEN a.key IS NOT NULL THEN t.affinity_policy END,
               coalesce(t.spec ? 'map', false),
               -- Flow control's keys, as _dag_start_run evaluates them.
               CASE WHEN t.flow IS NOT NULL AND NOT coalesce(t.spec ? 'map', false)
                    THEN flowforge._flow_lane(p_org, t.flow, jsonb_build_object('run', r.input), p_now) END,
               p_now
        FROM unnest(p_run_ids, p_inputs) WITH ORDINALITY AS r(id, input, n)
        CROSS JOIN flowforge.task t
        CROSS JOIN LATERAL (SELECT CASE WHEN t.affinity IS NOT NULL
                                        THEN flowforge._affinity_key(t.affinity, r.id, p_spec ->> 'name',
                                                                     jsonb_build_object('run', r.input)) END AS key) a
        WHERE t.organization_id = p_org AND t.workflow_id = p_workflow_id
        ORDER BY r.n
        RETURNING id, workflow_run_id, state, fans_out
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, to_state,
                                              fencing_token, attempt, created_at)
        SELECT p_org, c.workflow_run_id, c.id, 'created', c.state, 0, 1, p_now
        FROM created c
    )
    SELECT array_agg(DISTINCT c.workflow_run_id) FILTER (WHERE c.state = 'ready'),
           coalesce(bool_or(c.fans_out AND c.state = 'ready'), false)
    INTO v_ready_runs, v_fans
    FROM created c;
    IF v_ready_runs IS NULL THEN
        RETURN;
    END IF;
    -- What _tasks_ready does per run: with no push queue and nothing fanning out
    -- that is one NOTIFY (identical notifications fold into one per transaction).
    IF NOT v_fans AND NOT EXISTS (SELECT 1 FROM flowforge.queue q WHERE q.organization_id = p_org AND q.exchange IS NOT NULL) THEN
        PERFORM flowforge._notify_ready();
        RETURN;
    END IF;
    FOREACH v_run IN ARRAY v_ready_runs LOOP
        PERFORM flowforge._tasks_ready(p_org, v_run, p_now);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION flowforge._dag_start_runs(uuid, uuid[], uuid, jsonb, jsonb[], text[], timestamptz, text) IS
  'Internal (dag, start_runs): _dag_start_run for every run of the parallel arrays p_run_ids / p_inputs / '
  'p_idempotency_keys at once — workflow_run and directory row of p_created_by, run_started, one task_run per task '
  '(created events, flow-control lanes), ready ones dispatched or announced — set-based.';

CREATE OR REPLACE FUNCTION flowforge._dag_cancel_run(p_org uuid, p_run_id uuid, p_reason text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_state text;
    v_ids uuid[];
    v_from text[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    SELECT r.state INTO v_state
    FROM flowforge.workflow_run r
    WHERE r.id = p_run_id AND r.organization_id = p_org
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_state NOT IN ('pending', 'running') THEN
        RAISE EXCEPTION 'cancel_run refused: run % is already %', p_run_id, v_state
            USING ERRCODE = 'FF005', HINT = 'Only a pending or running run can be cancelled.';
    END IF;

    -- Running holders lose their lease: the fencing token moves on, so their next write is refused.
    WITH unfinished AS MATERIALIZED (
        SELECT tr.id, tr.state AS from_state
        FROM flowforge.task_run tr
        WHERE tr.organization_id = p_org AND tr.workflow_run_id = p_run_id AND tr.state IN ('pending', 'ready', 'running')
        FOR UPDATE
    ), cancelled AS (
        UPDATE flowforge.task_run tr
        -- greatest(): a claim that started after this transaction did (an
        -- application transaction opened before the claim, say) has a later
        -- started_at than our now(); finished_at must not precede it
        -- (taskrun_finished_after_started).
        SET state = 'cancelled', finished_at = greatest(p_now, tr.started_at), lease_expires_at = NULL,
            fencing_token = CASE WHEN u.from_state = 'running' THEN tr.fencing_token + 1 ELSE tr.fencing_token END
        FROM unfinished u
        WHERE tr.organization_id = p_org AND tr.id = u.id
        RETURNING tr.id, u.from_state, tr.fencing_token, tr.attempt
    )
    SELECT array_agg(c.id), array_agg(c.from_state::text), array_agg(c.fencing_token), array_agg(c.attempt)
    INTO v_ids, v_from, v_tokens, v_attempts
    FROM cancelled c;
    IF v_ids IS NOT NULL THEN
        PERFORM flowforge._append_events(p_org, p_run_id, 'cancelled', v_ids, v_from,
            array_fill('cancelled'::text, ARRAY[cardinality(v_ids)]), v_tokens, v_attempts,
            array_fill(NULL::jsonb, ARRAY[cardinality(v_ids)]), p_now);
    END IF;

    -- Fan-out children are work items: cancelled too, their holders refused (FF004).
    PERFORM flowforge._cancel_run_items(p_org, p_run_id, p_now);
    PERFORM flowforge._fanout_run_cancelled(p_org, p_run_id, p_now);

    UPDATE flowforge.workflow_run r
    SET state = 'cancelled', finished_at = p_now, tasks_remaining = 0, reason = p_reason
    WHERE r.id = p_run_id AND r.organization_id = p_org;
    PERFORM flowforge._record_run_ended(p_org, p_run_id, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_cancelled', ARRAY[NULL::uuid], ARRAY[v_state],
        ARRAY['cancelled'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('reason', p_reason, 'actor', session_user::text)], p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._dag_cancel_run(uuid, uuid, text, timestamptz) IS
  'Internal (dag hook): the run, every unfinished task run and every open fan-out child become cancelled; running '
  'tasks and dispatched children get a new fencing token. Events: cancelled per task and child, run_cancelled. '
  'Errors: FF005 the run already finished.';

CREATE OR REPLACE FUNCTION flowforge._dag_retry_run(p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_state text;
    v_ids uuid[];
    v_from text[];
    v_to text[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    SELECT r.state INTO v_state
    FROM flowforge.workflow_run r
    WHERE r.id = p_run_id AND r.organization_id = p_org
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    IF v_state NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'retry_run refused: run % is %', p_run_id, v_state
            USING ERRCODE = 'FF005', HINT = 'Only a failed or cancelled run can be retried.';
    END IF;

    -- Every task that did not succeed goes again with a fresh attempt budget.
    -- It waits on its upstream tasks that did not succeed either.
    WITH again AS MATERIALIZED (
        SELECT tr.id, tr.task_id, tr.state AS from_state,
               (SELECT count(*) FROM flowforge.task_dependency td
                JOIN flowforge.task_run up ON up.workflow_run_id = tr.workflow_run_id AND up.task_id = td.depends_on_task_id
                                          AND up.organization_id = p_org
                WHERE td.organization_id = p_org AND td.task_id = tr.task_id AND up.state <> 'succeeded')::integer AS waiting_on,
               t.max_attempts AS budget
        FROM flowforge.task_run tr
        JOIN flowforge.task t ON t.id = tr.task_id AND t.organization_id = p_org
        WHERE tr.organization_id = p_org AND tr.workflow_run_id = p_run_id AND tr.state IN ('failed', 'cancelled', 'skipped')
        FOR UPDATE OF tr
    ), reset AS (
        UPDATE flowforge.task_run tr
        SET state = CASE WHEN a.waiting_on = 0 THEN 'ready' ELSE 'pending' END,
            remaining_deps = a.waiting_on,
            ready_at = CASE WHEN a.waiting_on = 0 THEN p_now END,
            attempt = tr.attempt + 1,
            max_attempts = tr.attempt + a.budget,
            finished_at = NULL, error = NULL, output = NULL
        FROM again a
        WHERE tr.organization_id = p_org AND tr.id = a.id
        RETURNING tr.id, a.from_state, tr.state, tr.fencing_token, tr.attempt
    )
    SELECT array_agg(r.id), array_agg(r.from_state::text), array_agg(r.state::text), array_agg(r.fencing_token),
           array_agg(r.attempt)
    INTO v_ids, v_from, v_to, v_tokens, v_attempts
    FROM reset r;
    IF v_ids IS NOT NULL THEN
        PERFORM flowforge._append_events(p_org, p_run_id, 'retried', v_ids, v_from, v_to, v_tokens, v_attempts,
            array_fill(NULL::jsonb, ARRAY[cardinality(v_ids)]), p_now);
    END IF;

    UPDATE flowforge.workflow_run r
    SET state = 'running', finished_at = NULL, tasks_remaining = coalesce(cardinality(v_ids), 0), tasks_failed = 0,
        reason = NULL
    WHERE r.id = p_run_id AND r.organization_id = p_org;
    PERFORM flowforge._record_run_reopened(p_org, p_run_id, p_now);
    PERFORM flowforge._append_events(p_org, p_run_id, 'run_retried', ARRAY[NULL::uuid], ARRAY[v_state],
        ARRAY['running'], ARRAY[NULL::bigint], ARRAY[NULL::integer],
        ARRAY[jsonb_build_object('tasks', coalesce(cardinality(v_ids), 0), 'actor', session_user::text)], p_now);
    IF 'ready' = ANY (v_to) THEN
        PERFORM flowforge._tasks_ready(p_org, p_run_id, p_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._dag_retry_run(uuid, uuid, timestamptz) IS
  'Internal (dag hook): every failed, cancelled or skipped task run returns to ready (or pending while an upstream '
  'task has not succeeded) with attempt + 1 and a fresh budget; succeeded tasks keep their output. Events: retried '
  'per task, run_retried. Errors: FF005 the run is not failed or cancelled.';
