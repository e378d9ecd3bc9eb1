-- History: the append-only task_run_event rows every transition writes.

-- The one place a history row is built: its column list is here (and in the
-- measured fast paths — claim, claim_work, complete, complete_many — whose inline inserts
-- the profile justified; tests/sql/00_catalog/contracts.sql allows no other
-- INSERT into task_run_event, and the twin tests keep the copies in step).
-- One call appends a set of events of one kind for one run; a run-level
-- event has a NULL task run.
CREATE OR REPLACE FUNCTION flowforge._append_events(p_org uuid, p_run_id uuid, p_kind text, p_task_run_ids uuid[],
                                                    p_from text[], p_to text[], p_tokens bigint[], p_attempts integer[],
                                                    p_details jsonb[], p_now timestamptz,
                                                    p_work_item_ids uuid[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_appended integer;
BEGIN
    INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, work_item_id, kind, from_state,
                                          to_state, fencing_token, attempt, detail, created_at)
    SELECT p_org, p_run_id, e.task_run_id, e.work_item_id, p_kind, e.from_state, e.to_state, e.fencing_token, e.attempt,
           e.detail, p_now
    FROM unnest(p_task_run_ids, p_from, p_to, p_tokens, p_attempts, p_details,
                coalesce(p_work_item_ids, array_fill(NULL::uuid, ARRAY[cardinality(p_from)])))
         AS e(task_run_id, from_state, to_state, fencing_token, attempt, detail, work_item_id);
    GET DIAGNOSTICS v_appended = ROW_COUNT;
    RETURN v_appended;
END;
$$;
COMMENT ON FUNCTION flowforge._append_events(uuid, uuid, text, uuid[], text[], text[], bigint[], integer[], jsonb[], timestamptz, uuid[]) IS
  'Internal: appends one task_run_event per element of the parallel arrays (task run, from state, to state, fencing '
  'token, attempt, detail, and optionally work item), all of kind p_kind for run p_run_id (of any engine) at p_now; '
  'with neither a task run nor a work item it is a run-level event. Returns how many were appended.';
