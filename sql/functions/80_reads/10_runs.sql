-- Reads of runs: what the CLI and applications show, scoped to the caller's
-- organization (viewer rights). Tables stay private; these are the read API.
--
-- The member role reads only the runs it created (seed 002); viewer, admin
-- and owner the whole organization (_authorize_scoped, _authorize_run_read).
--
--   run_events(run_id) -> the run's history, oldest first
--   list_runs(workflow, with_state, max_rows, after, include_deleted, of_kind, creator, trigger_name)
--     -> newest runs first, keyset pages
--   get_run(run_id) -> jsonb with every task run
--   resolve_run_id(prefix) -> the run id a prefix names

CREATE OR REPLACE FUNCTION flowforge.run_events(run_id uuid)
RETURNS TABLE (seq bigint, created_at timestamptz, task_run_id uuid, task_key text, kind text,
               from_state text, to_state text, attempt integer, fencing_token bigint, detail jsonb, work_item_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(run_events.run_id);
BEGIN
    PERFORM flowforge._run_engine(run_events.run_id, v_org);  -- FF001 for an unknown or foreign run
    -- Run-level and work-item events carry the run id (idx_event_run_level);
    -- a DAG task's events are found through its task runs (idx_event_taskrun_created).
    RETURN QUERY
    -- A fan-out child is shown with its element: resize[17].
    SELECT e.seq, e.created_at, e.task_run_id,
           coalesce(tr.task_key::text, w.task_name || coalesce('[' || w.item_index || ']', '')), e.kind::text,
           e.from_state::text, e.to_state::text, e.attempt, e.fencing_token, e.detail, e.work_item_id
    FROM (
        SELECT ev.* FROM flowforge.task_run_event ev
        WHERE ev.workflow_run_id = run_events.run_id AND ev.task_run_id IS NULL AND ev.organization_id = v_org
        UNION ALL
        SELECT ev.* FROM flowforge.task_run t
        JOIN flowforge.task_run_event ev ON ev.task_run_id = t.id
        WHERE t.workflow_run_id = run_events.run_id AND t.organization_id = v_org AND ev.organization_id = v_org
    ) e
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id AND tr.organization_id = v_org
    LEFT JOIN flowforge.work_item w ON w.id = e.work_item_id AND w.organization_id = v_org
    ORDER BY e.created_at, e.seq;
END;
$$;
COMMENT ON FUNCTION flowforge.run_events(uuid) IS
  'run_events(run_id uuid) -> setof (seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, '
  'fencing_token, detail, work_item_id): the history of a run of any engine, oldest first — run-level events (no '
  'task run, no work item), a DAG task''s (task_run_id, task_key) and a work item''s (work_item_id, task_key = its '
  'task name; a fan-out child''s with its element, such as resize[17]). Oldest first: a run''s history is read whole, '
  'like a log (the one listing that is not newest-first). Viewer rights in the caller''s organization (the member '
  'role: the runs it created); the operator and flowforge_readonly read any organization''s run. Errors: FF001 no '
  'such run in the caller''s organization (for a member: none of its own); FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.run_events(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.list_runs(workflow text DEFAULT NULL, with_state text DEFAULT NULL,
                                               max_rows integer DEFAULT 50, after text DEFAULT NULL,
                                               include_deleted boolean DEFAULT false, of_kind text DEFAULT NULL,
                                               creator text DEFAULT NULL, trigger_name text DEFAULT NULL)
RETURNS TABLE (id uuid, workflow_name text, version integer, state text, tasks_total integer, tasks_remaining integer,
               tasks_failed integer, created_at timestamptz, started_at timestamptz, finished_at timestamptz,
               kind text, created_by text, triggered_by text, deleted_at timestamptz, cursor text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
-- Planned for each call's values: which filters are set decides the index.
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_scope constant record := flowforge._authorize_scoped('viewer');
    v_org constant uuid := v_scope.organization_id;
    v_after constant record := flowforge._cursor_position('runs', list_runs.after);
BEGIN
    IF list_runs.max_rows IS NULL OR list_runs.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 50.';
    END IF;
    IF list_runs.of_kind IS NOT NULL AND list_runs.of_kind NOT IN ('dag', 'graph', 'statemachine') THEN
        RAISE EXCEPTION 'of_kind must be dag, graph or statemachine, got %', quote_literal(list_runs.of_kind)
            USING ERRCODE = 'FF003', HINT = 'Leave it NULL for runs of every engine.';
    END IF;
    IF list_runs.after IS NOT NULL AND (v_after.at IS NULL OR v_after.id IS NULL) THEN
        PERFORM flowforge._invalid_cursor('runs');
    END IF;
    IF list_runs.workflow IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM flowforge.workflow w WHERE w.organization_id = v_org AND w.name = list_runs.workflow) THEN
        RAISE EXCEPTION 'workflow % not found', quote_literal(list_runs.workflow)
            USING ERRCODE = 'FF001', HINT = 'list_workflows() shows what is defined.';
    END IF;
    -- Every engine's runs through the directory, newest first, from one ordered
    -- range of an index: the organization's (engine_run_tenant_created), a
    -- member's or one creator's (engine_run_tenant_creator_created), one
    -- workflow's, every version (engine_run_tenant_definition_created), one
    -- trigger's (engine_run_tenant_trigger_created). The cursor is a bound of
    -- that range; the other filters drop rows from it, never re-sort it.
    RETURN QUERY
    SELECT e.run_id, w.name::text, w.version, coalesce(r.state, g.status, m.status)::text, r.tasks_total,
           r.tasks_remaining, r.tasks_failed, e.created_at, coalesce(r.started_at, g.started_at, m.started_at),
           coalesce(r.finished_at, g.finished_at, m.finished_at), e.engine_kind::text, e.created_by,
           e.triggered_by::text, e.deleted_at, flowforge._cursor('runs', e.created_at, e.id)
    FROM flowforge.engine_run e
    LEFT JOIN flowforge.workflow w ON w.id = e.definition_id
    LEFT JOIN flowforge.workflow_run r ON e.engine_kind = 'dag' AND r.id = e.run_id
    LEFT JOIN flowforge.graph_run g ON e.engine_kind = 'graph' AND g.organization_id = v_org AND g.run_id = e.run_id
    LEFT JOIN flowforge.machine_run m ON e.engine_kind = 'statemachine' AND m.organization_id = v_org
                                         AND m.run_id = e.run_id
    WHERE e.organization_id = v_org
      AND (v_scope.creator IS NULL OR e.created_by = v_scope.creator)
      AND (list_runs.creator IS NULL OR e.created_by = list_runs.creator)
      AND (list_runs.workflow IS NULL OR e.definition_name = list_runs.workflow)
      AND (list_runs.trigger_name IS NULL OR e.triggered_by = list_runs.trigger_name)
      AND (list_runs.of_kind IS NULL OR e.engine_kind = list_runs.of_kind)
      AND (list_runs.include_deleted OR e.deleted_at IS NULL)
      AND (v_after.at IS NULL OR (e.created_at, e.id) < (v_after.at, v_after.id))
      AND (list_runs.with_state IS NULL OR coalesce(r.state, g.status, m.status) = list_runs.with_state)
    ORDER BY e.created_at DESC, e.id DESC
    LIMIT list_runs.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_runs(text, text, integer, text, boolean, text, text, text) IS
  'list_runs(workflow text default null, with_state text default null, max_rows int default 50, after text default '
  'null, include_deleted boolean default false, of_kind text default null, creator text default null, trigger_name '
  'text default null) -> setof (id, workflow_name, version, state, tasks_total, tasks_remaining, tasks_failed, '
  'created_at, started_at, finished_at, kind, created_by, triggered_by, deleted_at, cursor): runs of every engine of '
  'the caller''s organization, newest first (created_at desc, id desc) — for the member role only the runs it created '
  '(created_by = the caller: its login, or its API key''s prefix); viewer, admin and owner read the whole '
  'organization. Filters (combined with AND): workflow (every version), with_state, of_kind (dag, graph, '
  'statemachine), creator, trigger_name (the trigger that started it); deleted runs only with include_deleted => '
  'true. Keyset pages: pass the last row''s cursor as after for the rows that follow it (rows started meanwhile '
  'never repeat or shift a page). The task counters are a DAG''s (NULL for other kinds). Viewer rights. Errors: '
  'FF001 no workflow of that name; FF003 max_rows outside 1..10000, an unknown of_kind, or a cursor that is not one '
  'of this listing''s; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_runs(text,text,integer,text,boolean,text,text,text)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.get_run(run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(get_run.run_id);
    v_kind constant text := flowforge._run_engine(get_run.run_id, v_org);
BEGIN
    -- The engine that owns the run describes it; the directory says what caused it.
    RETURN flowforge._run_detail(v_kind, v_org, get_run.run_id)
        || (SELECT jsonb_build_object('kind', e.engine_kind, 'organization_id', e.organization_id,
                                      'parent_run_id', e.parent_run_id, 'triggered_by', e.triggered_by,
                                      'trigger_firing_id', e.trigger_firing_id, 'created_by', e.created_by,
                                      'ended_at', e.ended_at, 'updated_at', e.updated_at, 'updated_by', e.updated_by,
                                      'deleted_at', e.deleted_at, 'deleted_by', e.deleted_by)
            FROM flowforge.engine_run e WHERE e.organization_id = v_org AND e.run_id = get_run.run_id);
END;
$$;
COMMENT ON FUNCTION flowforge.get_run(uuid) IS
  'get_run(run_id uuid) -> jsonb: a run of any engine — kind, its cause and ownership from the directory '
  '(parent_run_id, triggered_by, trigger_firing_id, created_by, ended_at, updated_at, updated_by, deleted_at, '
  'deleted_by: a deleted run reads as before), and its engine''s detail: for a dag the run (state, input, '
  'counters, times) and every task run (key, queue, state, attempt, fencing_token, lease, ready_at, remaining_deps, '
  'error, output, depends_on, times); for a graph its status, reason, error, position, steps, max_steps, data, input, '
  'path (the nodes walked, in order), run_counts (visits per node) and its most recent work items. Viewer rights in '
  'the caller''s organization (the member role: the runs it created); the operator and flowforge_readonly read any '
  'organization''s run. Errors: FF001 no such run in the caller''s organization (for a member: none of its own); '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.get_run(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.resolve_run_id(id_prefix text) RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_ids uuid[];
    v_scope record;
BEGIN
    IF resolve_run_id.id_prefix IS NULL OR lower(resolve_run_id.id_prefix) !~ '^[0-9a-f-]{4,36}$'
       OR length(replace(resolve_run_id.id_prefix, '-', '')) > 32 THEN
        RAISE EXCEPTION 'a run id or its first 4+ hex digits, got %', coalesce(quote_literal(resolve_run_id.id_prefix), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'flowforge.list_runs() shows run ids.';
    END IF;
    IF flowforge._is_read_operator() THEN
        v_ids := flowforge._runs_by_prefix(resolve_run_id.id_prefix, NULL, NULL);
    ELSE
        v_scope := flowforge._authorize_scoped('viewer');
        v_ids := flowforge._runs_by_prefix(resolve_run_id.id_prefix, v_scope.organization_id, v_scope.creator);
    END IF;
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
  'whole id), found by a primary-key range. Viewer rights (the member role: among the runs it created); the operator and flowforge_readonly resolve across '
  'organizations. Errors: FF001 none; FF003 ambiguous or not an id prefix; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.resolve_run_id(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway,flowforge_readonly}');
