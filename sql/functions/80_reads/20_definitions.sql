-- Reads of definitions (viewer rights).
--
--   list_workflows(max_rows, after, include_deleted) -> latest version of each workflow, newest first
--   get_workflow(name, version) -> jsonb

CREATE OR REPLACE FUNCTION flowforge.list_workflows(max_rows integer DEFAULT 1000, after text DEFAULT NULL,
                                                    include_deleted boolean DEFAULT false)
RETURNS TABLE (name text, version integer, id uuid, kind text, tasks integer, created_at timestamptz,
               created_by text, deleted_at timestamptz, cursor text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_after constant record := flowforge._cursor_position('workflows', list_workflows.after);
BEGIN
    IF list_workflows.max_rows IS NULL OR list_workflows.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 1000.';
    END IF;
    IF list_workflows.after IS NOT NULL AND (v_after.at IS NULL OR v_after.id IS NULL) THEN
        PERFORM flowforge._invalid_cursor('workflows');
    END IF;
    -- Each name's latest version (superseded_at IS NULL), newest first: one
    -- ordered range of workflow_tenant_latest_created.
    RETURN QUERY
    SELECT w.name::text, w.version, w.id, w.kind::text, jsonb_array_length(coalesce(w.spec -> 'tasks', w.spec -> 'nodes')),
           w.created_at, w.created_by, w.deleted_at, flowforge._cursor('workflows', w.created_at, w.id)
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org AND w.superseded_at IS NULL
      AND (list_workflows.include_deleted OR w.deleted_at IS NULL)
      AND (v_after.at IS NULL OR (w.created_at, w.id) < (v_after.at, v_after.id))
    ORDER BY w.created_at DESC, w.id DESC
    LIMIT list_workflows.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_workflows(integer, text, boolean) IS
  'list_workflows(max_rows int default 1000, after text default null, include_deleted boolean default false) -> '
  'setof (name, version, id, kind, tasks, created_at, created_by, deleted_at, cursor): the latest version of every '
  'workflow of the caller''s organization, newest first (created_at desc, id desc), deleted ones only with '
  'include_deleted => true. Keyset pages: pass the last row''s cursor as after. Viewer rights. Errors: FF003 '
  'max_rows outside 1..10000 or a cursor that is not one of this listing''s; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_workflows(integer,text,boolean)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.get_workflow(name text, version integer DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_result jsonb;
BEGIN
    SELECT jsonb_build_object('id', w.id, 'name', w.name, 'version', w.version, 'kind', w.kind,
                              'created_at', w.created_at, 'created_by', w.created_by,
                              'superseded_at', w.superseded_at, 'deleted_at', w.deleted_at,
                              'deleted_by', w.deleted_by, 'spec', w.spec,
                              'versions', (SELECT count(*) FROM flowforge.workflow v
                                           WHERE v.organization_id = v_org AND v.name = w.name))
    INTO v_result
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org AND w.name = get_workflow.name
      AND (get_workflow.version IS NULL OR w.version = get_workflow.version)
    ORDER BY w.version DESC
    LIMIT 1;
    IF v_result IS NULL THEN
        RAISE EXCEPTION 'workflow % not found', coalesce(quote_literal(get_workflow.name), 'NULL')
                        || coalesce(' version ' || get_workflow.version, '')
            USING ERRCODE = 'FF001', HINT = 'list_workflows() shows what is defined.';
    END IF;
    RETURN v_result;
END;
$$;
COMMENT ON FUNCTION flowforge.get_workflow(text, integer) IS
  'get_workflow(name text, version int default null) -> jsonb {id, name, version, kind, created_at, created_by, '
  'superseded_at, deleted_at, deleted_by, spec, versions}: the given (default: latest) version with its normalized '
  'spec — a deleted one too (deleted_at says so: the definitions its runs ran stay readable). Viewer rights. Errors: FF001 no such workflow; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.get_workflow(text,integer)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
