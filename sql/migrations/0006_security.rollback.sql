-- Undo 0006. The cluster-wide roles stay (another database may use them);
-- the schema and its objects return to the migrating role.
ALTER DEFAULT PRIVILEGES FOR ROLE flowforge_system GRANT EXECUTE ON FUNCTIONS TO PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE flowforge_owner GRANT EXECUTE ON FUNCTIONS TO PUBLIC;
DO $$
BEGIN
    IF to_regclass('public._yoyo_migration') IS NOT NULL THEN
        REVOKE SELECT ON public._yoyo_migration FROM flowforge_system;
    END IF;
END;
$$;

DO $$
DECLARE
    v_table text;
    v_policy record;
    v_function regprocedure;
BEGIN
    FOR v_policy IN SELECT policyname, tablename FROM pg_policies WHERE schemaname = 'flowforge' LOOP
        EXECUTE format('DROP POLICY %I ON flowforge.%I', v_policy.policyname, v_policy.tablename);
    END LOOP;
    FOR v_table IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = 'flowforge' AND c.relkind = 'r' LOOP
        EXECUTE format('ALTER TABLE flowforge.%I NO FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I DISABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('REVOKE ALL ON flowforge.%I FROM flowforge_system, flowforge_readonly', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO %I', v_table, current_user);
    END LOOP;
    FOR v_function IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                      WHERE n.nspname = 'flowforge' LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', v_function, current_user);
    END LOOP;
END;
$$;

REVOKE USAGE ON SCHEMA flowforge FROM flowforge_system, flowforge_app, flowforge_worker, flowforge_daemon,
                                      flowforge_gateway, flowforge_readonly;
DO $$ BEGIN EXECUTE format('ALTER SCHEMA flowforge OWNER TO %I', current_user); END; $$;
DROP TABLE flowforge.setting;
DROP TABLE flowforge.gateway_session;
