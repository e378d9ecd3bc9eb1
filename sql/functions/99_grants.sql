-- Ownership and EXECUTE grants, applied after every other function file on
-- every migrate, so a function's rights are stated in one place.
--
-- Every function: owned by flowforge_owner (tenant API, internals) or
-- flowforge_system (cross-tenant: identity, organizations, keys, reaper,
-- outbox), EXECUTE revoked from PUBLIC, then granted to named roles only.

DO $$
DECLARE
    v_function regprocedure;
    v_system_owned constant text[] := ARRAY[
        'flowforge._caller()', 'flowforge._caller_organization()', 'flowforge._audit(uuid,text,text,text,text[])',
        'flowforge.schema_version()', 'flowforge.create_organization(text,text)', 'flowforge.add_member(text,name,text)',
        'flowforge.remove_member(text,name)', 'flowforge.create_api_key(text,text,text)',
        'flowforge.revoke_api_key(text)', 'flowforge.authenticate(text)', 'flowforge.tick()',
        'flowforge.reap_expired_leases(integer)', 'flowforge.take_outbox(integer)', 'flowforge.mark_published(uuid[])',
        'flowforge.defer_outbox(uuid[],text)'];
BEGIN
    FOR v_function IN
        SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'flowforge'
    LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO %s', v_function,
                       CASE WHEN v_function::text = ANY (v_system_owned) THEN 'flowforge_system' ELSE 'flowforge_owner' END);
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_function);
        -- Internals run inside both owners' definer functions.
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO flowforge_owner, flowforge_system', v_function);
    END LOOP;
END;
$$;

-- Everyone who uses FlowForge: the clock, the caller's organization, the schema version.
GRANT EXECUTE ON FUNCTION flowforge.now(), flowforge.current_organization(), flowforge._caller(), flowforge._caller_organization(),
                  flowforge.schema_version()
    TO flowforge_app, flowforge_worker, flowforge_daemon, flowforge_gateway, flowforge_readonly;

-- The application API (the functions check the membership role themselves).
GRANT EXECUTE ON FUNCTION
    flowforge.define_workflow(jsonb),
    flowforge.start_run(text, jsonb, text),
    flowforge.cancel_run(uuid, text),
    flowforge.retry_run(uuid),
    flowforge.run_events(uuid),
    flowforge.list_workflows(),
    flowforge.get_workflow(text, integer),
    flowforge.list_runs(text, text, integer),
    flowforge.get_run(uuid),
    flowforge.resolve_run_id(text),
    flowforge.queue_settings(text[]),
    flowforge.configure_queue(text, text, text, interval),
    flowforge.add_member(text, name, text),
    flowforge.remove_member(text, name),
    flowforge.create_api_key(text, text, text),
    flowforge.revoke_api_key(text)
TO flowforge_app, flowforge_gateway;

-- Workers.
GRANT EXECUTE ON FUNCTION
    flowforge.claim(text[], text, interval, integer),
    flowforge.heartbeat(uuid, bigint, interval),
    flowforge.complete(uuid, bigint, jsonb),
    flowforge.complete_many(uuid[], bigint[], jsonb[]),
    flowforge.queue_settings(text[]),
    flowforge.fail(uuid, bigint, text, boolean)
TO flowforge_worker, flowforge_gateway;

-- The daemon: periodic duties and the outbox drain, across organizations.
GRANT EXECUTE ON FUNCTION
    flowforge.tick(),
    flowforge.reap_expired_leases(integer),
    flowforge.take_outbox(integer),
    flowforge.mark_published(uuid[]),
    flowforge.defer_outbox(uuid[], text)
TO flowforge_daemon;

-- Gateway logins prove who they act for, per transaction.
GRANT EXECUTE ON FUNCTION flowforge.authenticate(text) TO flowforge_gateway;
