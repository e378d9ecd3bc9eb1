-- Who owns and who may call each function, stated next to the function.
--
-- Every file declares, right after a function's COMMENT, its owner and its
-- callers with one call of _rights(). 99_grants.sql, applied last, only
-- sweeps: EXECUTE revoked from PUBLIC everywhere, and a function nobody
-- declared (an internal helper) owned by flowforge_owner and closed to every
-- runtime role. tests/sql/00_catalog/security.sql is the net under both.

CREATE OR REPLACE FUNCTION flowforge._rights(fn regprocedure, owned_by name, callable_by name[] DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_runtime constant name[] := ARRAY['flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway',
                                       'flowforge_readonly', 'flowforge_webhook'];
    v_role name;
BEGIN
    -- flowforge_owner: the tenant API and internals, scoped by RLS to the caller's organization.
    -- flowforge_system: cross-tenant functions, which check the caller themselves.
    IF owned_by NOT IN ('flowforge_owner', 'flowforge_system') THEN
        RAISE EXCEPTION '_rights(%): owner must be flowforge_owner or flowforge_system, got %', fn, owned_by
            USING ERRCODE = 'FF003', HINT = 'See docs/security.md, "Roles".';
    END IF;
    EXECUTE format('ALTER FUNCTION %s OWNER TO %I', fn, owned_by);
    -- Exact: callers no longer named lose EXECUTE when the file is re-applied.
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, %s', fn,
                   (SELECT string_agg(quote_ident(r), ', ') FROM unnest(c_runtime) AS r));
    -- Both owners' definer functions call each other's (tick calls the reaper, the API calls internals).
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO flowforge_owner, flowforge_system', fn);
    FOREACH v_role IN ARRAY coalesce(callable_by, '{}') LOOP
        IF NOT v_role = ANY (c_runtime) THEN
            RAISE EXCEPTION '_rights(%): % is not a FlowForge runtime role (%)', fn, v_role, array_to_string(c_runtime, ', ')
                USING ERRCODE = 'FF003', HINT = 'Grant to runtime roles only; logins get them through add_member.';
        END IF;
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', fn, v_role);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION flowforge._rights(regprocedure, name, name[]) IS
  'Migration helper: makes owned_by (flowforge_owner or flowforge_system) the owner of fn, revokes EXECUTE from PUBLIC '
  'and every runtime role, grants it to both owner roles and to exactly the runtime roles in callable_by. Run by '
  'flowforge migrate right after each function''s COMMENT. Errors: FF003 an owner or caller that is not a FlowForge role.';
