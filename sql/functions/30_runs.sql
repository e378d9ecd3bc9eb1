-- Runs: start, cancel, retry, and read a run's history.
--
--   start_run(workflow, input, idempotency_key) -> run id
--   cancel_run(run_id, reason)
--   retry_run(run_id)
--   run_events(run_id) -> the run's history, oldest first
--
-- A DAG run is running from the moment it starts (its root tasks are ready at
-- once); pending is the state of a run admitted but not yet started.

CREATE OR REPLACE FUNCTION flowforge.start_run(workflow text, input jsonb DEFAULT '{}', idempotency_key text DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
-- Generic plans: every statement here is a key lookup, and re-planning per call
-- (custom plans win on estimates for array and LIMIT parameters) costs more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_input constant jsonb := coalesce(start_run.input, '{}');
    v_workflow record;
    v_run_id uuid := gen_random_uuid();
    v_existing record;
    v_hash text;
    v_ready integer;
BEGIN
    IF jsonb_typeof(v_input) <> 'object' THEN
        RAISE EXCEPTION 'run input must be a JSON object, got %', jsonb_typeof(v_input)
            USING ERRCODE = 'FF003', HINT = 'Wrap the value: {"value": ...}.';
    END IF;
    PERFORM flowforge._check_size(v_input, 'run input');
    IF start_run.idempotency_key IS NOT NULL AND length(start_run.idempotency_key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'idempotency key must be 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'Use a short stable key, such as a request id.';
    END IF;

    SELECT w.id, w.name, w.spec INTO v_workflow
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org AND w.name = start_run.workflow
    ORDER BY w.version DESC
    LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'workflow % not found', coalesce(quote_literal(start_run.workflow), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'Define it first with flowforge.define_workflow(spec).';
    END IF;

    IF start_run.idempotency_key IS NOT NULL THEN
        -- Claim the key first: a concurrent start with the same key waits here
        -- for ours to commit, then finds our run instead of making a second.
        v_hash := md5(v_workflow.name || '/' || v_input::text);
        INSERT INTO flowforge.idempotency_key (organization_id, key, workflow_run_id, request_hash, created_at)
        VALUES (v_org, start_run.idempotency_key, v_run_id, v_hash, v_now)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            SELECT k.workflow_run_id, k.request_hash INTO v_existing
            FROM flowforge.idempotency_key k
            WHERE k.organization_id = v_org AND k.key = start_run.idempotency_key;
            IF v_existing.request_hash <> v_hash THEN
                RAISE EXCEPTION 'idempotency key % was already used for a different workflow or input (run %)',
                    quote_literal(start_run.idempotency_key), v_existing.workflow_run_id
                    USING ERRCODE = 'FF006', HINT = 'Use a new key for a different request.';
            END IF;
            RETURN v_existing.workflow_run_id;
        END IF;
    END IF;

    INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, idempotency_key,
                                        tasks_total, tasks_remaining, created_at, started_at)
    VALUES (v_run_id, v_org, v_workflow.id, 'running', v_input, start_run.idempotency_key,
            jsonb_array_length(v_workflow.spec -> 'tasks'), jsonb_array_length(v_workflow.spec -> 'tasks'), v_now, v_now);
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, detail, created_at)
    VALUES (v_org, v_run_id, NULL, 'run_started', NULL, 'running',
            jsonb_build_object('workflow_id', v_workflow.id, 'actor', session_user::text), v_now);
    PERFORM flowforge._audit(v_org, 'start', 'workflow_run', v_run_id::text,
                             CASE WHEN start_run.idempotency_key IS NULL THEN ARRAY['workflow', 'input']
                                  ELSE ARRAY['workflow', 'input', 'idempotency_key'] END);

    WITH created AS (
        INSERT INTO flowforge.task_run (organization_id, workflow_run_id, task_id, task_key, queue, priority, state,
                                        max_attempts, timeout, ready_at, remaining_deps, created_at)
        SELECT v_org, v_run_id, t.id, t.key, t.queue, t.priority,
               CASE WHEN t.dependency_count = 0 THEN 'ready' ELSE 'pending' END,
               t.max_attempts, t.timeout,
               CASE WHEN t.dependency_count = 0 THEN v_now END,
               t.dependency_count, v_now
        FROM flowforge.task t
        WHERE t.workflow_id = v_workflow.id
        RETURNING id, state
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT v_org, v_run_id, c.id, 'created', NULL, c.state, 0, 1, v_now FROM created c
    )
    SELECT count(*) FILTER (WHERE c.state = 'ready') INTO v_ready FROM created c;
    IF v_ready > 0 THEN
        PERFORM flowforge._dispatch_run(v_run_id, v_now);
        PERFORM flowforge._notify_ready();
    END IF;
    RETURN v_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge.start_run(text, jsonb, text) IS
  'start_run(workflow text, input jsonb default ''{}'', idempotency_key text default null) -> uuid. Starts the latest '
  'version of the named workflow in the caller''s organization: one workflow_run (state running) and one task_run per '
  'task, in one statement; tasks without dependencies are ready at once (NOTIFY flowforge_ready). Events: run_started, '
  'created per task. The same idempotency_key with the same workflow and input returns the first run''s id and writes '
  'nothing. Errors: FF001 unknown workflow; FF003 input not an object or a bad key; FF006 key reused for a different request.';

CREATE OR REPLACE FUNCTION flowforge.cancel_run(run_id uuid, reason text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_run record;
BEGIN
    PERFORM flowforge._check_text_size(cancel_run.reason, 'cancel reason');
    SELECT r.id, r.state INTO v_run
    FROM flowforge.workflow_run r
    WHERE r.id = cancel_run.run_id AND r.organization_id = v_org
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(cancel_run.run_id::text);
    END IF;
    IF v_run.state NOT IN ('pending', 'running') THEN
        RAISE EXCEPTION 'cancel_run refused: run % is already %', cancel_run.run_id, v_run.state
            USING ERRCODE = 'FF005', HINT = 'Only a pending or running run can be cancelled.';
    END IF;

    -- Running holders lose their lease: the fencing token moves on, so their next write is refused.
    WITH unfinished AS MATERIALIZED (
        SELECT tr.id, tr.state AS from_state
        FROM flowforge.task_run tr
        WHERE tr.workflow_run_id = cancel_run.run_id AND tr.state IN ('pending', 'ready', 'running')
        FOR UPDATE
    ), cancelled AS (
        UPDATE flowforge.task_run tr
        SET state = 'cancelled', finished_at = v_now, lease_expires_at = NULL,
            fencing_token = CASE WHEN u.from_state = 'running' THEN tr.fencing_token + 1 ELSE tr.fencing_token END
        FROM unfinished u
        WHERE tr.id = u.id
        RETURNING tr.id, u.from_state, tr.fencing_token, tr.attempt
    )
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                          fencing_token, attempt, created_at)
    SELECT v_org, cancel_run.run_id, c.id, 'cancelled', c.from_state, 'cancelled', c.fencing_token, c.attempt, v_now
    FROM cancelled c;

    UPDATE flowforge.workflow_run r
    SET state = 'cancelled', finished_at = v_now, tasks_remaining = 0, reason = cancel_run.reason
    WHERE r.id = cancel_run.run_id;
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, detail, created_at)
    VALUES (v_org, cancel_run.run_id, NULL, 'run_cancelled', v_run.state, 'cancelled',
            jsonb_build_object('reason', cancel_run.reason, 'actor', session_user::text), v_now);
    PERFORM flowforge._audit(v_org, 'cancel', 'workflow_run', cancel_run.run_id::text,
                             CASE WHEN cancel_run.reason IS NULL THEN '{}'::text[] ELSE ARRAY['reason'] END);
END;
$$;
COMMENT ON FUNCTION flowforge.cancel_run(uuid, text) IS
  'cancel_run(run_id uuid, reason text default null). Cancels a pending or running run of the caller''s organization: '
  'the run and every unfinished task run become cancelled; running tasks get a new fencing token, so their holders'' '
  'next heartbeat/complete/fail is refused with FF004. Events: cancelled per task, run_cancelled. '
  'Errors: FF001 no such run; FF005 the run already finished; FF009 reason over the size limit; FF007 not a member.';

CREATE OR REPLACE FUNCTION flowforge.retry_run(run_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_run record;
    v_reset integer;
    v_ready integer;
BEGIN
    SELECT r.id, r.state INTO v_run
    FROM flowforge.workflow_run r
    WHERE r.id = retry_run.run_id AND r.organization_id = v_org
    FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        PERFORM flowforge._run_not_found(retry_run.run_id::text);
    END IF;
    IF v_run.state NOT IN ('failed', 'cancelled') THEN
        RAISE EXCEPTION 'retry_run refused: run % is %', retry_run.run_id, v_run.state
            USING ERRCODE = 'FF005', HINT = 'Only a failed or cancelled run can be retried.';
    END IF;

    -- Every task that did not succeed goes again with a fresh attempt budget.
    -- It waits on its upstream tasks that did not succeed either.
    WITH again AS MATERIALIZED (
        SELECT tr.id, tr.task_id, tr.state AS from_state,
               (SELECT count(*) FROM flowforge.task_dependency td
                JOIN flowforge.task_run up ON up.workflow_run_id = tr.workflow_run_id AND up.task_id = td.depends_on_task_id
                WHERE td.task_id = tr.task_id AND up.state <> 'succeeded')::integer AS waiting_on,
               t.max_attempts AS budget
        FROM flowforge.task_run tr
        JOIN flowforge.task t ON t.id = tr.task_id
        WHERE tr.workflow_run_id = retry_run.run_id AND tr.state IN ('failed', 'cancelled', 'skipped')
        FOR UPDATE OF tr
    ), reset AS (
        UPDATE flowforge.task_run tr
        SET state = CASE WHEN a.waiting_on = 0 THEN 'ready' ELSE 'pending' END,
            remaining_deps = a.waiting_on,
            ready_at = CASE WHEN a.waiting_on = 0 THEN v_now END,
            attempt = tr.attempt + 1,
            max_attempts = tr.attempt + a.budget,
            finished_at = NULL, error = NULL, output = NULL
        FROM again a
        WHERE tr.id = a.id
        RETURNING tr.id, a.from_state, tr.state, tr.fencing_token, tr.attempt
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT v_org, retry_run.run_id, r.id, 'retried', r.from_state, r.state, r.fencing_token, r.attempt, v_now
        FROM reset r
    )
    SELECT count(*), count(*) FILTER (WHERE r.state = 'ready') INTO v_reset, v_ready FROM reset r;

    UPDATE flowforge.workflow_run r
    SET state = 'running', finished_at = NULL, tasks_remaining = v_reset, tasks_failed = 0, reason = NULL
    WHERE r.id = retry_run.run_id;
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, detail, created_at)
    VALUES (v_org, retry_run.run_id, NULL, 'run_retried', v_run.state, 'running',
            jsonb_build_object('tasks', v_reset, 'actor', session_user::text), v_now);
    PERFORM flowforge._audit(v_org, 'retry', 'workflow_run', retry_run.run_id::text);
    IF v_ready > 0 THEN
        PERFORM flowforge._dispatch_run(retry_run.run_id, v_now);
        PERFORM flowforge._notify_ready();
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.retry_run(uuid) IS
  'retry_run(run_id uuid). A failed or cancelled run of the caller''s organization runs again: every failed, cancelled '
  'or skipped task run returns to ready (or pending, while an upstream task has not succeeded) with attempt + 1 and a '
  'fresh budget of the task''s max_attempts; succeeded tasks keep their output. Events: retried per task, run_retried; '
  'NOTIFY flowforge_ready. Errors: FF001 no such run; FF005 the run is not failed or cancelled.';

CREATE OR REPLACE FUNCTION flowforge.run_events(run_id uuid)
RETURNS TABLE (seq bigint, created_at timestamptz, task_run_id uuid, task_key text, kind text,
               from_state text, to_state text, attempt integer, fencing_token bigint, detail jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    IF NOT EXISTS (SELECT 1 FROM flowforge.workflow_run r WHERE r.id = run_events.run_id AND r.organization_id = v_org) THEN
        PERFORM flowforge._run_not_found(run_events.run_id::text);
    END IF;
    RETURN QUERY
    SELECT e.seq, e.created_at, e.task_run_id, tr.task_key::text, e.kind::text, e.from_state::text, e.to_state::text,
           e.attempt, e.fencing_token, e.detail
    FROM (
        SELECT ev.* FROM flowforge.task_run_event ev
        WHERE ev.workflow_run_id = run_events.run_id AND ev.task_run_id IS NULL AND ev.organization_id = v_org
        UNION ALL
        SELECT ev.* FROM flowforge.task_run t
        JOIN flowforge.task_run_event ev ON ev.task_run_id = t.id
        WHERE t.workflow_run_id = run_events.run_id AND ev.organization_id = v_org
    ) e
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    ORDER BY e.created_at, e.seq;
END;
$$;
COMMENT ON FUNCTION flowforge.run_events(uuid) IS
  'run_events(run_id uuid) -> setof (seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, '
  'fencing_token, detail): the run''s history, oldest first; run-level events have task_run_id NULL. '
  'Errors: FF001 no such run in the caller''s organization.';
