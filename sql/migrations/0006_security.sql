-- FlowForge 0006: roles, ownership, row-level security, gateway sessions, limits.
--
-- Roles are cluster-wide, so they are created only when absent and are left in
-- place by the rollback (another database of the cluster may use them).
--   flowforge_owner     owns the schema, the tables and the tenant API functions
--   flowforge_system    owns the cross-tenant functions (identity, reaper, outbox)
--   flowforge_app       EXECUTE on the application API
--   flowforge_worker    EXECUTE on claim / heartbeat / complete / fail
--   flowforge_daemon    EXECUTE on tick / reaper / outbox drain
--   flowforge_gateway   a shared login that authenticates each transaction with an API key
--   flowforge_readonly  DBA and monitoring reads of every table
-- No runtime role has DML on a table: writes happen inside SECURITY DEFINER
-- functions, and every tenant table has RLS enabled and FORCEd.
-- depends: 0005_queues

-- Roles live in shared catalogs: serialise with every other database of the
-- cluster migrating at the same moment (concurrent GRANT / ALTER ROLE on one
-- role fail with "tuple concurrently updated"). Locks on shared catalogs are
-- cluster-wide and end with this migration's transaction.
LOCK TABLE pg_catalog.pg_authid, pg_catalog.pg_auth_members, pg_catalog.pg_db_role_setting
    IN SHARE ROW EXCLUSIVE MODE;

DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['flowforge_owner', 'flowforge_system', 'flowforge_app', 'flowforge_worker',
                                  'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_role) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', v_role);
        END IF;
    END LOOP;
END;
$$;

-- flowforge_system maps login roles to organizations (add_member), so it may
-- grant the runtime roles.
GRANT flowforge_app, flowforge_worker TO flowforge_system WITH ADMIN OPTION;

-- Runtime defaults: a stuck client must not hold locks or a transaction open for long.
-- (They apply to sessions that log in as these roles; ALTER ROLE settings of a
-- group role do not reach its members, so operators set them on each login —
-- docs/security.md.)
ALTER ROLE flowforge_app SET statement_timeout = '30s';
ALTER ROLE flowforge_app SET lock_timeout = '5s';
ALTER ROLE flowforge_app SET idle_in_transaction_session_timeout = '60s';
ALTER ROLE flowforge_worker SET statement_timeout = '30s';
ALTER ROLE flowforge_worker SET lock_timeout = '5s';
ALTER ROLE flowforge_worker SET idle_in_transaction_session_timeout = '60s';
ALTER ROLE flowforge_daemon SET statement_timeout = '30s';
ALTER ROLE flowforge_daemon SET lock_timeout = '5s';
ALTER ROLE flowforge_daemon SET idle_in_transaction_session_timeout = '30s';
ALTER ROLE flowforge_gateway SET statement_timeout = '30s';
ALTER ROLE flowforge_gateway SET lock_timeout = '5s';
ALTER ROLE flowforge_gateway SET idle_in_transaction_session_timeout = '60s';

-- Who a gateway transaction acts for: written only by flowforge.authenticate()
-- (SECURITY DEFINER), keyed by backend and transaction, so it expires with the
-- transaction and no caller can write it.
CREATE UNLOGGED TABLE flowforge.gateway_session (
    backend_pid      integer     NOT NULL,
    xact_id          xid8        NOT NULL,
    organization_id  uuid        NOT NULL,
    role             varchar(20) NOT NULL,
    api_key_id       uuid        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gateway_session_pkey PRIMARY KEY (backend_pid),
    CONSTRAINT gateway_session_role_valid CHECK (role IN ('owner', 'admin', 'member', 'viewer'))
);

-- Installation-wide limits, changed by the schema owner only (a caller could
-- raise a limit kept in a setting it can SET).
CREATE TABLE flowforge.setting (
    singleton          boolean NOT NULL DEFAULT true,
    max_payload_bytes  integer NOT NULL DEFAULT 1048576,
    CONSTRAINT setting_pkey PRIMARY KEY (singleton),
    CONSTRAINT setting_singleton CHECK (singleton),
    CONSTRAINT setting_max_payload_sane CHECK (max_payload_bytes BETWEEN 1024 AND 268435456)
);
INSERT INTO flowforge.setting DEFAULT VALUES;

-- Bootstrap only: the policies below need the function to exist. The
-- post-migrate re-apply of sql/functions/ replaces it with the real one.
DO $$
BEGIN
    IF to_regprocedure('flowforge.current_organization()') IS NULL THEN
        CREATE FUNCTION flowforge.current_organization() RETURNS uuid
        LANGUAGE sql STABLE AS 'SELECT NULL::uuid';
    END IF;
END;
$$;

ALTER SCHEMA flowforge OWNER TO flowforge_owner;
GRANT USAGE ON SCHEMA flowforge TO flowforge_system, flowforge_app, flowforge_worker, flowforge_daemon,
                                   flowforge_gateway, flowforge_readonly;

DO $$
DECLARE
    v_table text;
    v_tenant_tables text[] := ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency',
                                    'scheduled_trigger', 'workflow_run', 'task_run', 'idempotency_key',
                                    'outbox_message', 'task_run_event', 'queue'];
BEGIN
    FOREACH v_table IN ARRAY v_tenant_tables || ARRAY['organization', 'gateway_session', 'setting'] LOOP
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO flowforge_owner', v_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.%I TO flowforge_system', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I ENABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('CREATE POLICY system_all ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_system '
                       'USING (true) WITH CHECK (true)', v_table);
        IF v_table <> 'gateway_session' THEN
            EXECUTE format('GRANT SELECT ON flowforge.%I TO flowforge_readonly', v_table);
            EXECUTE format('CREATE POLICY readonly_select ON flowforge.%I AS PERMISSIVE FOR SELECT TO flowforge_readonly '
                           'USING (true)', v_table);
        END IF;
    END LOOP;
    -- The tenant API runs as flowforge_owner: it sees and writes its caller's organization only.
    -- (SELECT ...) makes the organization an InitPlan, resolved once per statement.
    FOREACH v_table IN ARRAY v_tenant_tables LOOP
        EXECUTE format('CREATE POLICY tenant_isolation ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_owner '
                       'USING (organization_id = (SELECT flowforge.current_organization())) '
                       'WITH CHECK (organization_id = (SELECT flowforge.current_organization()))', v_table);
    END LOOP;
    CREATE POLICY tenant_isolation ON flowforge.organization AS PERMISSIVE FOR SELECT TO flowforge_owner
        USING (id = (SELECT flowforge.current_organization()));
    CREATE POLICY setting_read ON flowforge.setting AS PERMISSIVE FOR SELECT TO flowforge_owner USING (true);
END;
$$;

-- yoyo's bookkeeping, read by flowforge.schema_version() (absent when applied by hand).
DO $$
BEGIN
    IF to_regclass('public._yoyo_migration') IS NOT NULL THEN
        GRANT SELECT ON public._yoyo_migration TO flowforge_system;
    END IF;
END;
$$;

-- A function created by the owner is closed until granted.
ALTER DEFAULT PRIVILEGES FOR ROLE flowforge_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE flowforge_system REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
