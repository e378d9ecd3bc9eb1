-- What get_run shows of a DAG run (the engine describes its own runs).

CREATE OR REPLACE FUNCTION flowforge._dag_run_detail(p_org uuid, p_run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN (
        SELECT jsonb_build_object(
                   'id', r.id, 'workflow', w.name, 'version', w.version, 'workflow_id', w.id, 'state', r.state,
                   'input', r.input, 'idempotency_key', r.idempotency_key, 'reason', r.reason,
                   'tasks_total', r.tasks_total, 'tasks_remaining', r.tasks_remaining, 'tasks_failed', r.tasks_failed,
                   'created_at', r.created_at, 'started_at', r.started_at, 'finished_at', r.finished_at,
                   'tasks', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                     'id', tr.id, 'key', tr.task_key, 'queue', tr.queue, 'state', tr.state,
                                     'attempt', tr.attempt, 'max_attempts', tr.max_attempts,
                                     'fencing_token', tr.fencing_token, 'lease_owner', tr.lease_owner,
                                     'lease_expires_at', tr.lease_expires_at, 'ready_at', tr.ready_at,
                                     'remaining_deps', tr.remaining_deps, 'error', tr.error, 'output', tr.output,
                                     'affinity_key', tr.affinity_key, 'worker_params', tr.worker_params,
                                     'depends_on', (SELECT coalesce(jsonb_agg(up.key ORDER BY up.key), '[]'::jsonb)
                                                    FROM flowforge.task_dependency td
                                                    JOIN flowforge.task up ON up.id = td.depends_on_task_id
                                                                          AND up.organization_id = p_org
                                                    WHERE td.task_id = tr.task_id AND td.organization_id = p_org),
                                     'started_at', tr.started_at, 'finished_at', tr.finished_at,
                                     'fan_out', CASE WHEN tr.fans_out
                                                     THEN flowforge._fanout_detail(p_org, r.id, tr.task_key) END)
                                 ORDER BY tr.created_at, tr.task_key), '[]'::jsonb)
                             FROM flowforge.task_run tr WHERE tr.workflow_run_id = r.id AND tr.organization_id = p_org))
        FROM flowforge.workflow_run r
        JOIN flowforge.workflow w ON w.id = r.workflow_id AND w.organization_id = p_org
        WHERE r.id = p_run_id AND r.organization_id = p_org);
END;
$$;
COMMENT ON FUNCTION flowforge._dag_run_detail(uuid, uuid) IS
  'Internal (dag hook): get_run''s view of a DAG run — the run and every task run (a fanning one with its fan_out '
  'progress).';
