-- Meta: the clock and the schema version.
-- These are the seams every other family goes through, so each is one place.

-- No SET clause and a fully qualified body, so the planner inlines it.
CREATE OR REPLACE FUNCTION flowforge.now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT pg_catalog.now() $$;
COMMENT ON FUNCTION flowforge.now() IS
  'The one clock of FlowForge: transaction time. Every lease, backoff and timestamp reads it. '
  'Production cannot steer it (only the schema owner can replace a function, and migrate restores this text); '
  'the test fixtures replace it with a steerable clock inside a rolled-back transaction.';
SELECT flowforge._rights('flowforge.now()', 'flowforge_owner',
    '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.schema_version() RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_version text;
BEGIN
    -- yoyo keeps its bookkeeping in the migrating connection's default schema.
    IF to_regclass('public._yoyo_migration') IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT max(migration_id) FROM public._yoyo_migration' INTO v_version;
    RETURN v_version;
END;
$$;
COMMENT ON FUNCTION flowforge.schema_version() IS
  'The newest applied migration id (e.g. ''0004_append_only''), or NULL when yoyo has not recorded any. '
  'The daemon refuses to start against a version it does not know.';
SELECT flowforge._rights('flowforge.schema_version()', 'flowforge_system',
    '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');
