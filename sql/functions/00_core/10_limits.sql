-- Limits every API call enforces on what it is given: payload sizes, lease lengths.

-- Refuse a JSON document larger than the installation's limit.
-- What is wrong with a JSON document a caller hands us, or NULL: larger than
-- the installation's limit (as JSON text), or nested deeper than its depth
-- limit. The one rule, used by _check_size (which raises) and by the batch
-- functions (which report it per item).
CREATE OR REPLACE FUNCTION flowforge._payload_problem(p_value jsonb, p_what text) RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_limit integer;
    v_depth integer;
    v_size integer;
BEGIN
    IF p_value IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT s.max_payload_bytes, s.max_json_depth INTO v_limit, v_depth FROM flowforge.setting s;
    -- Measured as JSON text: a value read from a table may arrive compressed,
    -- and its stored size says nothing about what a consumer will receive.
    v_size := octet_length(p_value::text);
    IF v_size > v_limit THEN
        RETURN format('%s is %s bytes, over the limit of %s bytes', p_what, v_size, v_limit);
    END IF;
    -- An element at level depth + 1 exists iff the document nests deeper than
    -- the limit (jsonpath's .**{n}, evaluated in C; scalars have no levels).
    IF jsonb_typeof(p_value) IN ('object', 'array')
       AND jsonb_path_exists(p_value, format('strict $.**{%s}', v_depth + 1)::jsonpath) THEN
        RETURN format('%s is nested more than %s levels deep', p_what, v_depth);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION flowforge._payload_problem(jsonb, text) IS
  'Internal: why a JSON document exceeds the installation''s limits (flowforge.setting.max_payload_bytes as JSON '
  'text, max_json_depth levels of nesting), or NULL when it does not.';

-- Refuse a JSON document over the installation's limits.
CREATE OR REPLACE FUNCTION flowforge._check_size(p_value jsonb, p_what text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_problem text;
BEGIN
    IF p_value IS NULL THEN
        RETURN;
    END IF;
    v_problem := flowforge._payload_problem(p_value, p_what);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem
            USING ERRCODE = 'FF009',
                  HINT = 'Store large or deeply nested data elsewhere and pass a reference; the limits are '
                         'flowforge.setting.max_payload_bytes and max_json_depth.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_size(jsonb, text) IS
  'Internal: raises FF009 when a jsonb value, as JSON text, is larger than flowforge.setting.max_payload_bytes '
  '(default 1 MiB) or nests deeper than max_json_depth (default 64).';

CREATE OR REPLACE FUNCTION flowforge._check_text_size(p_value text, p_what text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_limit integer;
BEGIN
    IF p_value IS NULL THEN
        RETURN;
    END IF;
    SELECT s.max_payload_bytes INTO v_limit FROM flowforge.setting s;
    IF octet_length(p_value) > v_limit THEN
        RAISE EXCEPTION '% is % bytes, over the limit of % bytes', p_what, octet_length(p_value), v_limit
            USING ERRCODE = 'FF009', HINT = 'Shorten it; the limit is flowforge.setting.max_payload_bytes.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_text_size(text, text) IS
  'Internal: raises FF009 when a text is longer (in bytes) than flowforge.setting.max_payload_bytes.';

CREATE OR REPLACE FUNCTION flowforge._check_lease(p_lease interval) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_lease IS NULL OR p_lease < interval '1 second' OR p_lease > interval '1 day' THEN
        RAISE EXCEPTION 'lease must be between 1 second and 1 day, got %', coalesce(p_lease::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Pick a lease a few times longer than your heartbeat interval.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_lease(interval) IS 'Internal: raises FF003 unless 1 second <= lease <= 1 day.';
