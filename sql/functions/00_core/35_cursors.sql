-- Keyset cursors: where a listing resumes (after => <cursor>).
--
-- Every listing returns, on each row, the cursor of that row; passing the
-- last row's cursor as `after` returns the rows that follow it in the
-- listing's order — never an OFFSET, so a page costs the same however deep it
-- is, and rows inserted meanwhile (newer, so before the cursor) neither
-- repeat nor shift what follows. A cursor is opaque text: base64url of
-- "<listing>|<µs since the epoch>|<id>|<key>", where key is the name a
-- listing ordered by name resumes after. Callers must not build or edit one;
-- a cursor of another listing, or anything that does not decode, is FF003.

CREATE OR REPLACE FUNCTION flowforge._cursor(p_listing text, p_at timestamptz, p_id uuid, p_key text DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT translate(rtrim(encode(convert_to(
               p_listing || '|' || coalesce(((extract(epoch FROM p_at) * 1000000)::bigint)::text, '') || '|'
               || coalesce(p_id::text, '') || '|' || coalesce(p_key, ''), 'UTF8'), 'base64'), '='), E'+/\n', '-_')
$$;
COMMENT ON FUNCTION flowforge._cursor(text, timestamptz, uuid, text) IS
  'Internal: the opaque keyset cursor of a row of listing p_listing (its time, id and, for a listing by name, the '
  'name), which _cursor_position decodes.';

-- VOLATILE: it only ever raises, and must never be folded away (or run) ahead of time.
CREATE OR REPLACE FUNCTION flowforge._invalid_cursor(p_listing text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'invalid cursor for %: pass the cursor of a row the same listing returned', p_listing
        USING ERRCODE = 'FF003', HINT = 'Leave after NULL for the first page; a cursor is opaque, never built or edited.';
END;
$$;
COMMENT ON FUNCTION flowforge._invalid_cursor(text) IS
  'Internal: the one refusal of a bad cursor. Errors: FF003 always.';

CREATE OR REPLACE FUNCTION flowforge._cursor_position(p_listing text, p_cursor text, OUT at timestamptz, OUT id uuid,
                                                      OUT key text)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_text text;
    v_parts text[];
BEGIN
    IF p_cursor IS NULL THEN
        RETURN;
    END IF;
    BEGIN
        IF length(p_cursor) > 2000 OR p_cursor !~ '^[A-Za-z0-9_-]+$' THEN
            RAISE EXCEPTION USING ERRCODE = 'data_exception';
        END IF;
        v_text := convert_from(decode(rpad(translate(p_cursor, '-_', '+/'), (length(p_cursor) + 3) / 4 * 4, '='),
                                      'base64'), 'UTF8');
        v_parts := regexp_match(v_text, '^([a-z_]+)\|(-?[0-9]*)\|([0-9a-f-]*)\|(.*)$', 's');
        IF v_parts IS NULL OR v_parts[1] <> p_listing THEN
            RAISE EXCEPTION USING ERRCODE = 'data_exception';
        END IF;
        at := CASE WHEN v_parts[2] <> '' THEN 'epoch'::timestamptz + v_parts[2]::bigint * interval '1 microsecond' END;
        id := NULLIF(v_parts[3], '')::uuid;
        key := NULLIF(v_parts[4], '');
        IF (at IS NULL AND id IS NULL AND key IS NULL) THEN
            RAISE EXCEPTION USING ERRCODE = 'data_exception';
        END IF;
    EXCEPTION WHEN data_exception THEN
        PERFORM flowforge._invalid_cursor(p_listing);
    END;
END;
$$;
COMMENT ON FUNCTION flowforge._cursor_position(text, text) IS
  'Internal: the position (at, id, key) cursor p_cursor of listing p_listing stands for; all NULL for a NULL cursor '
  '(the first page). Errors: FF003 a cursor that does not decode or belongs to another listing.';
