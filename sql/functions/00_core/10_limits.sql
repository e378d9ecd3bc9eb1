-- Limits every API call enforces on what it is given: payload sizes, lease lengths.

-- Refuse a JSON document larger than the installation's limit.
CREATE OR REPLACE FUNCTION flowforge._check_size(p_value jsonb, p_what text) RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_limit integer;
    v_size integer;
BEGIN
    IF p_value IS NULL THEN
        RETURN;
    END IF;
    SELECT s.max_payload_bytes INTO v_limit FROM flowforge.setting s;
    -- Measured as JSON text: a value read from a table may arrive compressed,
    -- and its stored size says nothing about what a consumer will receive.
    v_size := octet_length(p_value::text);
    IF v_size > v_limit THEN
        RAISE EXCEPTION '% is % bytes, over the limit of % bytes', p_what, v_size, v_limit
            USING ERRCODE = 'FF009',
                  HINT = 'Store large data elsewhere and pass a reference; the limit is flowforge.setting.max_payload_bytes.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_size(jsonb, text) IS
  'Internal: raises FF009 when a jsonb value, as JSON text, is larger than flowforge.setting.max_payload_bytes '
  '(default 1 MiB).';

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
