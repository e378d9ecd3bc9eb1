-- Keyed hashes, in SQL: HMAC-SHA256 (RFC 2104) and a constant-time compare.
-- Built on PostgreSQL's own sha256() because pgcrypto is a contrib extension
-- the embedded server does not ship; gateway tokens and webhook signatures
-- both use these.

CREATE OR REPLACE FUNCTION flowforge._hmac_sha256(p_key bytea, p_message bytea) RETURNS bytea
-- Not STRICT: the planner folds a STRICT call with NULL constants away before
-- any privilege check, and this helper must stay closed to every runtime role.
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_block constant integer := 64;  -- SHA-256's block size, in bytes
    v_key bytea := p_key;
    v_inner bytea;
    v_outer bytea;
BEGIN
    IF p_key IS NULL OR p_message IS NULL THEN
        RETURN NULL;
    END IF;
    IF octet_length(v_key) > c_block THEN
        v_key := sha256(v_key);
    END IF;
    v_key := v_key || decode(repeat('00', c_block - octet_length(v_key)), 'hex');
    v_inner := v_key;
    v_outer := v_key;
    FOR v_i IN 0 .. c_block - 1 LOOP
        v_inner := set_byte(v_inner, v_i, get_byte(v_key, v_i) # 54);  -- 0x36
        v_outer := set_byte(v_outer, v_i, get_byte(v_key, v_i) # 92);  -- 0x5c
    END LOOP;
    RETURN sha256(v_outer || sha256(v_inner || p_message));
END;
$$;
COMMENT ON FUNCTION flowforge._hmac_sha256(bytea, bytea) IS
  'Internal: HMAC-SHA256 of p_message under p_key (RFC 2104), 32 bytes; NULL when either is NULL.';

-- Compare every byte whatever the first difference, so the time taken does
-- not tell an attacker how much of a forged MAC was right.
CREATE OR REPLACE FUNCTION flowforge._bytes_equal(p_a bytea, p_b bytea) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_diff integer := 0;
BEGIN
    IF p_a IS NULL OR p_b IS NULL OR octet_length(p_a) <> octet_length(p_b) THEN
        RETURN false;
    END IF;
    FOR v_i IN 0 .. octet_length(p_a) - 1 LOOP
        v_diff := v_diff | (get_byte(p_a, v_i) # get_byte(p_b, v_i));
    END LOOP;
    RETURN v_diff = 0;
END;
$$;
COMMENT ON FUNCTION flowforge._bytes_equal(bytea, bytea) IS
  'Internal: true when two byte strings are equal, comparing all of them (constant time for equal lengths); false '
  'for NULL or different lengths.';
