-- Duty: the work-item lease reaper — reap_expired_leases' twin for the
-- work-item queue: a dispatched item whose lease expired (or whose timeout
-- passed) goes back to pending after backoff, or fails for good, through its
-- engine's hooks; one bad row never stops the others.

CREATE OR REPLACE FUNCTION flowforge._reap_one_item(p_org uuid, p_item_id uuid, p_now timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
BEGIN
    SELECT w.organization_id, w.run_id INTO v_item FROM flowforge.work_item w
    WHERE w.id = p_item_id AND w.organization_id = p_org;
    -- Lock order: the run first; a busy run is left for the next tick.
    IF NOT flowforge._try_lock_run(v_item.organization_id, v_item.run_id) THEN
        RETURN false;
    END IF;
    UPDATE flowforge.work_item w
    SET status = CASE WHEN flowforge._retries_left(true, w.retry_count + 1, w.max_retries + 1) THEN 'pending' ELSE 'failed' END,
        retry_count = CASE WHEN flowforge._retries_left(true, w.retry_count + 1, w.max_retries + 1)
                           THEN w.retry_count + 1 ELSE w.retry_count END,
        fencing_token = w.fencing_token + 1,
        next_attempt_at = CASE WHEN flowforge._retries_left(true, w.retry_count + 1, w.max_retries + 1)
                               THEN p_now + flowforge._backoff(w.backoff, w.backoff_factor, w.max_backoff, w.retry_count + 1)
                               ELSE w.next_attempt_at END,
        completed_at = CASE WHEN flowforge._retries_left(true, w.retry_count + 1, w.max_retries + 1) THEN NULL ELSE p_now END,
        lease_expires_at = NULL,
        error = CASE WHEN w.dispatched_at + w.timeout <= p_now THEN format('timed out after %s', w.timeout)
                     ELSE format('lease expired (held by %s)', w.leased_by) END
    WHERE w.id = p_item_id AND w.organization_id = p_org AND w.status = 'dispatched' AND w.lease_expires_at < p_now
    RETURNING w.organization_id, w.run_id, flowforge._unit_kind(w.engine_kind, w.checkpoint_id) AS engine_kind,
              w.task_id, w.status, w.retry_count, w.fencing_token,
              w.next_attempt_at, w.error, (w.dispatched_at + w.timeout <= p_now) IS TRUE AS timed_out
    INTO v_item;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM flowforge._append_events(v_item.organization_id, v_item.run_id,
        CASE WHEN v_item.timed_out THEN 'timed_out' ELSE 'lease_expired' END,
        ARRAY[NULL::uuid], ARRAY['dispatched'], ARRAY[v_item.status::text], ARRAY[v_item.fencing_token],
        ARRAY[v_item.retry_count + 1],
        ARRAY[jsonb_build_object('error', v_item.error)
              || CASE WHEN v_item.status = 'pending' THEN jsonb_build_object('next_attempt_at', v_item.next_attempt_at)
                      ELSE '{}' END],
        p_now, ARRAY[p_item_id]);
    IF v_item.status = 'failed' THEN
        PERFORM flowforge._on_task_failed_for_good(v_item.engine_kind, v_item.organization_id, v_item.run_id, p_item_id,
                                                   v_item.task_id, p_now);
    ELSE
        PERFORM flowforge._on_task_requeued(v_item.engine_kind, v_item.organization_id, v_item.run_id, p_item_id,
                                            v_item.task_id, p_now);
    END IF;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._reap_one_item(uuid, uuid, timestamptz) IS
  'Internal: reaps one expired work-item lease of organization p_org (every statement filters on it) under its run''s lock (SKIP LOCKED: false when busy) — '
  'pending again after backoff or failed for good — with its event and the engine hook.';

CREATE OR REPLACE FUNCTION flowforge._reap_work_items(p_orgs uuid[], p_max integer, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_reaped integer := 0;
    v_candidate record;
    v_error text;
BEGIN
    -- Oldest expiry first, through work_item_lease_idx.
    FOR v_candidate IN
        SELECT w.id, w.organization_id FROM flowforge.work_item w
        WHERE w.status = 'dispatched' AND w.lease_expires_at < p_now
          AND (p_orgs IS NULL OR w.organization_id = ANY (p_orgs))
        ORDER BY w.lease_expires_at
        LIMIT p_max
    LOOP
        BEGIN
            IF flowforge._reap_one_item(v_candidate.organization_id, v_candidate.id, p_now) THEN
                v_reaped := v_reaped + 1;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            RAISE WARNING 'reaping work item % skipped: %', v_candidate.id, v_error;
        END;
    END LOOP;
    RETURN v_reaped;
END;
$$;
COMMENT ON FUNCTION flowforge._reap_work_items(uuid[], integer, timestamptz) IS
  'Internal (duty): reaps up to p_max expired work-item leases of the given organizations (all when NULL), each in '
  'a subtransaction; returns how many.';
