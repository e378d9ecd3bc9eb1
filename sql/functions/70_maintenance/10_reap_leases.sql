

-- Duty: the lease reaper. A running task whose lease expired (its holder died,
-- hung or lost the network) or whose timeout passed is taken back.

CREATE OR REPLACE FUNCTION flowforge.reap_expired_leases(max_rows integer DEFAULT 1000) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
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
        -- The retry decision is fail()'s (_retries_left with retryable): a lost
        -- lease is a retryable failure. A pushed task no consumer took
        -- (lease_owner still 'dispatch') never started: it is dispatched again
        -- at once without using an attempt.
        UPDATE flowforge.task_run tr
        SET state = CASE WHEN tr.lease_owner IS NOT DISTINCT FROM 'dispatch'
                              OR flowforge._retries_left(true, tr.attempt, tr.max_attempts) THEN 'ready' ELSE 'failed' END,
            attempt = CASE WHEN tr.lease_owner IS DISTINCT FROM 'dispatch'
                                AND flowforge._retries_left(true, tr.attempt, tr.max_attempts)
                           THEN tr.attempt + 1 ELSE tr.attempt END,
            fencing_token = tr.fencing_token + 1,
            ready_at = CASE WHEN tr.lease_owner = 'dispatch' THEN v_now
                            WHEN flowforge._retries_left(true, tr.attempt, tr.max_attempts)
                            THEN v_now + flowforge._backoff(t.backoff, t.backoff_factor, t.max_backoff, tr.attempt)
                            ELSE tr.ready_at END,
            finished_at = CASE WHEN tr.lease_owner IS NOT DISTINCT FROM 'dispatch'
                                    OR flowforge._retries_left(true, tr.attempt, tr.max_attempts) THEN NULL ELSE v_now END,
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
        PERFORM flowforge._append_events(v_task.organization_id, v_task.workflow_run_id,
            CASE WHEN v_task.timed_out THEN 'timed_out' ELSE 'lease_expired' END,
            ARRAY[v_candidate.id], ARRAY['running'], ARRAY[v_task.state::text], ARRAY[v_task.fencing_token],
            ARRAY[v_task.attempt],
            ARRAY[jsonb_build_object('error', v_task.error)
                  || CASE WHEN v_task.state = 'ready' THEN jsonb_build_object('ready_at', v_task.ready_at) ELSE '{}' END],
            v_now);
        IF v_task.state = 'failed' THEN
            PERFORM flowforge._on_task_failed_for_good('dag', v_task.workflow_run_id, v_candidate.id, v_task.task_id, v_now);
        ELSE
            PERFORM flowforge._on_task_requeued('dag', v_task.workflow_run_id, v_candidate.id, v_task.task_id, v_now);
        END IF;
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
SELECT flowforge._rights('flowforge.reap_expired_leases(integer)', 'flowforge_system', '{flowforge_daemon}');
