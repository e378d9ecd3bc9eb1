-- Periodic duties: the lease reaper and tick(), which the daemon calls on a timer.

CREATE OR REPLACE FUNCTION flowforge.reap_expired_leases(max_rows integer DEFAULT 1000) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
-- Generic plans: every statement here is a key lookup, and re-planning per call
-- (custom plans win on estimates for array and LIMIT parameters) costs more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_reaped integer := 0;
    v_candidate record;
    v_task record;
BEGIN
    IF reap_expired_leases.max_rows IS NULL OR reap_expired_leases.max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be at least 1' USING ERRCODE = 'FF003', HINT = 'The default, 1000, suits a timer.';
    END IF;
    -- Oldest expiry first, through idx_taskrun_lease_expiry. Each candidate is
    -- then handled under its run's lock (lock order: run, then task) and
    -- re-checked, so a task completed or heartbeaten meanwhile is untouched.
    FOR v_candidate IN
        SELECT tr.id, tr.workflow_run_id
        FROM flowforge.task_run tr
        WHERE tr.state = 'running' AND tr.lease_expires_at < v_now
        ORDER BY tr.lease_expires_at
        LIMIT reap_expired_leases.max_rows
    LOOP
        PERFORM 1 FROM flowforge.workflow_run r WHERE r.id = v_candidate.workflow_run_id FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        UPDATE flowforge.task_run tr
        -- A pushed task no consumer took (lease_owner still 'dispatch') never
        -- started: it is dispatched again at once without using an attempt.
        SET state = CASE WHEN tr.lease_owner IS NOT DISTINCT FROM 'dispatch' OR tr.attempt < tr.max_attempts THEN 'ready' ELSE 'failed' END,
            attempt = CASE WHEN tr.lease_owner IS DISTINCT FROM 'dispatch' AND tr.attempt < tr.max_attempts THEN tr.attempt + 1 ELSE tr.attempt END,
            fencing_token = tr.fencing_token + 1,
            ready_at = CASE WHEN tr.lease_owner = 'dispatch' THEN v_now
                            WHEN tr.attempt < tr.max_attempts
                            THEN v_now + flowforge._backoff(t.backoff, t.backoff_factor, t.max_backoff, tr.attempt)
                            ELSE tr.ready_at END,
            finished_at = CASE WHEN tr.lease_owner IS NOT DISTINCT FROM 'dispatch' OR tr.attempt < tr.max_attempts THEN NULL ELSE v_now END,
            lease_expires_at = NULL,
            error = CASE WHEN tr.lease_owner = 'dispatch' THEN 'no consumer took the pushed task within its dispatch lease'
                         WHEN tr.started_at + tr.timeout <= v_now THEN format('timed out after %s', tr.timeout)
                         ELSE format('lease expired (held by %s)', tr.lease_owner) END
        FROM flowforge.task t
        WHERE tr.id = v_candidate.id AND t.id = tr.task_id
          AND tr.state = 'running' AND tr.lease_expires_at < v_now
        RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.state, tr.attempt, tr.fencing_token,
                  tr.ready_at, tr.error,
                  (tr.lease_owner IS DISTINCT FROM 'dispatch' AND tr.started_at + tr.timeout <= v_now) IS TRUE AS timed_out
        INTO v_task;
        CONTINUE WHEN NOT FOUND;
        v_reaped := v_reaped + 1;
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        VALUES (v_task.organization_id, v_task.workflow_run_id, v_candidate.id,
                CASE WHEN v_task.timed_out THEN 'timed_out' ELSE 'lease_expired' END, 'running', v_task.state,
                v_task.fencing_token, v_task.attempt,
                jsonb_build_object('error', v_task.error)
                  || CASE WHEN v_task.state = 'ready' THEN jsonb_build_object('ready_at', v_task.ready_at) ELSE '{}' END,
                v_now);
        PERFORM flowforge._after_task_stopped(v_task.workflow_run_id, v_task.task_id, v_task.state, v_now);
    END LOOP;
    RETURN v_reaped;
END;
$$;
COMMENT ON FUNCTION flowforge.reap_expired_leases(integer) IS
  'reap_expired_leases(max_rows int default 1000) -> int. For every organization: running tasks whose lease expired '
  '(or whose timeout passed) get a new fencing token and go back to ready after backoff with attempt + 1, or fail '
  'for good when no attempts are left (dependents skipped, run settled). A pushed task no consumer took within its '
  'dispatch lease is dispatched again at once without using an attempt. Events: lease_expired / timed_out. A task '
  'completed, heartbeaten or locked meanwhile is left alone. Returns how many were reaped. Errors: FF003 max_rows < 1.';

CREATE OR REPLACE FUNCTION flowforge.tick() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
-- Generic plans: every statement here is a key lookup, and re-planning per call
-- (custom plans win on estimates for array and LIMIT parameters) costs more than running it.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_reaped integer;
    v_dispatched integer;
BEGIN
    v_reaped := flowforge.reap_expired_leases(1000);
    v_dispatched := flowforge._dispatch_due(1000, flowforge.now());
    RETURN jsonb_build_object('reaped', v_reaped, 'dispatched', v_dispatched, 'at', flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.tick() IS
  'tick() -> jsonb. Runs every periodic duty once and returns counts of what it did: {"reaped": n, "dispatched": n, "at": now} '
  '— expired leases reaped, due push-queue retries dispatched to the outbox. '
  'The daemon calls it on its tick interval; calling it more often is harmless.';
