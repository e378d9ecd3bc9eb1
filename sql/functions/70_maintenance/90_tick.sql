

-- tick(): every periodic duty once, with a count per duty. One file per duty
-- in this folder; tick only composes them, so each stays testable alone.

CREATE OR REPLACE FUNCTION flowforge.tick() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_reaped integer;
    v_dispatched integer;
BEGIN
    v_reaped := flowforge.reap_expired_leases(1000);
    v_dispatched := flowforge._dispatch_due(1000, flowforge.now());
    RETURN jsonb_build_object('reaped', v_reaped, 'dispatched', v_dispatched, 'at', flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.tick() IS
  'tick() -> jsonb. Runs every periodic duty once and returns counts of what it did: {"reaped": n, "dispatched": n, "at": now} '
  '— expired leases reaped, due push-queue retries dispatched to the outbox. '
  'The daemon calls it on its tick interval; calling it more often is harmless. Errors: none of its own.';
SELECT flowforge._rights('flowforge.tick()', 'flowforge_system', '{flowforge_daemon}');
