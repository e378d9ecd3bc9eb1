-- Back to 0038's spelling: each compact test of 0039, col::text = ANY ('{a,b}'::text[]),
-- as the IN list (col IN ('a', 'b')) it was declared with.
-- Same names, same meaning; swapped NOT VALID, then validated (as 0039).
-- transactional: false
DO $$
DECLARE
    v record;
    v_def text;
    v_list text[];
    v_rel regclass;
    v_clauses text[] := '{}';
BEGIN
    FOR v IN
        SELECT con.conrelid::regclass AS rel, con.conname, pg_get_constraintdef(con.oid) AS def
        FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
        WHERE con.contype = 'c' AND t.relnamespace = 'flowforge'::regnamespace AND con.conislocal
          AND pg_get_constraintdef(con.oid) ~ '= ANY \(''\{[a-z_,]+\}''::text\[\]\)'
        ORDER BY 1::text, 2
    LOOP
        v_def := v.def;
        LOOP
            v_list := regexp_match(v_def, '(\(([a-z_]+)\)::text = ANY \(''\{([a-z_,]+)\}''::text\[\]\))');
            EXIT WHEN v_list IS NULL;
            v_def := replace(v_def, v_list[1], format('(%I IN (%s))', v_list[2], array_to_string(ARRAY(
                SELECT quote_literal(x) FROM unnest(string_to_array(v_list[3], ',')) AS x), ', ')));
        END LOOP;
        IF v_rel IS DISTINCT FROM v.rel AND v_rel IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s %s', v_rel, array_to_string(v_clauses, ', '));
            COMMIT;
            v_clauses := '{}';
        END IF;
        v_rel := v.rel;
        v_clauses := v_clauses || format('DROP CONSTRAINT %I, ADD CONSTRAINT %I %s NOT VALID', v.conname, v.conname, v_def);
    END LOOP;
    IF v_rel IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %s %s', v_rel, array_to_string(v_clauses, ', '));
        COMMIT;
    END IF;
END;
$$;
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN
        SELECT con.conrelid::regclass AS rel, con.conname
        FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
        WHERE con.contype = 'c' AND t.relnamespace = 'flowforge'::regnamespace AND con.conislocal
          AND NOT con.convalidated
        ORDER BY 1::text, 2
    LOOP
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', v.rel, v.conname);
        COMMIT;
    END LOOP;
END;
$$;
