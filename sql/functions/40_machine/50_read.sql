-- What get_run shows of a machine run: where it rests, what it carries, how
-- it got there.

CREATE OR REPLACE FUNCTION flowforge._machine_run_detail(p_org uuid, p_run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    c_history_shown constant integer := 100;
BEGIN
    RETURN (
        SELECT jsonb_build_object(
                   'id', m.run_id, 'workflow', w.name, 'version', w.version, 'workflow_id', w.id, 'state', m.status,
                   'machine_state', m.state, 'context', m.context, 'live', m.live, 'suspended', m.suspended,
                   'failure', m.failure, 'reason', m.reason, 'transitions', m.transitions,
                   'history_length', m.history_length, 'input', m.input, 'idempotency_key', m.idempotency_key,
                   'created_at', m.created_at, 'started_at', m.started_at, 'finished_at', m.finished_at,
                   'action_item_id', m.action_item_id,
                   -- The seed's history (states visited, in order), read from its rows: the most recent entries.
                   'history', (SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                       'n', h.n, 'cause', h.cause, 'outcome', h.outcome, 'event', h.event,
                                       'event_id', h.event_id, 'from', h.from_state, 'to', h.to_state,
                                       'at', h.created_at, 'detail', h.detail)) ORDER BY h.n), '[]')
                               FROM (SELECT * FROM flowforge.machine_transition x
                                     WHERE x.run_id = m.run_id AND x.organization_id = p_org
                                     ORDER BY x.n DESC LIMIT c_history_shown) h),
                   'queued', (SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                      'seq', q.seq, 'event', q.event, 'event_id', q.event_id, 'payload', q.payload,
                                      'received_at', q.received_at)) ORDER BY q.seq), '[]')
                              FROM flowforge.machine_event_queue q WHERE q.run_id = m.run_id),
                   'timers', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                      'target', t.target, 'delay', t.delay, 'fire_at', t.fire_at) ORDER BY t.fire_at,
                                      t.position), '[]')
                              FROM flowforge.machine_timer t WHERE t.run_id = m.run_id),
                   'items', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                     'id', i.id, 'task', i.task_name, 'state', st.key, 'queue', i.queue,
                                     'status', i.status, 'attempt', i.retry_count + 1, 'max_attempts', i.max_retries + 1,
                                     'fencing_token', i.fencing_token, 'agent', i.agent_id,
                                     'lease_expires_at', i.lease_expires_at, 'next_attempt_at', i.next_attempt_at,
                                     'error', i.error, 'output', i.output, 'created_at', i.created_at,
                                     'dispatched_at', i.dispatched_at, 'completed_at', i.completed_at)
                                 ORDER BY i.created_at DESC, i.id DESC), '[]')
                             FROM (SELECT * FROM flowforge.work_item x
                                   WHERE x.organization_id = p_org AND x.run_id = m.run_id
                                   ORDER BY x.created_at DESC, x.id DESC LIMIT 50) i
                             LEFT JOIN flowforge.task st ON st.id = i.task_id))
        FROM flowforge.machine_run m
        JOIN flowforge.workflow w ON w.id = m.definition_id
        WHERE m.organization_id = p_org AND m.run_id = p_run_id);
END;
$$;
COMMENT ON FUNCTION flowforge._machine_run_detail(uuid, uuid) IS
  'Internal (statemachine hook): get_run''s view of a machine run — state (the run''s status: running, succeeded, '
  'failed, cancelled), machine_state (the state it rests in), context, live, suspended, failure, reason, counters, '
  'its 100 most recent history entries (oldest first; run_events has all), queued events, pending timers and its 50 '
  'most recent work items.';
