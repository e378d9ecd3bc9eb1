-- The run directory (seed 002's engine_run): which engine owns which run.
-- One row per run of any kind, written by the engine in the same
-- transaction as its own run row. It holds no state of its own — asked for a
-- run's detail, FlowForge asks the engine that owns it — so it cannot
-- disagree with an engine. Writing merges: a later fact (a trigger filling in
-- the cause, a parent) completes the row and never erases an earlier one;
-- ended_at is first-write-wins.

CREATE OR REPLACE FUNCTION flowforge._record_run(p_org uuid, p_run_id uuid, p_engine text, p_definition_id uuid,
                                                 p_now timestamptz, p_parent_run_id uuid DEFAULT NULL,
                                                 p_triggered_by text DEFAULT NULL, p_trigger_firing_id uuid DEFAULT NULL,
                                                 p_created_by text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.engine_run AS e (organization_id, run_id, engine_kind, definition_id, parent_run_id,
                                           triggered_by, trigger_firing_id, created_at, created_by)
    VALUES (p_org, p_run_id, p_engine, p_definition_id, p_parent_run_id, p_triggered_by, p_trigger_firing_id, p_now,
            coalesce(p_created_by, flowforge._principal()))
    ON CONFLICT ON CONSTRAINT engine_run_tenant_run_uq DO UPDATE
    SET definition_id = coalesce(e.definition_id, EXCLUDED.definition_id),
        parent_run_id = coalesce(e.parent_run_id, EXCLUDED.parent_run_id),
        triggered_by = coalesce(e.triggered_by, EXCLUDED.triggered_by),
        trigger_firing_id = coalesce(e.trigger_firing_id, EXCLUDED.trigger_firing_id),
        updated_at = EXCLUDED.created_at, updated_by = flowforge._principal()
    -- The engine never changes: a run id is one engine's forever.
    WHERE e.engine_kind = EXCLUDED.engine_kind;
END;
$$;
COMMENT ON FUNCTION flowforge._record_run(uuid, uuid, text, uuid, timestamptz, uuid, text, uuid, text) IS
  'Internal: records (or completes) the directory row of run p_run_id of engine p_engine; a field already set is '
  'kept (created_by is final: p_created_by, default the caller''s _principal(), on the first write).';

-- The run ended (succeeded, failed, cancelled): the first end is the one kept.
-- Never before the run was created: a cancel in a transaction that began
-- before the start committed has an older now().
CREATE OR REPLACE FUNCTION flowforge._record_run_ended(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- First write wins by coalesce, not by "AND ended_at IS NULL": that predicate lets a generic
    -- plan pick engine_run_live_created and walk every live run of the organization (see
    -- docs/data-model.md, engine_run); without it only the key (organization_id, run_id) fits.
    UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest(p_now, e.created_at))
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._record_run_ended(uuid, uuid, timestamptz) IS
  'Internal: stamps the directory row''s ended_at unless it already has one (first write wins).';

-- retry_run re-opens a run: it is live again, so its directory row is too.
CREATE OR REPLACE FUNCTION flowforge._record_run_reopened(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    UPDATE flowforge.engine_run e SET ended_at = NULL, updated_at = p_now, updated_by = flowforge._principal()
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._record_run_reopened(uuid, uuid, timestamptz) IS
  'Internal: a retried run is live again — clears the directory row''s ended_at.';

-- A run's lock, taken first by every writer of the run (lock order: the run,
-- then its units). A DAG run's is its workflow_run row — what claim, complete
-- and cancel_run take — so a fan-out child of a DAG run, a work item, queues
-- behind the same lock as the DAG's own tasks; every other engine's is its
-- directory row.
CREATE OR REPLACE FUNCTION flowforge._lock_run(p_org uuid, p_run_id uuid) RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_engine text;
BEGIN
    SELECT e.engine_kind INTO v_engine
    FROM flowforge.engine_run e
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
    IF v_engine = 'dag' THEN
        PERFORM 1 FROM flowforge.workflow_run r WHERE r.id = p_run_id AND r.organization_id = p_org FOR NO KEY UPDATE;
    ELSIF v_engine IS NOT NULL THEN
        PERFORM 1 FROM flowforge.engine_run e
        WHERE e.organization_id = p_org AND e.run_id = p_run_id
        FOR NO KEY UPDATE;
    END IF;
    RETURN v_engine;
END;
$$;
COMMENT ON FUNCTION flowforge._lock_run(uuid, uuid) IS
  'Internal: locks (FOR NO KEY UPDATE) run p_run_id — its workflow_run row for a DAG, its directory row otherwise — '
  'and returns its engine kind; NULL when there is no such run in p_org.';

-- The same lock, without waiting: the periodic duties leave a busy run for the next tick.
CREATE OR REPLACE FUNCTION flowforge._try_lock_run(p_org uuid, p_run_id uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_engine text;
BEGIN
    SELECT e.engine_kind INTO v_engine
    FROM flowforge.engine_run e
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
    IF v_engine = 'dag' THEN
        PERFORM 1 FROM flowforge.workflow_run r WHERE r.id = p_run_id AND r.organization_id = p_org
        FOR NO KEY UPDATE SKIP LOCKED;
    ELSE
        PERFORM 1 FROM flowforge.engine_run e
        WHERE e.organization_id = p_org AND e.run_id = p_run_id
        FOR NO KEY UPDATE SKIP LOCKED;
    END IF;
    RETURN FOUND;
END;
$$;
COMMENT ON FUNCTION flowforge._try_lock_run(uuid, uuid) IS
  'Internal: _lock_run with SKIP LOCKED — true when run p_run_id of p_org is now locked by this transaction, false '
  'when another holds it (or there is no such run).';

CREATE OR REPLACE FUNCTION flowforge.resolve_run(run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(resolve_run.run_id);
    v_result jsonb;
BEGIN
    SELECT jsonb_build_object('run_id', e.run_id, 'organization_id', e.organization_id, 'engine_kind', e.engine_kind,
                              'definition_id', e.definition_id, 'definition', w.name, 'version', w.version,
                              'parent_run_id', e.parent_run_id, 'triggered_by', e.triggered_by,
                              'trigger_firing_id', e.trigger_firing_id, 'created_at', e.created_at,
                              'created_by', e.created_by, 'ended_at', e.ended_at, 'deleted_at', e.deleted_at,
                              'deleted_by', e.deleted_by)
    INTO v_result
    FROM flowforge.engine_run e
    LEFT JOIN flowforge.workflow w ON w.id = e.definition_id
    WHERE e.organization_id = v_org AND e.run_id = resolve_run.run_id;
    IF v_result IS NULL THEN
        PERFORM flowforge._run_not_found(resolve_run.run_id::text);
    END IF;
    RETURN v_result;
END;
$$;
COMMENT ON FUNCTION flowforge.resolve_run(uuid) IS
  'resolve_run(run_id uuid) -> jsonb {run_id, organization_id, engine_kind, definition_id, definition, version, '
  'parent_run_id, triggered_by, trigger_firing_id, created_at, created_by, ended_at, deleted_at, deleted_by}: the run '
  'directory''s row — which engine ran it, what it ran, what caused it, who started it, when it ended (NULL while '
  'live), whether it was deleted. Viewer rights (the member role: the runs it created); the operator and '
  'flowforge_readonly resolve any organization''s run. Errors: FF001 no such run (for a member: none of its own); '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.resolve_run(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');
