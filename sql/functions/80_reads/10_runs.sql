-- Reads of runs: what the CLI and applications show, scoped to the caller's
-- organization (viewer rights). Tables stay private; these are the read API.
--
--   run_events(run_id) -> the run's history, oldest first
--   list_runs(workflow, state, max_rows) -> newest runs first
--   get_run(run_id) -> jsonb with every task run
--   resolve_run_id(prefix) -> the run id a prefix names

CREATE OR REPLACE FUNCTION flowforge.run_events(run_id uuid)
RETURNS TABLE (seq bigint, created_at timestamptz, task_run_id uuid, task_key text, kind text,
               from_state text, to_state text, attempt integer, fencing_token bigint, detail jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(run_events.run_id);
BEGIN
    PERFORM flowforge._run_engine(run_events.run_id, v_org);  -- FF001 for an unknown or foreign run
    RETURN QUERY
    SELECT e.seq, e.created_at, e.task_run_id, tr.task_key::text, e.kind::text, e.from_state::text, e.to_state::text,
           e.attempt, e.fencing_token, e.detail
    FROM (
        SELECT ev.* FROM flowforge.task_run_event ev
        WHERE ev.workflow_run_id = run_events.run_id AND ev.task_run_id IS NULL AND ev.organization_id = v_org
        UNION ALL
        SELECT ev.* FROM flowforge.task_run t
        JOIN flowforge.task_run_event ev ON ev.task_run_id = t.id
        WHERE t.workflow_run_id = run_events.run_id AND ev.organization_id = v_org
    ) e
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    ORDER BY e.created_at, e.seq;
END;
$$;
COMMENT ON FUNCTION flowforge.run_events(uuid) IS
  'run_events(run_id uuid) -> setof (seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, '
  'fencing_token, detail): the run''s history, oldest first; run-level events have task_run_id NULL. Viewer rights '
  'in the caller''s organization; the operator and flowforge_readonly read any organization''s run. '
  'Errors: FF001 no such run in the caller''s organization; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.run_events(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.list_runs(workflow text DEFAULT NULL, with_state text DEFAULT NULL, max_rows integer DEFAULT 50)
RETURNS TABLE (id uuid, workflow_name text, version integer, state text, tasks_total integer, tasks_remaining integer,
               tasks_failed integer, created_at timestamptz, started_at timestamptz, finished_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    IF list_runs.max_rows IS NULL OR list_runs.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 50.';
    END IF;
    IF list_runs.workflow IS NULL THEN
        -- Newest first through idx_wfrun_org_recent; the state filter applies as it scans.
        RETURN QUERY
        SELECT r.id, w.name::text, w.version, r.state::text, r.tasks_total, r.tasks_remaining, r.tasks_failed,
               r.created_at, r.started_at, r.finished_at
        FROM flowforge.workflow_run r
        JOIN flowforge.workflow w ON w.id = r.workflow_id
        WHERE r.organization_id = v_org
          AND (list_runs.with_state IS NULL OR r.state = list_runs.with_state)
        ORDER BY r.created_at DESC
        LIMIT list_runs.max_rows;
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM flowforge.workflow w WHERE w.organization_id = v_org AND w.name = list_runs.workflow) THEN
        RAISE EXCEPTION 'workflow % not found', quote_literal(list_runs.workflow)
            USING ERRCODE = 'FF001', HINT = 'list_workflows() shows what is defined.';
    END IF;
    -- One workflow: the newest runs of each of its versions through
    -- idx_wfrun_wf_recent (the seed's "last N runs of this workflow"), merged.
    RETURN QUERY
    SELECT r.id, w.name::text, w.version, r.state::text, r.tasks_total, r.tasks_remaining, r.tasks_failed,
           r.created_at, r.started_at, r.finished_at
    FROM flowforge.workflow w
    CROSS JOIN LATERAL (
        SELECT x.* FROM flowforge.workflow_run x
        WHERE x.workflow_id = w.id AND (list_runs.with_state IS NULL OR x.state = list_runs.with_state)
        ORDER BY x.created_at DESC
        LIMIT list_runs.max_rows) r
    WHERE w.organization_id = v_org AND w.name = list_runs.workflow
    ORDER BY r.created_at DESC
    LIMIT list_runs.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_runs(text, text, integer) IS
  'list_runs(workflow text default null, with_state text default null, max_rows int default 50) -> setof (id, workflow_name, '
  'version, state, tasks_total, tasks_remaining, tasks_failed, created_at, started_at, finished_at): the caller''s '
  'organization''s runs, newest first, optionally of one workflow (every version) and/or in one state. Viewer rights. '
  'Errors: FF001 no workflow of that name; FF003 max_rows outside 1..10000; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_runs(text,text,integer)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.get_run(run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(get_run.run_id);
    v_result jsonb;
BEGIN
    SELECT jsonb_build_object(
               'id', r.id, 'organization_id', r.organization_id, 'workflow', w.name, 'version', w.version,
               'workflow_id', w.id, 'state', r.state,
               'input', r.input, 'idempotency_key', r.idempotency_key, 'reason', r.reason,
               'tasks_total', r.tasks_total, 'tasks_remaining', r.tasks_remaining, 'tasks_failed', r.tasks_failed,
               'created_at', r.created_at, 'started_at', r.started_at, 'finished_at', r.finished_at,
               'tasks', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                 'id', tr.id, 'key', tr.task_key, 'queue', tr.queue, 'state', tr.state,
                                 'attempt', tr.attempt, 'max_attempts', tr.max_attempts,
                                 'fencing_token', tr.fencing_token, 'lease_owner', tr.lease_owner,
                                 'lease_expires_at', tr.lease_expires_at, 'ready_at', tr.ready_at,
                                 'remaining_deps', tr.remaining_deps, 'error', tr.error, 'output', tr.output,
                                 'depends_on', (SELECT coalesce(jsonb_agg(up.key ORDER BY up.key), '[]'::jsonb)
                                                FROM flowforge.task_dependency td
                                                JOIN flowforge.task up ON up.id = td.depends_on_task_id
                                                WHERE td.task_id = tr.task_id),
                                 'started_at', tr.started_at, 'finished_at', tr.finished_at)
                             ORDER BY tr.created_at, tr.task_key), '[]'::jsonb)
                         FROM flowforge.task_run tr WHERE tr.workflow_run_id = r.id))
    INTO v_result
    FROM flowforge.workflow_run r
    JOIN flowforge.workflow w ON w.id = r.workflow_id
    WHERE r.id = get_run.run_id AND r.organization_id = v_org;
    IF v_result IS NULL THEN
        PERFORM flowforge._run_not_found(get_run.run_id::text);
    END IF;
    RETURN v_result;
END;
$$;
COMMENT ON FUNCTION flowforge.get_run(uuid) IS
  'get_run(run_id uuid) -> jsonb: the run (state, input, counters, times) and every task run (key, queue, state, '
  'attempt, fencing_token, lease, ready_at, remaining_deps, error, output, depends_on, times). Viewer rights in the caller''s organization; the operator and flowforge_readonly read any organization''s run. '
  'Errors: FF001 no such run in the caller''s organization; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.get_run(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.resolve_run_id(id_prefix text) RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_ids uuid[];
BEGIN
    IF resolve_run_id.id_prefix IS NULL OR lower(resolve_run_id.id_prefix) !~ '^[0-9a-f-]{4,36}$'
       OR length(replace(resolve_run_id.id_prefix, '-', '')) > 32 THEN
        RAISE EXCEPTION 'a run id or its first 4+ hex digits, got %', coalesce(quote_literal(resolve_run_id.id_prefix), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'flowforge.list_runs() shows run ids.';
    END IF;
    v_ids := flowforge._runs_by_prefix(resolve_run_id.id_prefix,
                                       CASE WHEN flowforge._is_read_operator() THEN NULL
                                            ELSE flowforge._authorize('viewer') END);
    IF v_ids IS NULL THEN
        PERFORM flowforge._run_not_found(resolve_run_id.id_prefix::text);
    END IF;
    IF cardinality(v_ids) > 1 THEN
        RAISE EXCEPTION 'run id prefix % is ambiguous', resolve_run_id.id_prefix
            USING ERRCODE = 'FF003', HINT = 'Type more of the id.';
    END IF;
    RETURN v_ids[1];
END;
$$;
COMMENT ON FUNCTION flowforge.resolve_run_id(text) IS
  'resolve_run_id(id_prefix text) -> uuid: the caller''s run whose id starts with the prefix (4+ hex digits, or the '
  'whole id), found by a primary-key range. Viewer rights; the operator and flowforge_readonly resolve across '
  'organizations. Errors: FF001 none; FF003 ambiguous or not an id prefix; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.resolve_run_id(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');
