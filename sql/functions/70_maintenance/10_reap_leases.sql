

-- Duty: the lease reaper. A running task whose lease expired (its holder died,
-- hung or lost the network) or whose timeout passed is taken back.

-- One expired lease: back to ready (or failed for good), its event, the
-- engine's hook. False when the row was busy or is no longer expired.
CREATE OR REPLACE FUNCTION flowforge._reap_one(p_org uuid, p_task_run_id uuid, p_run_id uuid, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_task record;
BEGIN
    PERFORM 1 FROM flowforge.workflow_run r WHERE r.id = p_run_id AND r.organization_id = p_org
    FOR NO KEY UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
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
        ready_at = CASE WHEN tr.lease_owner = 'dispatch' THEN p_now
                        WHEN flowforge._retries_left(true, tr.attempt, tr.max_attempts)
                        THEN p_now + flowforge._backoff(t.backoff, t.backoff_factor, t.max_backoff, tr.attempt)
                        ELSE tr.ready_at END,
        finished_at = CASE WHEN tr.lease_owner IS NOT DISTINCT FROM 'dispatch'
                                OR flowforge._retries_left(true, tr.attempt, tr.max_attempts) THEN NULL ELSE p_now END,
        lease_expires_at = NULL,
        error = CASE WHEN tr.lease_owner = 'dispatch' THEN 'no consumer took the pushed task within its dispatch lease'
                     WHEN tr.started_at + tr.timeout <= p_now THEN format('timed out after %s', tr.timeout)
                     ELSE format('lease expired (held by %s)', tr.lease_owner) END
    FROM flowforge.task t
    WHERE tr.id = p_task_run_id AND tr.organization_id = p_org AND t.id = tr.task_id AND t.organization_id = p_org
      AND tr.state = 'running' AND tr.lease_expires_at < p_now
    RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.state, tr.attempt, tr.fencing_token,
              tr.ready_at, tr.error,
              (tr.lease_owner IS DISTINCT FROM 'dispatch' AND tr.started_at + tr.timeout <= p_now) IS TRUE AS timed_out
    INTO v_task;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM flowforge._append_events(v_task.organization_id, v_task.workflow_run_id,
        CASE WHEN v_task.timed_out THEN 'timed_out' ELSE 'lease_expired' END,
        ARRAY[p_task_run_id], ARRAY['running'], ARRAY[v_task.state::text], ARRAY[v_task.fencing_token],
        ARRAY[v_task.attempt],
        ARRAY[jsonb_build_object('error', v_task.error)
              || CASE WHEN v_task.state = 'ready' THEN jsonb_build_object('ready_at', v_task.ready_at) ELSE '{}' END],
        p_now);
    IF v_task.state = 'failed' THEN
        PERFORM flowforge._on_task_failed_for_good('dag', p_org, v_task.workflow_run_id, p_task_run_id, v_task.task_id,
                                                   p_now);
    ELSE
        PERFORM flowforge._on_task_requeued('dag', p_org, v_task.workflow_run_id, p_task_run_id, v_task.task_id, p_now);
    END IF;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._reap_one(uuid, uuid, uuid, timestamptz) IS
  'Internal: reaps one expired task lease of organization p_org (every statement filters on it) under its run''s lock (SKIP LOCKED: false when busy) — ready again after '
  'backoff, or failed for good — with its event and the engine hook. False when nothing was reaped.';

-- The fallback when _reap_one raised (a definition whose arithmetic cannot be
-- done, say): the task fails for good with the reason, no arithmetic involved.
CREATE OR REPLACE FUNCTION flowforge._reap_one_failed(p_org uuid, p_task_run_id uuid, p_run_id uuid, p_error text,
                                                      p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_task record;
BEGIN
    PERFORM 1 FROM flowforge.workflow_run r WHERE r.id = p_run_id AND r.organization_id = p_org
    FOR NO KEY UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE flowforge.task_run tr
    SET state = 'failed', fencing_token = tr.fencing_token + 1, lease_expires_at = NULL,
        finished_at = greatest(p_now, tr.started_at), error = p_error
    WHERE tr.id = p_task_run_id AND tr.organization_id = p_org AND tr.state = 'running' AND tr.lease_expires_at < p_now
    RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.attempt, tr.fencing_token INTO v_task;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM flowforge._append_events(v_task.organization_id, v_task.workflow_run_id, 'lease_expired',
        ARRAY[p_task_run_id], ARRAY['running'], ARRAY['failed'], ARRAY[v_task.fencing_token], ARRAY[v_task.attempt],
        ARRAY[jsonb_build_object('error', p_error)], p_now);
    PERFORM flowforge._on_task_failed_for_good('dag', p_org, v_task.workflow_run_id, p_task_run_id, v_task.task_id,
                                               p_now);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._reap_one_failed(uuid, uuid, uuid, text, timestamptz) IS
  'Internal: fails one expired task lease of organization p_org for good with p_error (the reaper''s fallback when reaping it raised).';

CREATE OR REPLACE FUNCTION flowforge._reap_task_leases(p_orgs uuid[], p_max integer, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_now constant timestamptz := p_now;
    v_reaped integer := 0;
    v_candidate record;
    v_error text;
    v_state text;
BEGIN
    -- Oldest expiry first, through idx_taskrun_lease_expiry. Each candidate is
    -- then handled under its run's lock (lock order: run, then task) and
    -- re-checked, so a task completed or heartbeaten meanwhile is untouched.
    FOR v_candidate IN
        SELECT tr.id, tr.workflow_run_id, tr.organization_id
        FROM flowforge.task_run tr
        WHERE tr.state = 'running' AND tr.lease_expires_at < v_now
          AND (p_orgs IS NULL OR tr.organization_id = ANY (p_orgs))
        ORDER BY tr.lease_expires_at
        LIMIT p_max
    LOOP
        -- One row must never stop the duty for the others (or for other
        -- organizations): each candidate is reaped in a subtransaction, and a
        -- row that cannot be put back fails for good instead, with the reason.
        BEGIN
            IF flowforge._reap_one(v_candidate.organization_id, v_candidate.id, v_candidate.workflow_run_id, v_now) THEN
                v_reaped := v_reaped + 1;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT, v_state = RETURNED_SQLSTATE;
            BEGIN
                IF flowforge._reap_one_failed(v_candidate.organization_id, v_candidate.id, v_candidate.workflow_run_id,
                                              format('could not be reaped (%s: %s); failed for good', v_state, v_error),
                                              v_now) THEN
                    v_reaped := v_reaped + 1;
                END IF;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT, v_state = RETURNED_SQLSTATE;
                RAISE WARNING 'reap_expired_leases: task run % skipped: % (%)', v_candidate.id, v_error, v_state;
            END;
        END;
    END LOOP;
    RETURN v_reaped;
END;
$$;
COMMENT ON FUNCTION flowforge._reap_task_leases(uuid[], integer, timestamptz) IS
  'Internal (duty): reaps up to p_max expired task leases of the given organizations (all when NULL), oldest expiry '
  'first, each in a subtransaction (a row that cannot be reaped fails for good with the reason); returns how many.';

CREATE OR REPLACE FUNCTION flowforge.reap_expired_leases(max_rows integer DEFAULT 1000) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF reap_expired_leases.max_rows IS NULL OR reap_expired_leases.max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be at least 1' USING ERRCODE = 'FF003', HINT = 'The default, 1000, suits a timer.';
    END IF;
    RETURN flowforge._reap_task_leases(NULL, reap_expired_leases.max_rows, flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.reap_expired_leases(integer) IS
  'reap_expired_leases(max_rows int default 1000) -> int. For every organization: running tasks whose lease expired '
  '(or whose timeout passed) get a new fencing token and go back to ready after backoff with attempt + 1, or fail '
  'for good when no attempts are left (dependents skipped, run settled). A pushed task no consumer took within its '
  'dispatch lease is dispatched again at once without using an attempt. Events: lease_expired / timed_out. A task '
  'completed, heartbeaten or locked meanwhile is left alone; a row that cannot be reaped (an error) fails for good '
  'with the reason instead, and never stops the others. Returns how many were reaped. Errors: FF003 max_rows < 1; FF008 a gateway login calling it without a '
  'valid token (the rows it writes record their actor).';
SELECT flowforge._rights('flowforge.reap_expired_leases(integer)', 'flowforge_system', '{flowforge_daemon}');
