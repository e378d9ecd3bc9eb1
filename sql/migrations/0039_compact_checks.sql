-- FlowForge 0039: every CHECK that lists allowed values of a varchar column
-- (state IN ('pending', 'ready', ...)) is re-declared with the same name and
-- the same meaning as one array constant: state::text = ANY ('{pending,ready,...}'::text[]).
-- Why: PostgreSQL 15 re-reads a table's CHECK constraints from their stored
-- node trees (stringToNode), plans and compiles them on every execution of
-- every INSERT/UPDATE statement that writes the table — on the hot path,
-- claim's task_run update and complete's workflow_run / task_run / engine_run
-- updates, each job. The IN list is stored as one cast constant per value
-- (taskrun_state_valid: 1,966 bytes of node tree); the array constant is one
-- node (817). perf showed ExecConstraints at 13% of a claim + complete
-- backend's CPU; this rewrite measured +1.8% claim + complete throughput on
-- task_run, workflow_run and engine_run alone (benchmarks/RESULTS.md, stop 27).
-- The migration policy's NOT VALID + VALIDATE, in one non-transactional
-- migration: step 1 swaps a table's constraints for their compact twins NOT
-- VALID in one ALTER TABLE per table, each committed on its own (an instant of
-- ACCESS EXCLUSIVE, no scan, one table at a time, so no lock order to get
-- wrong against the traffic; new rows are checked from the first moment, and
-- a constraint is never missing); step 2 validates each under SHARE UPDATE
-- EXCLUSIVE, which claims and completions pass, one commit each. Both steps
-- are safe to run again: step 1 finds nothing left to rewrite, step 2 only
-- what is not validated yet. A partitioned table's constraint is swapped on
-- the parent (its partitions follow).
-- transactional: false
-- depends: 0038_serve_metrics_indexes
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
          AND pg_get_constraintdef(con.oid) ~ '\(ARRAY\[(''[a-z_]+''::character varying(, )?)+\]\)::text\[\]'
        ORDER BY 1::text, 2
    LOOP
        v_def := v.def;
        LOOP
            v_list := regexp_match(v_def, '(\(ARRAY\[((''[a-z_]+''::character varying(, )?)+)\]\)::text\[\])');
            EXIT WHEN v_list IS NULL;
            v_def := replace(v_def, v_list[1], format('%L::text[]', '{' || array_to_string(ARRAY(
                SELECT x[1] FROM regexp_matches(v_list[2], '''([a-z_]+)''::character varying', 'g') AS x), ',') || '}'));
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
