-- Reads of definitions (viewer rights).
--
--   list_workflows() -> latest version of each workflow
--   get_workflow(name, version) -> jsonb

CREATE OR REPLACE FUNCTION flowforge.list_workflows()
RETURNS TABLE (name text, version integer, id uuid, kind text, tasks integer, created_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    RETURN QUERY
    SELECT DISTINCT ON (w.name) w.name::text, w.version, w.id, w.kind::text,
           jsonb_array_length(coalesce(w.spec -> 'tasks', w.spec -> 'nodes')), w.created_at
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org
    ORDER BY w.name, w.version DESC;
END;
$$;
COMMENT ON FUNCTION flowforge.list_workflows() IS
  'list_workflows() -> setof (name, version, id, kind, tasks, created_at): the latest version of every workflow of the '
  'caller''s organization, by name. Viewer rights. Errors: FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_workflows()', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

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
                              'created_at', w.created_at, 'spec', w.spec,
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
  'get_workflow(name text, version int default null) -> jsonb {id, name, version, kind, created_at, spec, versions}: '
  'the given (default: latest) version with its normalized spec. Viewer rights. Errors: FF001 no such workflow; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.get_workflow(text,integer)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
