

-- tick(): every periodic duty once, with a count per duty. One file per duty
-- in this folder; tick only composes them, so each stays testable alone.

CREATE OR REPLACE FUNCTION flowforge.tick() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_counts jsonb := '{}';
    v_errors jsonb := '{}';
    v_duty text;
    v_done integer;
    v_error text;
BEGIN
    -- Each duty in its own subtransaction: one that fails (and says why) never
    -- keeps the others from running.
    FOREACH v_duty IN ARRAY ARRAY['reaped', 'dispatched'] LOOP
        BEGIN
            v_done := CASE v_duty
                          WHEN 'reaped' THEN flowforge.reap_expired_leases(1000)
                          WHEN 'dispatched' THEN flowforge._dispatch_due(1000, flowforge.now())
                      END;
            v_counts := v_counts || jsonb_build_object(v_duty, v_done);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            v_counts := v_counts || jsonb_build_object(v_duty, 0);
            v_errors := v_errors || jsonb_build_object(v_duty, v_error);
            RAISE WARNING 'tick: duty % failed: %', v_duty, v_error;
        END;
    END LOOP;
    RETURN v_counts || jsonb_build_object('at', flowforge.now())
           || CASE WHEN v_errors = '{}' THEN '{}'::jsonb ELSE jsonb_build_object('errors', v_errors) END;
END;
$$;
COMMENT ON FUNCTION flowforge.tick() IS
  'tick() -> jsonb. Runs every periodic duty once and returns counts of what it did: {"reaped": n, "dispatched": n, "at": now} '
  '— expired leases reaped, due push-queue retries dispatched to the outbox; a duty that failed counts 0 and its '
  'error is under "errors" (the others still ran). '
  'The daemon calls it on its tick interval; calling it more often is harmless. Errors: none of its own.';
SELECT flowforge._rights('flowforge.tick()', 'flowforge_system', '{flowforge_daemon}');
