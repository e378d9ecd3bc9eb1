

-- Definitions of every kind: validate a spec, version it by content, store it.
--
--   define_workflow(spec) -> uuid of the workflow version
--
-- A definition is immutable once stored; a changed spec is version + 1 and
-- runs always start the latest version. Each kind validates its own spec and
-- writes its own rows through the hooks (_normalize_spec, _materialize_definition).

-- Parse a duration field; FF002 when it is not an interval or is negative.
CREATE OR REPLACE FUNCTION flowforge._spec_interval(p_value jsonb, p_field text) RETURNS interval
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_interval interval;
BEGIN
    IF jsonb_typeof(p_value) <> 'string' THEN
        PERFORM flowforge._invalid_definition(format('%s must be a duration string such as "5 seconds", got %s', p_field, p_value));
    END IF;
    BEGIN
        v_interval := (p_value #>> '{}')::interval;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow OR syntax_error THEN
        PERFORM flowforge._invalid_definition(format('%s is not a duration: %s', p_field, p_value));
    END;
    IF v_interval < interval '0' THEN
        PERFORM flowforge._invalid_definition(format('%s must not be negative, got %s', p_field, p_value));
    END IF;
    RETURN v_interval;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_interval(jsonb, text) IS
  'Internal: parses a spec duration; raises FF002 naming the field when it is not a non-negative interval.';

-- Parse an integer field within bounds; FF002 otherwise.
CREATE OR REPLACE FUNCTION flowforge._spec_integer(p_value jsonb, p_field text, p_min integer, p_max integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_number numeric;
BEGIN
    IF jsonb_typeof(p_value) <> 'number' THEN
        PERFORM flowforge._invalid_definition(format('%s must be an integer, got %s', p_field, p_value));
    END IF;
    v_number := (p_value #>> '{}')::numeric;
    IF v_number <> trunc(v_number) OR v_number < p_min OR v_number > p_max THEN
        PERFORM flowforge._invalid_definition(format('%s must be an integer between %s and %s, got %s', p_field, p_min, p_max, p_value));
    END IF;
    RETURN v_number::integer;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_integer(jsonb, text, integer, integer) IS
  'Internal: parses a spec integer within [min, max]; raises FF002 naming the field otherwise.';

CREATE OR REPLACE FUNCTION flowforge.define_workflow(spec jsonb) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_spec jsonb;
    v_name text;
    v_hash text;
    v_latest record;
    v_id uuid;
BEGIN
    PERFORM flowforge._check_size(define_workflow.spec, 'workflow spec');
    v_spec := flowforge._normalize_spec(define_workflow.spec);
    v_name := v_spec ->> 'name';
    v_hash := md5(v_spec::text);

    -- Serialise definers of one name so two changed specs cannot both become version N + 1.
    PERFORM pg_advisory_xact_lock(hashtextextended('flowforge.workflow/' || v_org::text || '/' || v_name, 0));
    SELECT w.id, w.version, w.content_hash INTO v_latest
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org AND w.name = v_name
    ORDER BY w.version DESC
    LIMIT 1;
    IF FOUND AND v_latest.content_hash = v_hash THEN
        RETURN v_latest.id;
    END IF;

    INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_at)
    VALUES (v_org, v_name, coalesce(v_latest.version, 0) + 1, v_spec ->> 'kind', v_spec, v_hash, v_now)
    RETURNING id INTO v_id;
    PERFORM flowforge._materialize_definition(v_spec ->> 'kind', v_org, v_id, v_spec, v_now);

    PERFORM flowforge._audit(v_org, 'define', 'workflow', v_id::text, ARRAY['name', 'version', 'spec']);
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge.define_workflow(jsonb) IS
  'define_workflow(spec jsonb) -> uuid. Validates a workflow spec ({"name", "kind": "dag", "tasks": [{"key", "depends_on", '
  '"queue", "priority", "max_attempts", "backoff", "backoff_factor", "max_backoff", "timeout"}]}) and stores it as a new '
  'version of its name in the caller''s organization, returning that version''s id. Defining the same content as the '
  'latest version returns the latest version''s id and writes nothing. '
  'Errors: FF002 invalid definition (no tasks, duplicate keys, unknown dependency, a cycle, max_attempts < 1, negative '
  'durations, unknown fields, bad names) — nothing is written; FF009 spec over the size limit; FF007/FF008 as for '
  'every API call.';
SELECT flowforge._rights('flowforge.define_workflow(jsonb)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
