-- Transitions shared by the run and worker families: what happens around a
-- task's state change (dependents released or skipped, the run's counters
-- settled, a refused write explained). Internal: executable only by the two
-- owner roles, reached only from SECURITY DEFINER API functions, whose pinned
-- search_path they run under; the hot ones carry no SET clause of their own
-- (its save/restore would cost more than their work) and name everything
-- schema-qualified.
--
-- Lock order, everywhere: the workflow_run row first, then its task_run rows.
-- claim and heartbeat touch only task rows and never wait on a run, so no
-- cycle of waits can form.

-- Wake pull workers. One notification per transaction: PostgreSQL folds
-- identical notifications, and the payload carries no tenant data because
-- every database user can LISTEN.
CREATE OR REPLACE FUNCTION flowforge._notify_ready() RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_notify('flowforge_ready', '');
END;
$$;
COMMENT ON FUNCTION flowforge._notify_ready() IS
  'Internal: NOTIFY flowforge_ready with an empty payload (delivered at commit, folded to one per transaction).';

-- One answer for a run that does not exist and a run of another organization.
CREATE OR REPLACE FUNCTION flowforge._run_not_found(p_run text) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION 'run % not found', p_run
        USING ERRCODE = 'FF001', HINT = 'Check the id; a run of another organization is not found either.';
END;
$$;
COMMENT ON FUNCTION flowforge._run_not_found(text) IS
  'Internal: raises FF001 "run ... not found" — the same for an unknown id and another organization''s. Never returns.';

-- Explain why a write naming (task_run_id, fencing_token) matched nothing.
-- Called only after the conditional UPDATE missed; always raises.
CREATE OR REPLACE FUNCTION flowforge._refuse_task_write(p_task_run_id uuid, p_fencing_token bigint, p_operation text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row record;
BEGIN
    SELECT tr.state, tr.fencing_token, tr.started_at, tr.timeout INTO v_row
    FROM flowforge.task_run tr
    WHERE tr.id = p_task_run_id AND tr.organization_id = flowforge.current_organization();
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task run % not found', p_task_run_id
            USING ERRCODE = 'FF001', HINT = 'Check the id; a task run of another organization is not found either.';
    END IF;
    IF v_row.fencing_token <> p_fencing_token THEN
        RAISE EXCEPTION '% refused: fencing token % of task run % is stale (the task is % under token %)',
            p_operation, p_fencing_token, p_task_run_id, v_row.state, v_row.fencing_token
            USING ERRCODE = 'FF004',
                  HINT = 'Your lease was lost (reaped, re-claimed or the run was cancelled): drop the result, do not retry the write.';
    END IF;
    IF v_row.state = 'running' THEN
        RAISE EXCEPTION '% refused: task run % exceeded its timeout of %', p_operation, p_task_run_id, v_row.timeout
            USING ERRCODE = 'FF004',
                  HINT = 'The task ran past its timeout and will be reaped: drop the result.';
    END IF;
    RAISE EXCEPTION '% refused: task run % is %, not running', p_operation, p_task_run_id, v_row.state
        USING ERRCODE = 'FF005',
              HINT = 'Only a running task can be heartbeaten, completed or failed; this write was already made or the task was retried.';
END;
$$;
COMMENT ON FUNCTION flowforge._refuse_task_write(uuid, bigint, text) IS
  'Internal: raises FF001 (no such task run in this organization), FF004 (stale fencing token or timed out) or '
  'FF005 (token current but the task is not running). Never returns.';

-- Lock the run a task run belongs to, honouring the lock order. Returns the
-- run id, or NULL when the task run does not exist in this organization.
CREATE OR REPLACE FUNCTION flowforge._lock_run_of(p_task_run_id uuid) RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run_id uuid;
BEGIN
    SELECT r.id INTO v_run_id
    FROM flowforge.workflow_run r
    WHERE r.id = (SELECT tr.workflow_run_id FROM flowforge.task_run tr
                  WHERE tr.id = p_task_run_id AND tr.organization_id = flowforge.current_organization())
    FOR NO KEY UPDATE OF r;
    RETURN v_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._lock_run_of(uuid) IS
  'Internal: locks (FOR NO KEY UPDATE) the workflow_run of a task run of the caller''s organization and returns its id; '
  'NULL when there is no such task run.';

-- A task succeeded: dependents waiting only on it become ready. Cost is the
-- number of direct dependents, not the size of the run (a counter per task run).
CREATE OR REPLACE FUNCTION flowforge._release_dependents(p_run_id uuid, p_task_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_ready integer;
BEGIN
    WITH released AS (
        UPDATE flowforge.task_run tr
        SET remaining_deps = tr.remaining_deps - 1,
            state = CASE WHEN tr.remaining_deps = 1 THEN 'ready' ELSE tr.state END,
            ready_at = CASE WHEN tr.remaining_deps = 1 THEN p_now ELSE tr.ready_at END
        FROM flowforge.task_dependency td
        WHERE td.depends_on_task_id = p_task_id
          AND tr.workflow_run_id = p_run_id
          AND tr.task_id = td.task_id
          AND tr.state = 'pending'
        RETURNING tr.id, tr.organization_id, tr.state, tr.fencing_token, tr.attempt
    ), events AS (
        INSERT INTO flowforge.task_run_event
            (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, fencing_token, attempt, created_at)
        SELECT r.organization_id, p_run_id, r.id, 'released', 'pending', 'ready', r.fencing_token, r.attempt, p_now
        FROM released r WHERE r.state = 'ready'
    )
    SELECT count(*) INTO v_ready FROM released r WHERE r.state = 'ready';
    IF v_ready > 0 THEN
        PERFORM flowforge._dispatch_run(p_run_id, p_now);
        PERFORM flowforge._notify_ready();
    END IF;
    RETURN v_ready;
END;
$$;
COMMENT ON FUNCTION flowforge._release_dependents(uuid, uuid, timestamptz) IS
  'Internal: decrements remaining_deps of the pending dependents of a succeeded task in one run; those reaching 0 '
  'become ready (event "released", NOTIFY; push-queue tasks are dispatched). Returns how many became ready.';

-- A task failed for good: every pending transitive dependent is skipped.
-- Independent branches are untouched.
CREATE OR REPLACE FUNCTION flowforge._skip_dependents(p_run_id uuid, p_task_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_skipped integer;
BEGIN
    WITH RECURSIVE downstream(task_id) AS (
        SELECT td.task_id FROM flowforge.task_dependency td WHERE td.depends_on_task_id = p_task_id
        UNION
        SELECT td.task_id FROM flowforge.task_dependency td JOIN downstream d ON td.depends_on_task_id = d.task_id
    ), skipped AS (
        UPDATE flowforge.task_run tr
        SET state = 'skipped', finished_at = p_now
        FROM downstream d
        WHERE tr.workflow_run_id = p_run_id AND tr.task_id = d.task_id AND tr.state = 'pending'
        RETURNING tr.id, tr.organization_id, tr.fencing_token, tr.attempt
    ), events AS (
        INSERT INTO flowforge.task_run_event
            (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, fencing_token, attempt, detail, created_at)
        SELECT s.organization_id, p_run_id, s.id, 'skipped', 'pending', 'skipped', s.fencing_token, s.attempt,
               jsonb_build_object('upstream_task_id', p_task_id), p_now
        FROM skipped s
    )
    SELECT count(*) INTO v_skipped FROM skipped;
    RETURN v_skipped;
END;
$$;
COMMENT ON FUNCTION flowforge._skip_dependents(uuid, uuid, timestamptz) IS
  'Internal: marks every pending transitive dependent of a failed task skipped (event "skipped"); returns the count.';

-- The run-level event of a run that just ended (run_succeeded / run_failed).
CREATE OR REPLACE FUNCTION flowforge._record_run_finished(p_run_id uuid, p_organization_id uuid, p_state varchar,
                                                          p_tasks_failed integer, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.task_run_event
        (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, detail, created_at)
    VALUES (p_organization_id, p_run_id, NULL, 'run_' || p_state, 'running', p_state,
            jsonb_build_object('tasks_failed', p_tasks_failed), p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._record_run_finished(uuid, uuid, varchar, integer, timestamptz) IS
  'Internal: appends the run-level event of a run that just ended (run_succeeded / run_failed).';

-- Count tasks that reached a terminal state; the run ends when none is left:
-- succeeded when nothing failed, failed otherwise.
CREATE OR REPLACE FUNCTION flowforge._settle_run(p_run_id uuid, p_finished integer, p_failed integer, p_now timestamptz)
RETURNS varchar
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run record;
BEGIN
    UPDATE flowforge.workflow_run r
    SET tasks_remaining = r.tasks_remaining - p_finished,
        tasks_failed = r.tasks_failed + p_failed,
        state = CASE WHEN r.tasks_remaining = p_finished
                     THEN CASE WHEN r.tasks_failed + p_failed > 0 THEN 'failed' ELSE 'succeeded' END
                     ELSE r.state END,
        finished_at = CASE WHEN r.tasks_remaining = p_finished THEN p_now END
    WHERE r.id = p_run_id AND r.state = 'running'
    RETURNING r.state, r.organization_id, r.tasks_failed INTO v_run;
    IF FOUND AND v_run.state <> 'running' THEN
        PERFORM flowforge._record_run_finished(p_run_id, v_run.organization_id, v_run.state, v_run.tasks_failed, p_now);
    END IF;
    RETURN v_run.state;
END;
$$;
COMMENT ON FUNCTION flowforge._settle_run(uuid, integer, integer, timestamptz) IS
  'Internal: subtracts finished tasks from a running run''s counters; when none remain the run becomes succeeded or '
  'failed (event "run_succeeded"/"run_failed"). Returns the run state, NULL when the run was not running.';

-- A running task leaves running for good or for a retry (fail, reaper).
-- Shared so both paths skip, count and settle identically.
CREATE OR REPLACE FUNCTION flowforge._after_task_stopped(p_run_id uuid, p_task_id uuid, p_new_state varchar, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_skipped integer;
BEGIN
    IF p_new_state = 'failed' THEN
        v_skipped := flowforge._skip_dependents(p_run_id, p_task_id, p_now);
        PERFORM flowforge._settle_run(p_run_id, 1 + v_skipped, 1, p_now);
    ELSIF p_new_state = 'ready' THEN
        -- Due now (no backoff) is dispatched at once; later, by tick().
        PERFORM flowforge._dispatch_run(p_run_id, p_now);
        PERFORM flowforge._notify_ready();
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._after_task_stopped(uuid, uuid, varchar, timestamptz) IS
  'Internal: after a running task failed or was reaped — failed: skip dependents and settle the run; '
  'ready again (retry): dispatch it if it is due and on a push queue, and wake workers.';

-- Backoff before attempt n + 1: backoff * factor^(n - 1), capped at max_backoff.
CREATE OR REPLACE FUNCTION flowforge._backoff(p_backoff interval, p_factor numeric, p_max interval, p_attempt integer)
RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT least(extract(epoch FROM p_backoff)::float8 * power(p_factor::float8, least(p_attempt - 1, 60)),
                 extract(epoch FROM p_max)::float8) * interval '1 second'
$$;
COMMENT ON FUNCTION flowforge._backoff(interval, numeric, interval, integer) IS
  'Internal: the wait before retrying after attempt p_attempt failed: backoff * factor^(attempt-1), at most max.';
