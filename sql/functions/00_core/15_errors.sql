-- Raisers shared by every family: one message and one SQLSTATE per kind of refusal.
-- Each never returns. The codes are the contract (docs/errors.md); messages are for people.

-- Raise FF002 (invalid definition) with a message naming what is wrong.
CREATE OR REPLACE FUNCTION flowforge._invalid_definition(p_message text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'invalid workflow definition: %', p_message
        USING ERRCODE = 'FF002',
              HINT = 'Fix the spec and define it again; nothing was written. See docs/execution-model.md for the spec format.';
END;
$$;
COMMENT ON FUNCTION flowforge._invalid_definition(text) IS
  'Internal: raises FF002 with the given message. Never returns.';

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
    SELECT tr.state, tr.fencing_token, tr.started_at, tr.timeout, tr.lease_owner INTO v_row
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
    IF v_row.state = 'running' AND v_row.lease_owner = flowforge._fanout_holder() THEN
        RAISE EXCEPTION '% refused: task run % fans out; its children report, no worker holds it', p_operation,
            p_task_run_id
            USING ERRCODE = 'FF004', HINT = 'Handle its children (work items, claim_work); drop this write.';
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
  'Internal: raises FF001 (no such task run in this organization), FF004 (stale fencing token, timed out, or held '
  'by its fan-out) or FF005 (token current but the task is not running). Never returns.';

-- Explain why a write naming (work_item_id, fencing_token) matched nothing:
-- the work-item twin of _refuse_task_write. Always raises.
CREATE OR REPLACE FUNCTION flowforge._refuse_item_write(p_work_item_id uuid, p_fencing_token bigint, p_operation text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row record;
BEGIN
    SELECT w.status, w.fencing_token, w.timeout, w.leased_by INTO v_row
    FROM flowforge.work_item w
    WHERE w.id = p_work_item_id AND w.organization_id = flowforge.current_organization();
    IF NOT FOUND THEN
        RAISE EXCEPTION 'work item % not found', p_work_item_id
            USING ERRCODE = 'FF001', HINT = 'Check the id; a work item of another organization is not found either.';
    END IF;
    IF v_row.fencing_token <> p_fencing_token THEN
        RAISE EXCEPTION '% refused: fencing token % of work item % is stale (the item is % under token %)',
            p_operation, p_fencing_token, p_work_item_id, v_row.status, v_row.fencing_token
            USING ERRCODE = 'FF004',
                  HINT = 'Your lease was lost (reaped, re-claimed or the run was cancelled): drop the result, do not retry the write.';
    END IF;
    IF v_row.status = 'dispatched' AND v_row.leased_by = flowforge._fanout_holder() THEN
        RAISE EXCEPTION '% refused: work item % fans out; its children report, no worker holds it', p_operation,
            p_work_item_id
            USING ERRCODE = 'FF004', HINT = 'Handle its children (claim_work); drop this write.';
    END IF;
    IF v_row.status = 'dispatched' THEN
        RAISE EXCEPTION '% refused: work item % exceeded its timeout of %', p_operation, p_work_item_id, v_row.timeout
            USING ERRCODE = 'FF004', HINT = 'The item ran past its timeout and will be reaped: drop the result.';
    END IF;
    RAISE EXCEPTION '% refused: work item % is %, not dispatched', p_operation, p_work_item_id, v_row.status
        USING ERRCODE = 'FF005',
              HINT = 'Only a dispatched item can be heartbeaten, completed or failed; this write was already made or the item was retried.';
END;
$$;
COMMENT ON FUNCTION flowforge._refuse_item_write(uuid, bigint, text) IS
  'Internal: raises FF001 (no such work item in this organization), FF004 (stale fencing token or timed out) or '
  'FF005 (token current but the item is not dispatched). Never returns.';

-- A machine refuses an event synchronously: FF012, and the caller's transaction writes nothing.
CREATE OR REPLACE FUNCTION flowforge._event_refused(p_run_id uuid, p_event text, p_reason text, p_hint text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'event "%" refused: %', p_event, p_reason
        USING ERRCODE = 'FF012', DETAIL = format('run %s', p_run_id), HINT = p_hint;
END;
$$;
COMMENT ON FUNCTION flowforge._event_refused(uuid, text, text, text) IS
  'Internal: raises FF012 (event refused: nothing was written) for event p_event of run p_run_id with the reason '
  'and a hint. Never returns.';
