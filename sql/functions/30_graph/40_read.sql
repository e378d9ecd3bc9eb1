-- What get_run shows of a graph run: where it is, how it got there.

CREATE OR REPLACE FUNCTION flowforge._graph_run_detail(p_org uuid, p_run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN (
        SELECT jsonb_build_object(
                   'id', g.run_id, 'workflow', w.name, 'version', w.version, 'workflow_id', w.id, 'state', g.status,
                   'reason', g.reason, 'error', g.error, 'position', g.task, 'steps', g.steps,
                   'max_steps', g.max_steps, 'data', g.state, 'input', g.input, 'idempotency_key', g.idempotency_key,
                   'created_at', g.created_at, 'started_at', g.started_at, 'finished_at', g.finished_at,
                   -- The seed's path and run_counts, read from their rows.
                   'path', (SELECT coalesce(jsonb_agg(s.node ORDER BY s.step), '[]') FROM flowforge.graph_step s
                            WHERE s.organization_id = p_org AND s.run_id = g.run_id),
                   'run_counts', (SELECT coalesce(jsonb_object_agg(v.node, v.visits), '{}') FROM flowforge.graph_visit v
                                  WHERE v.organization_id = p_org AND v.run_id = g.run_id),
                   'fan_outs', (SELECT coalesce(jsonb_object_agg(c.node_name,
                                                                 flowforge._fanout_detail(p_org, g.run_id, c.node_name)),
                                                '{}')
                                FROM flowforge.checkpoint c WHERE c.organization_id = p_org AND c.run_id = g.run_id),
                   'items', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                     'id', i.id, 'node', i.task_name, 'queue', i.queue, 'status', i.status,
                                     'attempt', i.retry_count + 1, 'max_attempts', i.max_retries + 1,
                                     'fencing_token', i.fencing_token, 'agent', i.agent_id,
                                     'lease_expires_at', i.lease_expires_at, 'next_attempt_at', i.next_attempt_at,
                                     'affinity_key', i.affinity_key, 'worker_params', i.worker_params,
                                     'error', i.error, 'output', i.output, 'created_at', i.created_at,
                                     'dispatched_at', i.dispatched_at, 'completed_at', i.completed_at)
                                 ORDER BY i.created_at DESC, i.id DESC), '[]')
                             FROM (SELECT * FROM flowforge.work_item x
                                   WHERE x.organization_id = p_org AND x.run_id = g.run_id
                                   ORDER BY x.created_at DESC, x.id DESC LIMIT 50) i))
        FROM flowforge.graph_run g
        JOIN flowforge.workflow w ON w.id = g.definition_id AND w.organization_id = p_org
        WHERE g.organization_id = p_org AND g.run_id = p_run_id);
END;
$$;
COMMENT ON FUNCTION flowforge._graph_run_detail(uuid, uuid) IS
  'Internal (graph hook): get_run''s view of a graph run — status, position, steps, data, path, run_counts, the '
  'progress of its fanning nodes (fan_outs) and its 50 most recent work items.';
