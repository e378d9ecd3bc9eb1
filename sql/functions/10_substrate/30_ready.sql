

-- Readiness: what happens once tasks of a run became ready — the one call
-- every transition that makes work ready ends with.

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

-- Tasks of a run became ready (start, dependents released, a retry, a run
-- retried): those due now on a push queue are dispatched in this same
-- transaction, and pull workers are woken only when something is left for
-- them — a push-only dispatch wakes nobody but the daemon. Ready work whose
-- time has not come (a retry in backoff) is picked up later by tick() and by
-- polling workers.
CREATE OR REPLACE FUNCTION flowforge._tasks_ready(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- Fanning tasks fan out rather than wait for a worker (one probe of
    -- idx_taskrun_fanout_ready, nearly always empty).
    IF EXISTS (SELECT 1 FROM flowforge.task_run tr WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org
                                                     AND tr.state = 'ready' AND tr.fans_out) THEN
        PERFORM flowforge._dag_fan_out(p_org, p_run_id, p_now);
    END IF;
    -- An organization without push queues pays one probe of an empty partial index and nothing more.
    IF NOT EXISTS (SELECT 1 FROM flowforge.queue q WHERE q.organization_id = p_org AND q.exchange IS NOT NULL) THEN
        PERFORM flowforge._notify_ready();
        RETURN;
    END IF;
    PERFORM flowforge._dispatch_run(p_org, p_run_id, p_now);
    IF EXISTS (SELECT 1 FROM flowforge.task_run tr
               WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org AND tr.state = 'ready'
                 AND tr.ready_at <= p_now) THEN
        PERFORM flowforge._notify_ready();
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._tasks_ready(uuid, uuid, timestamptz) IS
  'Internal: tasks of run p_run_id of organization p_org became ready — fanning ones fan out, the due ones of push '
  'queues are dispatched (outbox rows, NOTIFY flowforge_outbox), and NOTIFY flowforge_ready goes out when due ready '
  'work is left for pull workers (always, when the organization has no push queue). Every statement filters on '
  'p_org.';
