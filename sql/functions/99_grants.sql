-- The sweep, applied after every other function file on every migrate.
-- Rights are declared beside each function (flowforge._rights, in its file);
-- this only makes sure nothing is left open:
--   * EXECUTE is revoked from PUBLIC on every function (PostgreSQL grants it
--     by default to functions the migrating superuser creates);
--   * a function no file declared rights for (an internal helper, a trigger
--     function from a migration) is owned by flowforge_owner and executable
--     by the two owner roles only — internals run inside their definer
--     functions and are closed to every runtime role.
-- tests/sql/00_catalog/security.sql checks the result for every function.

DO $$
DECLARE
    v_function record;
BEGIN
    FOR v_function IN
        SELECT p.oid::regprocedure AS fn, pg_get_userbyid(p.proowner) AS owner
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'flowforge'
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_function.fn);
        IF v_function.owner NOT IN ('flowforge_owner', 'flowforge_system') THEN
            EXECUTE format('ALTER FUNCTION %s OWNER TO flowforge_owner', v_function.fn);
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO flowforge_owner, flowforge_system', v_function.fn);
        END IF;
    END LOOP;
END;
$$;
