

-- tick(): every periodic duty once, with a count per duty. One file per duty
-- in this folder; tick only composes them, so each stays testable alone.

CREATE OR REPLACE FUNCTION flowforge.tick(engine_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET flowforge.history_purge = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_orgs uuid[];
    v_generations jsonb;
    v_counts jsonb := '{}';
    v_errors jsonb := '{}';
    v_duty text;
    v_done integer;
    v_error text;
    -- The installation's duties (the history's partitions, retention) are the default organization's:
    -- the daemon that serves it does them, and a lone tick().
    v_global boolean := tick.engine_id IS NULL;
BEGIN
    IF tick.engine_id IS NOT NULL AND length(tick.engine_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'engine_id must be 1 to 200 characters' USING ERRCODE = 'FF003',
            HINT = 'The daemon''s instance id, such as host:pid.';
    END IF;
    -- A daemon does the duties of the organizations it serves; a lone caller
    -- (pg_cron, a test, a script) does every organization's.
    IF tick.engine_id IS NOT NULL THEN
        SELECT coalesce(array_agg(d.organization_id), '{}'),
               coalesce(jsonb_object_agg(d.organization_id, d.generation), '{}')
        INTO v_orgs, v_generations
        FROM flowforge._duty_share(tick.engine_id, v_now) d;
        v_global := '00000000-0000-0000-0000-000000000001' = ANY (v_orgs);
    END IF;
    -- Each duty in its own subtransaction: one that fails (and says why) never
    -- keeps the others from running.
    -- contains the errors of: flowforge._reap_task_leases, flowforge._reap_work_items, flowforge._dispatch_due, flowforge._sweep_agents, flowforge._fire_machine_timers, flowforge._fire_cron_triggers, flowforge._history_partitions_ahead, flowforge._purge_due, flowforge._history_partitions_drop_emptied
    FOREACH v_duty IN ARRAY ARRAY['reaped', 'reaped_items', 'dispatched', 'agents_inactive', 'timers_fired', 'cron_fired',
                                  'partitions', 'purged', 'partitions_dropped'] LOOP
        BEGIN
            v_done := CASE v_duty
                          WHEN 'reaped' THEN flowforge._reap_task_leases(v_orgs, 1000, v_now)
                          WHEN 'reaped_items' THEN flowforge._reap_work_items(v_orgs, 1000, v_now)
                          WHEN 'dispatched' THEN flowforge._dispatch_due(1000, v_now, v_orgs)
                          WHEN 'agents_inactive' THEN flowforge._sweep_agents(v_orgs, v_now)
                          WHEN 'timers_fired' THEN flowforge._fire_machine_timers(v_orgs, 1000, v_now)
                          WHEN 'cron_fired' THEN flowforge._fire_cron_triggers(v_orgs, 100, v_now)
                          -- Last: they lock the history's parents (briefly) and purge the most rows.
                          WHEN 'partitions' THEN CASE WHEN v_global THEN
                              (flowforge._history_partitions_ahead(v_now) ->> 'created')::integer ELSE 0 END
                          WHEN 'purged' THEN CASE WHEN v_global THEN flowforge._purge_due(v_now) ELSE 0 END
                          -- The very last: a drop's lock on its parent is held until tick commits.
                          WHEN 'partitions_dropped' THEN CASE WHEN v_global THEN
                              flowforge._history_partitions_drop_emptied(v_now) ELSE 0 END
                      END;
            v_counts := v_counts || jsonb_build_object(v_duty, v_done);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_error = MESSAGE_TEXT;
            v_counts := v_counts || jsonb_build_object(v_duty, 0);
            v_errors := v_errors || jsonb_build_object(v_duty, v_error);
            RAISE WARNING 'tick: duty % failed: %', v_duty, v_error;
        END;
    END LOOP;
    RETURN v_counts || jsonb_build_object('at', v_now)
           || CASE WHEN tick.engine_id IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('engine_id', tick.engine_id, 'serving', v_generations) END
           || CASE WHEN v_errors = '{}' THEN '{}'::jsonb ELSE jsonb_build_object('errors', v_errors) END;
END;
$$;
COMMENT ON FUNCTION flowforge.tick(text) IS
  'tick(engine_id text default null) -> jsonb. Runs every periodic duty once and returns a count per duty: '
  '{"reaped": n (task leases), "reaped_items": n (work-item leases), "dispatched": n (due push retries), '
  '"agents_inactive": n (agents whose heartbeat stopped; their affinity bindings released), "timers_fired": n '
  '(machine "after" timers that moved their machine), "cron_fired": n (cron slots fired, each one trigger_firing '
  'row), "partitions": n (history partitions created: this month and the next three), "purged": n (rows removed '
  'by retention, when a setting.retention_* is set: one purge batch), "partitions_dropped": n (past months of '
  'history left empty, dropped when their table''s lock was free), "at": now}; the last three are the '
  'installation''s, done by the daemon that serves the default organization (and by a lone tick()); a duty '
  'that failed counts 0 and its error is under "errors" (the others still ran). With engine_id (a daemon''s '
  'instance id) the duties are shared among live daemons by per-organization leases and this call does those of '
  'the organizations it serves ("serving": {organization: generation}); without it, every organization''s (a lone '
  'scheduler such as pg_cron). Calling it more often, or from several daemons, is harmless. Errors: FF003 a bad engine_id; FF008 a gateway login calling it without a valid '
  'token (the rows it writes record their actor).';
SELECT flowforge._rights('flowforge.tick(text)', 'flowforge_system', '{flowforge_daemon}');
