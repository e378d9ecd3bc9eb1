-- The worker protocol: claim, heartbeat, complete, fail.
--
--   claim(queues, worker, lease, batch) -> the tasks taken, each with a fencing token
--   heartbeat(task_run_id, fencing_token, lease) -> new lease expiry
--   complete(task_run_id, fencing_token, output)
--   fail(task_run_id, fencing_token, error, retryable)
--
-- Every write after claim names the fencing token it was given; each is one
-- conditional UPDATE on (id, fencing_token, state = 'running'), and a miss is
-- explained by _refuse_task_write (FF001 / FF004 / FF005).

CREATE OR REPLACE FUNCTION flowforge._check_lease(p_lease interval) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_lease IS NULL OR p_lease < interval '1 second' OR p_lease > interval '1 day' THEN
        RAISE EXCEPTION 'lease must be between 1 second and 1 day, got %', coalesce(p_lease::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Pick a lease a few times longer than your heartbeat interval.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_lease(interval) IS 'Internal: raises FF003 unless 1 second <= lease <= 1 day.';

CREATE OR REPLACE FUNCTION flowforge.claim(queues text[], worker text, lease interval DEFAULT '30 seconds', batch integer DEFAULT 1)
RETURNS TABLE (task_run_id uuid, workflow_run_id uuid, task_key text, attempt integer,
               fencing_token bigint, input jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
-- Generic plans: every statement here is a key lookup, and re-planning per call
-- (custom plans win on estimates for array and LIMIT parameters) costs more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_ids uuid[];
BEGIN
    IF claim.queues IS NULL OR cardinality(claim.queues) = 0 OR array_position(claim.queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'claim needs at least one queue name and no NULLs'
            USING ERRCODE = 'FF003', HINT = 'Pass queues => ARRAY[''default''].';
    END IF;
    IF claim.worker IS NULL OR length(claim.worker) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'Use something that identifies the process, such as host:pid.';
    END IF;
    IF claim.batch IS NULL OR claim.batch NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 1000, got %', coalesce(claim.batch::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Claim at most as many tasks as you have free capacity for.';
    END IF;
    PERFORM flowforge._check_lease(claim.lease);

    -- Pick first, into an array, so the LIMIT runs exactly once (a LIMIT inside
    -- an IN-subquery of the UPDATE may be re-executed and take more rows).
    IF cardinality(claim.queues) = 1 THEN
        -- Equality on queue lets idx_taskrun_state_age return rows in claim order.
        SELECT array_agg(p.id) INTO v_ids FROM (
            SELECT tr.id FROM flowforge.task_run tr
            WHERE tr.organization_id = v_org AND tr.state = 'ready' AND tr.queue = claim.queues[1]
              AND tr.ready_at <= v_now
            ORDER BY tr.priority DESC, tr.ready_at
            LIMIT claim.batch
            FOR UPDATE SKIP LOCKED) p;
    ELSE
        -- One ordered index scan per queue, then the best of them overall.
        SELECT array_agg(p.id) INTO v_ids FROM (
            -- DISTINCT: a queue named twice must not yield its tasks twice and under-fill the batch.
            SELECT c.id FROM (SELECT DISTINCT u.name FROM unnest(claim.queues) AS u(name)) AS q(name)
            CROSS JOIN LATERAL (
                SELECT tr.id, tr.priority, tr.ready_at FROM flowforge.task_run tr
                WHERE tr.organization_id = v_org AND tr.state = 'ready' AND tr.queue = q.name
                  AND tr.ready_at <= v_now
                ORDER BY tr.priority DESC, tr.ready_at
                LIMIT claim.batch
                FOR UPDATE SKIP LOCKED) c
            ORDER BY c.priority DESC, c.ready_at
            LIMIT claim.batch) p;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE flowforge.task_run tr
        SET state = 'running',
            fencing_token = tr.fencing_token + 1,
            lease_owner = claim.worker,
            lease_expires_at = v_now + CASE WHEN tr.timeout < claim.lease THEN tr.timeout ELSE claim.lease END,
            started_at = v_now
        WHERE tr.id = ANY (v_ids)  -- locked by the pick above: still ready
        RETURNING tr.id, tr.organization_id, tr.workflow_run_id, tr.task_id, tr.task_key, tr.attempt,
                  tr.fencing_token, tr.lease_expires_at
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        SELECT c.organization_id, c.workflow_run_id, c.id, 'claimed', 'ready', 'running', c.fencing_token, c.attempt,
               jsonb_build_object('worker', claim.worker), v_now
        FROM claimed c
    )
    SELECT c.id, c.workflow_run_id, c.task_key::text, c.attempt, c.fencing_token,
           -- The same shape as flowforge._task_input (used by push dispatch), inline:
           -- a function call per claimed row costs more than the two lookups.
           jsonb_build_object(
               'run', (SELECT r.input FROM flowforge.workflow_run r WHERE r.id = c.workflow_run_id),
               'deps', coalesce((SELECT jsonb_object_agg(up.task_key, up.output)
                                 FROM flowforge.task_dependency td
                                 JOIN flowforge.task_run up
                                   ON up.workflow_run_id = c.workflow_run_id AND up.task_id = td.depends_on_task_id
                                 WHERE td.task_id = c.task_id), '{}'::jsonb)),
           c.lease_expires_at
    FROM claimed c;
END;
$$;
COMMENT ON FUNCTION flowforge.claim(text[], text, interval, integer) IS
  'claim(queues text[], worker text, lease interval default ''30 seconds'', batch int default 1) -> setof (task_run_id, '
  'workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at). Takes up to batch ready tasks of the '
  'given queues in the caller''s organization whose ready_at has come — highest priority first, then longest ready — '
  'with FOR UPDATE SKIP LOCKED, so concurrent workers never take the same task. Each becomes running with a new '
  'fencing token and a lease (capped by the task''s timeout); event "claimed". input is {"run": <run input>, '
  '"deps": {<dependency key>: <its output>}}. Returns no rows when nothing is ready. Errors: FF003 bad arguments.';

CREATE OR REPLACE FUNCTION flowforge.heartbeat(task_run_id uuid, fencing_token bigint, lease interval DEFAULT '30 seconds')
RETURNS timestamptz
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
    v_expires timestamptz;
BEGIN
    PERFORM flowforge._check_lease(heartbeat.lease);
    -- A push consumer's first heartbeat takes the task over from the dispatcher.
    UPDATE flowforge.task_run tr
    SET lease_expires_at = CASE WHEN tr.started_at + tr.timeout < v_now + heartbeat.lease
                                THEN tr.started_at + tr.timeout ELSE v_now + heartbeat.lease END,
        lease_owner = CASE WHEN tr.lease_owner = 'dispatch' THEN 'push-consumer' ELSE tr.lease_owner END
    WHERE tr.id = heartbeat.task_run_id
      AND tr.fencing_token = heartbeat.fencing_token
      AND tr.state = 'running'
      AND tr.organization_id = v_org
      AND (tr.timeout IS NULL OR tr.started_at + tr.timeout > v_now)
    RETURNING tr.lease_expires_at INTO v_expires;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(heartbeat.task_run_id, heartbeat.fencing_token, 'heartbeat');
    END IF;
    RETURN v_expires;
END;
$$;
COMMENT ON FUNCTION flowforge.heartbeat(uuid, bigint, interval) IS
  'heartbeat(task_run_id uuid, fencing_token bigint, lease interval default ''30 seconds'') -> timestamptz. Extends the '
  'lease of a running task held under this fencing token to now + lease (never past started_at + timeout) and returns '
  'the new expiry; for a pushed task the first heartbeat takes it over from the dispatcher (lease_owner dispatch -> '
  'push-consumer). Records no event (it is not a transition). Errors: FF001 no such task run; FF004 stale token, lease '
  'reaped, run cancelled or timeout exceeded — stop and drop the result; FF005 not running; FF003 bad lease.';

CREATE OR REPLACE FUNCTION flowforge.complete(task_run_id uuid, fencing_token bigint, output jsonb DEFAULT NULL)
RETURNS void
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
    v_run record;
    v_task record;
BEGIN
    PERFORM flowforge._check_size(complete.output, 'task output');
    -- Lock order: the run first. Settling its counters is what takes the lock
    -- (one statement instead of a lock and a later update); a refusal below
    -- raises, which undoes it. A running task only exists in a running run.
    UPDATE flowforge.workflow_run r
    SET tasks_remaining = r.tasks_remaining - 1,
        state = CASE WHEN r.tasks_remaining = 1
                     THEN CASE WHEN r.tasks_failed > 0 THEN 'failed' ELSE 'succeeded' END
                     ELSE r.state END,
        finished_at = CASE WHEN r.tasks_remaining = 1 THEN v_now END
    WHERE r.id = (SELECT tr.workflow_run_id FROM flowforge.task_run tr
                  WHERE tr.id = complete.task_run_id AND tr.organization_id = v_org)
      AND r.state = 'running'
    RETURNING r.state, r.organization_id, r.tasks_failed INTO v_run;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(complete.task_run_id, complete.fencing_token, 'complete');
    END IF;
    WITH done AS (
        UPDATE flowforge.task_run tr
        SET state = 'succeeded', output = complete.output, finished_at = v_now, lease_expires_at = NULL, error = NULL
        WHERE tr.id = complete.task_run_id
          AND tr.fencing_token = complete.fencing_token
          AND tr.state = 'running'
          AND tr.organization_id = v_org
        RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.attempt,
                  EXISTS (SELECT 1 FROM flowforge.task_dependency td WHERE td.depends_on_task_id = tr.task_id)
                      AS has_dependents
    ), event AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT d.organization_id, d.workflow_run_id, complete.task_run_id, 'completed', 'running', 'succeeded',
               complete.fencing_token, d.attempt, v_now
        FROM done d
    )
    SELECT d.workflow_run_id, d.task_id, d.has_dependents INTO v_task FROM done d;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(complete.task_run_id, complete.fencing_token, 'complete');
    END IF;
    IF v_task.has_dependents THEN
        PERFORM flowforge._release_dependents(v_task.workflow_run_id, v_task.task_id, v_now);
    END IF;
    IF v_run.state <> 'running' THEN
        PERFORM flowforge._record_run_finished(v_task.workflow_run_id, v_run.organization_id, v_run.state,
                                               v_run.tasks_failed, v_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.complete(uuid, bigint, jsonb) IS
  'complete(task_run_id uuid, fencing_token bigint, output jsonb default null). The holder of a running task reports '
  'success: the task succeeds with output; dependents whose dependencies have all succeeded become ready in the same '
  'transaction (NOTIFY); the run succeeds when this was its last unfinished task. Events: completed, released, '
  'run_succeeded/run_failed. Errors: FF001 no such task run; FF004 stale token (reaped, re-claimed, cancelled) — '
  'drop the result; FF005 the task is not running (already completed or failed).';

CREATE OR REPLACE FUNCTION flowforge.fail(task_run_id uuid, fencing_token bigint, error text, retryable boolean DEFAULT true)
RETURNS void
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
    v_task record;
BEGIN
    PERFORM flowforge._check_text_size(fail.error, 'error text');
    IF flowforge._lock_run_of(fail.task_run_id) IS NULL THEN
        PERFORM flowforge._refuse_task_write(fail.task_run_id, fail.fencing_token, 'fail');
    END IF;
    UPDATE flowforge.task_run tr
    SET state = CASE WHEN (fail.retryable IS NOT FALSE AND tr.attempt < tr.max_attempts) THEN 'ready' ELSE 'failed' END,
        attempt = CASE WHEN (fail.retryable IS NOT FALSE AND tr.attempt < tr.max_attempts) THEN tr.attempt + 1 ELSE tr.attempt END,
        ready_at = CASE WHEN (fail.retryable IS NOT FALSE AND tr.attempt < tr.max_attempts)
                        THEN v_now + flowforge._backoff(t.backoff, t.backoff_factor, t.max_backoff, tr.attempt)
                        ELSE tr.ready_at END,
        finished_at = CASE WHEN (fail.retryable IS NOT FALSE AND tr.attempt < tr.max_attempts) THEN NULL ELSE v_now END,
        lease_expires_at = NULL,
        error = fail.error
    FROM flowforge.task t
    WHERE tr.id = fail.task_run_id
      AND tr.fencing_token = fail.fencing_token
      AND tr.state = 'running'
      AND tr.organization_id = v_org
      AND t.id = tr.task_id
    RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.state, tr.attempt, tr.ready_at INTO v_task;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(fail.task_run_id, fail.fencing_token, 'fail');
    END IF;
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                          fencing_token, attempt, detail, created_at)
    VALUES (v_task.organization_id, v_task.workflow_run_id, fail.task_run_id,
            CASE WHEN v_task.state = 'ready' THEN 'retry_scheduled' ELSE 'failed' END, 'running', v_task.state,
            fail.fencing_token, v_task.attempt,
            jsonb_build_object('error', left(fail.error, 1000), 'retryable', coalesce(fail.retryable, true))
              || CASE WHEN v_task.state = 'ready' THEN jsonb_build_object('ready_at', v_task.ready_at) ELSE '{}' END,
            v_now);
    PERFORM flowforge._after_task_stopped(v_task.workflow_run_id, v_task.task_id, v_task.state, v_now);
END;
$$;
COMMENT ON FUNCTION flowforge.fail(uuid, bigint, text, boolean) IS
  'fail(task_run_id uuid, fencing_token bigint, error text, retryable boolean default true). The holder of a running '
  'task reports failure. With retryable and attempts left: back to ready with attempt + 1 after backoff * '
  'backoff_factor^(attempt-1), capped at max_backoff (event retry_scheduled). Otherwise failed (event failed): every '
  'transitive dependent is skipped, independent branches continue, and the run fails once nothing is left to do. '
  'Errors: FF001 no such task run; FF004 stale token — drop the result; FF005 the task is not running; FF009 error '
  'text over the size limit.';
