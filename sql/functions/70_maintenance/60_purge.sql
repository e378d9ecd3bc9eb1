-- Retention (issue 19): purge(older_than, dry_run, batch_size) removes the
-- runs of every engine that ended before the cutoff (by the directory's
-- ended_at) with everything that is theirs — task runs, outbox messages,
-- work items, checkpoints and their pages, graph steps and visits, a
-- machine's transitions, queued and seen events and timers, the idempotency
-- key, their events — and trigger firings (with their delivery keys, but a
-- live filesystem trigger's) and audit rows by their own retention. The
-- daemon runs it through tick() when a retention setting is set (the purged
-- duty).
--
-- Batched: one call removes at most batch_size runs, batch_size firings and
-- batch_size audit rows, and says "more": true when it stopped short; the
-- rows it locks are finished runs nobody works on (a run's lock is taken
-- SKIP LOCKED, in the writers' order: a DAG run's workflow_run row, any other
-- run's directory row). Whole months: a partition of the history whose rows
-- are all older than the cutoff — for events, also older than every run still
-- in the directory, of every organization, so it holds only the history of
-- runs already purged — is emptied by TRUNCATE (an ACCESS EXCLUSIVE lock on
-- that partition alone, taken NOWAIT: nobody writes an old month, and a
-- reader of it makes purge try again later) instead of deleted row by row.
-- Purge never locks a history table's parent; the empty partition is dropped
-- later by tick's partitions_dropped duty (05_history_partitions.sql). Only an
-- operator's purge takes whole months (they hold every organization's rows).
--
-- The append-only triggers let purge's DELETEs and TRUNCATEs through and
-- nothing else: _purge runs with flowforge.history_purge on (its SET
-- clause), and the triggers require that and current_user = flowforge_system,
-- the owner of purge() and tick(), which no login can become.

-- Adds n to the count under key of a report's "removed".
CREATE OR REPLACE FUNCTION flowforge._purge_add(p_removed jsonb, p_key text, p_n bigint) RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$ SELECT p_removed || jsonb_build_object(p_key, coalesce((p_removed ->> p_key)::bigint, 0) + coalesce(p_n, 0)) $$;
COMMENT ON FUNCTION flowforge._purge_add(jsonb, text, bigint) IS 'Internal: p_removed with p_n added to its count under p_key.';

-- One month partition, older than its cutoff: its rows counted (exactly
-- while the statistics say it is small, else estimated), then — unless a dry
-- run — emptied. Counted through the parent (row-level security,
-- forced on the partition with no policy, shows nobody its rows directly).
CREATE OR REPLACE FUNCTION flowforge._purge_partition(p_table text, p_partition regclass, p_lo timestamptz,
                                                      p_hi timestamptz, p_dry_run boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_column constant text := CASE p_table WHEN 'trigger_firing' THEN 'recorded_at' ELSE 'created_at' END;
    v_name constant text := p_partition::text;
    v_estimate constant real := (SELECT c.reltuples FROM pg_class c WHERE c.oid = p_partition);
    v_rows bigint;
    v_estimated boolean := v_estimate >= 100000;
BEGIN
    IF v_estimated THEN
        v_rows := v_estimate::bigint;
    ELSE
        EXECUTE format('SELECT count(*) FROM flowforge.%I WHERE %I >= $1 AND %I < $2', p_table, v_column, v_column)
        INTO v_rows USING p_lo, p_hi;
    END IF;
    IF NOT p_dry_run THEN
        BEGIN
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', p_partition);
        EXCEPTION WHEN lock_not_available THEN
            -- Somebody reads the month: next time.
            RETURN jsonb_build_object('table', p_table, 'partition', v_name, 'from', p_lo, 'to', p_hi,
                                      'rows', 0, 'estimated', false, 'busy', true,
                                      'emptied', false);
        END;
        IF pg_relation_size(p_partition) > 0 THEN
            EXECUTE format('TRUNCATE %s', p_partition);
        END IF;
    END IF;
    RETURN jsonb_build_object('table', p_table, 'partition', v_name, 'from', p_lo, 'to', p_hi,
                              'rows', v_rows, 'estimated', v_estimated, 'busy', false,
                              'emptied', NOT p_dry_run);
END;
$$;
COMMENT ON FUNCTION flowforge._purge_partition(text, regclass, timestamptz, timestamptz, boolean) IS
  'Internal (purge): counts month partition p_partition [p_lo, p_hi) of history table p_table and, unless p_dry_run, '
  'empties it (TRUNCATE, its lock NOWAIT: "busy" when taken; tick''s partitions_dropped duty drops it later). '
  'Returns {table, partition, from, to, rows, estimated, busy, emptied}.';

CREATE OR REPLACE FUNCTION flowforge._purge(p_orgs uuid[], p_runs_before timestamptz, p_firings_before timestamptz,
                                            p_audit_before timestamptz, p_batch integer, p_whole_months boolean,
                                            p_dry_run boolean)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET flowforge.history_purge = 'on'
AS $$
DECLARE
    v_all_orgs constant uuid[] := (SELECT array_agg(o.id) FROM flowforge.organization o);
    v_scope constant uuid[] := coalesce(p_orgs, v_all_orgs);
    v_candidates integer := 0;
    v_runs uuid[];
    v_run_orgs uuid[];
    v_kinds text[];
    v_tasks uuid[];
    v_n bigint;
    v_removed jsonb := '{}';
    v_by_engine jsonb := '{}';
    v_partitions jsonb := '[]';
    v_more boolean := false;
    v_oldest timestamptz;
    v_kept timestamptz;
    v_horizon timestamptz;
    v_skip tstzmultirange;
    v_part record;
    v_done jsonb;
    v_keys bigint;
    v_firing_months tstzmultirange;
    v_audit_months tstzmultirange;
BEGIN
    -- ------------------------------------------------------------- runs
    IF p_runs_before IS NOT NULL THEN
        -- Runs that ended before the cutoff, oldest created first (engine_run_ended_created), each under its
        -- run lock taken SKIP LOCKED and its end re-checked there (a retry_run may have re-opened it).
        WITH candidates AS (
            SELECT c.organization_id, c.run_id, c.engine_kind, c.created_at
            FROM flowforge.organization o
            CROSS JOIN LATERAL (
                SELECT e.organization_id, e.run_id, e.engine_kind, e.created_at
                FROM flowforge.engine_run e
                WHERE e.organization_id = o.id AND e.ended_at < p_runs_before AND e.created_at < p_runs_before
                ORDER BY e.created_at
                LIMIT p_batch) c
            WHERE o.id = ANY (v_scope)
            ORDER BY c.created_at
            LIMIT p_batch
        ), dag_locked AS (
            SELECT r.id FROM flowforge.workflow_run r
            WHERE r.id IN (SELECT c.run_id FROM candidates c WHERE c.engine_kind = 'dag')
            FOR UPDATE SKIP LOCKED
        ), locked AS (
            SELECT e.organization_id, e.run_id, e.engine_kind
            FROM flowforge.engine_run e
            JOIN candidates c ON c.organization_id = e.organization_id AND c.run_id = e.run_id
            WHERE e.ended_at < p_runs_before
              AND (e.engine_kind <> 'dag' OR e.run_id IN (SELECT d.id FROM dag_locked d)
                   OR NOT EXISTS (SELECT 1 FROM flowforge.workflow_run r WHERE r.id = e.run_id))
            FOR UPDATE OF e SKIP LOCKED
        )
        SELECT (SELECT count(*) FROM candidates), array_agg(l.run_id), array_agg(l.organization_id),
               array_agg(l.engine_kind)
        INTO v_candidates, v_runs, v_run_orgs, v_kinds
        FROM locked l;
        v_more := v_candidates >= p_batch OR v_candidates > coalesce(cardinality(v_runs), 0);

        IF v_runs IS NOT NULL THEN
            SELECT coalesce(jsonb_object_agg(k.kind, k.n), '{}') INTO v_by_engine
            FROM (SELECT u.kind, count(*) AS n FROM unnest(v_kinds) u(kind) GROUP BY u.kind) k;
            -- Children first, each through its run's index; the cascades then find nothing.
            DELETE FROM flowforge.checkpoint_page p USING flowforge.checkpoint c
            WHERE p.checkpoint_id = c.id AND c.organization_id = ANY (v_run_orgs) AND c.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'checkpoint_page', v_n);
            DELETE FROM flowforge.work_item w WHERE w.organization_id = ANY (v_run_orgs) AND w.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'work_item', v_n);
            DELETE FROM flowforge.checkpoint c WHERE c.organization_id = ANY (v_run_orgs) AND c.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'checkpoint', v_n);
            DELETE FROM flowforge.graph_step s WHERE s.organization_id = ANY (v_run_orgs) AND s.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'graph_step', v_n);
            DELETE FROM flowforge.graph_visit v WHERE v.organization_id = ANY (v_run_orgs) AND v.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'graph_visit', v_n);
            DELETE FROM flowforge.graph_run g WHERE g.organization_id = ANY (v_run_orgs) AND g.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'graph_run', v_n);
            DELETE FROM flowforge.machine_event_queue q WHERE q.organization_id = ANY (v_run_orgs) AND q.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'machine_event_queue', v_n);
            DELETE FROM flowforge.machine_event_seen s WHERE s.organization_id = ANY (v_run_orgs) AND s.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'machine_event_seen', v_n);
            DELETE FROM flowforge.machine_timer t WHERE t.organization_id = ANY (v_run_orgs) AND t.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'machine_timer', v_n);
            DELETE FROM flowforge.machine_transition x WHERE x.organization_id = ANY (v_run_orgs) AND x.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'machine_transition', v_n);
            DELETE FROM flowforge.machine_run m WHERE m.organization_id = ANY (v_run_orgs) AND m.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'machine_run', v_n);
            DELETE FROM flowforge.outbox_message m WHERE m.workflow_run_id = ANY (v_runs) AND m.organization_id = ANY (v_run_orgs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'outbox_message', v_n);
            WITH gone AS (
                DELETE FROM flowforge.task_run t WHERE t.workflow_run_id = ANY (v_runs) AND t.organization_id = ANY (v_run_orgs)
                RETURNING t.id
            )
            SELECT array_agg(g.id), count(*) INTO v_tasks, v_n FROM gone g;
            v_removed := flowforge._purge_add(v_removed, 'task_run', v_n);
            DELETE FROM flowforge.workflow_run r WHERE r.id = ANY (v_runs) AND r.organization_id = ANY (v_run_orgs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'workflow_run', v_n);
            DELETE FROM flowforge.idempotency_key k WHERE k.workflow_run_id = ANY (v_runs) AND k.organization_id = ANY (v_run_orgs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'idempotency_key', v_n);
            DELETE FROM flowforge.engine_run e WHERE e.organization_id = ANY (v_run_orgs) AND e.run_id = ANY (v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'engine_run', v_n);
        END IF;

        -- The months of events that will go whole: older than the cutoff and than the oldest run this purge
        -- keeps — live (engine_run_live_created), or ended after the cutoff (engine_run_ended_created,
        -- index-only), of any organization; an event is never older than its run. The purged runs' events in
        -- them are left to the month's TRUNCATE (below, once no run created before its end is left: in this
        -- call or a later one) instead of being deleted one by one.
        IF p_whole_months THEN
            v_kept := (SELECT min(least(l.created_at, s.created_at))
                       FROM flowforge.organization o
                       LEFT JOIN LATERAL (SELECT e.created_at FROM flowforge.engine_run e
                                          WHERE e.organization_id = o.id AND e.ended_at IS NULL
                                          ORDER BY e.created_at LIMIT 1) l ON true
                       LEFT JOIN LATERAL (SELECT e.created_at FROM flowforge.engine_run e
                                          WHERE e.organization_id = o.id AND e.ended_at >= p_runs_before
                                          ORDER BY e.created_at LIMIT 1) s ON true);
            SELECT range_agg(tstzrange(p.lo, p.hi)) INTO v_skip
            FROM flowforge._history_partitions('task_run_event') p
            WHERE NOT p.is_default AND p.hi <= least(p_runs_before, coalesce(v_kept, 'infinity'));
            -- And the months that go now: no run at all created before their end is left.
            v_oldest := (SELECT min(x.created_at)
                         FROM flowforge.organization o
                         CROSS JOIN LATERAL (SELECT e.created_at FROM flowforge.engine_run e
                                             WHERE e.organization_id = o.id
                                             ORDER BY e.created_at, e.id LIMIT 1) x);
            v_horizon := least(p_runs_before, coalesce(v_oldest, 'infinity'));
        END IF;
        IF v_runs IS NOT NULL THEN
            -- A DAG task's events by its task run (idx_event_taskrun_created); a run's own and its work items'
            -- (task_run_id NULL) by the run (idx_event_run_level).
            DELETE FROM flowforge.task_run_event e
            WHERE e.task_run_id = ANY (v_tasks) AND (v_skip IS NULL OR NOT v_skip @> e.created_at);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'task_run_event', v_n);
            DELETE FROM flowforge.task_run_event e
            WHERE e.workflow_run_id = ANY (v_runs) AND e.task_run_id IS NULL
              AND (v_skip IS NULL OR NOT v_skip @> e.created_at);
            GET DIAGNOSTICS v_n = ROW_COUNT; v_removed := flowforge._purge_add(v_removed, 'task_run_event', v_n);
        END IF;
        IF p_whole_months THEN
            FOR v_part IN SELECT * FROM flowforge._history_partitions('task_run_event') p
                          WHERE NOT p.is_default AND p.hi <= v_horizon LOOP
                v_done := flowforge._purge_partition('task_run_event', v_part.partition, v_part.lo, v_part.hi, p_dry_run);
                v_partitions := v_partitions || v_done;
                v_removed := flowforge._purge_add(v_removed, 'task_run_event', (v_done ->> 'rows')::bigint);
                v_more := v_more OR (v_done ->> 'busy')::boolean;
            END LOOP;
        END IF;
    END IF;

    -- ------------------------------------------------------------- trigger firings
    IF p_firings_before IS NOT NULL THEN
        IF p_whole_months THEN
            FOR v_part IN SELECT * FROM flowforge._history_partitions('trigger_firing') p
                          WHERE NOT p.is_default AND p.hi <= p_firings_before LOOP
                v_done := flowforge._purge_partition('trigger_firing', v_part.partition, v_part.lo, v_part.hi, p_dry_run);
                v_partitions := v_partitions || v_done;
                v_removed := flowforge._purge_add(v_removed, 'trigger_firing', (v_done ->> 'rows')::bigint);
                v_more := v_more OR (v_done ->> 'busy')::boolean;
                v_firing_months := coalesce(v_firing_months, '{}'::tstzmultirange) + tstzmultirange(tstzrange(v_part.lo, v_part.hi));
            END LOOP;
        END IF;
        -- The rest, row by row, oldest first per organization (trigger_firing_tenant_recorded). A dry run
        -- does not empty the months above: their rows are not counted twice.
        WITH victims AS (
            SELECT f.organization_id, f.id, f.recorded_at
            FROM flowforge.organization o
            CROSS JOIN LATERAL (
                SELECT f.organization_id, f.id, f.recorded_at FROM flowforge.trigger_firing f
                WHERE f.organization_id = o.id AND f.recorded_at < p_firings_before
                  AND (v_firing_months IS NULL OR NOT v_firing_months @> f.recorded_at)
                ORDER BY f.recorded_at LIMIT p_batch) f
            WHERE o.id = ANY (v_scope)
            ORDER BY f.recorded_at
            LIMIT p_batch
        ), gone AS (
            DELETE FROM flowforge.trigger_firing f USING victims v
            WHERE f.organization_id = v.organization_id AND f.id = v.id AND f.recorded_at = v.recorded_at
            RETURNING 1
        )
        SELECT count(*) INTO v_n FROM gone;
        v_removed := flowforge._purge_add(v_removed, 'trigger_firing', v_n);
        v_more := v_more OR v_n >= p_batch;
        -- Delivery keys by the same retention, oldest first (trigger_delivery_recorded) — but a live
        -- filesystem trigger's: its delivery ids are files (<path>@<mtime>) that may still be there, and a
        -- feeder asks for them all at every poll (feeder_unfired); without the key they would fire again.
        -- (A cron slot never comes back, a gitpoll trigger keeps its last commit, a webhook redelivered
        -- after the retention fires again.)
        WITH victims AS (
            SELECT k.organization_id, k.trigger_id, k.delivery_id
            FROM flowforge.organization o
            CROSS JOIN LATERAL (
                SELECT k.organization_id, k.trigger_id, k.delivery_id FROM flowforge.trigger_delivery k
                WHERE k.organization_id = o.id AND k.recorded_at < p_firings_before
                  AND NOT EXISTS (SELECT 1 FROM flowforge.scheduled_trigger t
                                  WHERE t.id = k.trigger_id AND t.trigger_type = 'filesystem' AND t.deleted_at IS NULL)
                ORDER BY k.recorded_at LIMIT p_batch) k
            WHERE o.id = ANY (v_scope)
            LIMIT p_batch
        ), gone AS (
            DELETE FROM flowforge.trigger_delivery k USING victims v
            WHERE k.organization_id = v.organization_id AND k.trigger_id = v.trigger_id AND k.delivery_id = v.delivery_id
            RETURNING 1
        )
        SELECT count(*) INTO v_keys FROM gone;
        v_removed := flowforge._purge_add(v_removed, 'trigger_delivery', v_keys);
        v_more := v_more OR v_keys >= p_batch;
    END IF;

    -- ------------------------------------------------------------- audit rows
    IF p_audit_before IS NOT NULL THEN
        IF p_whole_months THEN
            FOR v_part IN SELECT * FROM flowforge._history_partitions('audit_log') p
                          WHERE NOT p.is_default AND p.hi <= p_audit_before LOOP
                v_done := flowforge._purge_partition('audit_log', v_part.partition, v_part.lo, v_part.hi, p_dry_run);
                v_partitions := v_partitions || v_done;
                v_removed := flowforge._purge_add(v_removed, 'audit_log', (v_done ->> 'rows')::bigint);
                v_more := v_more OR (v_done ->> 'busy')::boolean;
                v_audit_months := coalesce(v_audit_months, '{}'::tstzmultirange) + tstzmultirange(tstzrange(v_part.lo, v_part.hi));
            END LOOP;
        END IF;
        -- Oldest first per organization (idx_audit_org_created, backwards), each by its primary key.
        WITH victims AS (
            SELECT a.organization_id, a.id, a.created_at
            FROM flowforge.organization o
            CROSS JOIN LATERAL (
                SELECT a.organization_id, a.id, a.created_at FROM flowforge.audit_log a
                WHERE a.organization_id = o.id AND a.created_at < p_audit_before
                  AND (v_audit_months IS NULL OR NOT v_audit_months @> a.created_at)
                ORDER BY a.created_at LIMIT p_batch) a
            WHERE o.id = ANY (v_scope)
            ORDER BY a.created_at
            LIMIT p_batch
        ), gone AS (
            DELETE FROM flowforge.audit_log a USING victims v
            WHERE a.organization_id = v.organization_id AND a.id = v.id AND a.created_at = v.created_at
            RETURNING 1
        )
        SELECT count(*) INTO v_n FROM gone;
        v_removed := flowforge._purge_add(v_removed, 'audit_log', v_n);
        v_more := v_more OR v_n >= p_batch;
    END IF;

    RETURN jsonb_build_object(
        'dry_run', p_dry_run,
        'organizations', CASE WHEN p_orgs IS NULL THEN to_jsonb('all'::text) ELSE to_jsonb(p_orgs) END,
        'runs_ended_before', p_runs_before, 'firings_before', p_firings_before, 'audit_before', p_audit_before,
        'runs', v_by_engine,
        'removed', (SELECT coalesce(jsonb_object_agg(t.name, coalesce((v_removed ->> t.name)::bigint, 0)), '{}')
                    FROM unnest(ARRAY['engine_run', 'workflow_run', 'task_run', 'outbox_message', 'idempotency_key',
                                      'work_item', 'checkpoint', 'checkpoint_page', 'graph_run', 'graph_step',
                                      'graph_visit', 'machine_run', 'machine_transition', 'machine_event_queue',
                                      'machine_event_seen', 'machine_timer', 'task_run_event', 'trigger_firing',
                                      'trigger_delivery', 'audit_log']) t(name)),
        'partitions', v_partitions,
        'more', v_more);
END;
$$;
COMMENT ON FUNCTION flowforge._purge(uuid[], timestamptz, timestamptz, timestamptz, integer, boolean, boolean) IS
  'Internal (purge, tick''s purged duty): one batch of retention for the organizations p_orgs (NULL: all) — at most '
  'p_batch runs that ended before p_runs_before with everything that is theirs, p_batch firings recorded before '
  'p_firings_before, p_batch audit rows before p_audit_before (each cutoff NULL: none) — and, with p_whole_months, the '
  'months of history entirely older than their cutoff (events: and than every run still in the directory) by '
  'TRUNCATE instead of row by row. p_dry_run counts months without emptying them (the caller rolls the rest '
  'back). Runs with flowforge.history_purge on, which the append-only triggers let through for flowforge_system. '
  'Returns the report purge() returns.';

CREATE OR REPLACE FUNCTION flowforge.purge(older_than interval, dry_run boolean DEFAULT true, batch_size integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET flowforge.history_purge = ''
AS $$
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_operator constant boolean := flowforge._is_operator();
    v_org uuid;
    v_setting record;
    v_report jsonb;
BEGIN
    IF purge.older_than IS NULL OR purge.older_than < interval '0' OR purge.older_than > interval '100 years' THEN
        RAISE EXCEPTION 'older_than must be between 0 and 100 years, got %', coalesce(purge.older_than::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Runs that ended longer ago than this are removed, e.g. ''90 days''.';
    END IF;
    IF purge.batch_size IS NULL OR purge.batch_size NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 100000' USING ERRCODE = 'FF003',
            HINT = 'The default is 1000; call again while the report says "more".';
    END IF;
    IF purge.dry_run IS NULL THEN
        RAISE EXCEPTION 'dry_run must be true or false' USING ERRCODE = 'FF003', HINT = 'The default, true, removes nothing.';
    END IF;
    -- The operator purges every organization; an organization's owner its own (FF007 for anyone else).
    IF NOT v_operator THEN
        v_org := flowforge._authorize('owner');
    END IF;
    SELECT s.retention_firings, s.retention_audit INTO v_setting FROM flowforge.setting s;
    IF purge.dry_run THEN
        -- Everything a live call would do, then undone: the report is exact by construction.
        BEGIN
            v_report := flowforge._purge(CASE WHEN v_operator THEN NULL ELSE ARRAY[v_org] END,
                                         v_now - purge.older_than, v_now - coalesce(v_setting.retention_firings, purge.older_than),
                                         v_now - v_setting.retention_audit, purge.batch_size, v_operator, true);
            RAISE EXCEPTION 'dry run: undone' USING ERRCODE = 'FFD00';
        EXCEPTION WHEN SQLSTATE 'FFD00' THEN
            NULL;
        END;
        RETURN v_report;
    END IF;
    v_report := flowforge._purge(CASE WHEN v_operator THEN NULL ELSE ARRAY[v_org] END,
                                 v_now - purge.older_than, v_now - coalesce(v_setting.retention_firings, purge.older_than),
                                 v_now - v_setting.retention_audit, purge.batch_size, v_operator, false);
    PERFORM flowforge._purge_audit(coalesce(v_org, '00000000-0000-0000-0000-000000000001'), v_report);
    RETURN v_report;
END;
$$;
COMMENT ON FUNCTION flowforge.purge(interval, boolean, integer) IS
  'purge(older_than interval, dry_run boolean default true, batch_size integer default 1000) -> jsonb. Retention: '
  'removes the runs of every engine that ended more than older_than ago (the run directory''s ended_at) with their '
  'task runs, outbox messages, work items, checkpoints, graph steps and visits, machine transitions, queued and seen '
  'events and timers, idempotency keys and events; trigger firings and their delivery keys (a live filesystem '
  'trigger''s keys stay: its files may still be there) recorded before setting.retention_firings (default: older_than); audit rows older than setting.retention_audit (default: kept). '
  'Live work is never touched: a run counts once it ended, and one being retried or written to is skipped. Batched: '
  'at most batch_size runs, firings and audit rows per call; call again while the report says "more": true. The '
  'operator (superuser, member of flowforge_owner) purges every organization and empties whole months of history by '
  'TRUNCATE when all their rows are older than the cutoff (events: and than every run still in the directory; tick '
  'drops the empty month later); an organization''s owner purges its own rows, row by row. With dry_run (the default) nothing is '
  'removed and the report says what would be. Report: {dry_run, organizations ("all" or [id]), runs_ended_before, '
  'firings_before, audit_before, runs: {engine: n}, removed: {table: rows}, partitions: [{table, partition, from, '
  'to, rows, estimated, busy, emptied}], more}. A live purge writes an audit row (action purge). '
  'Errors: FF003 older_than not 0..100 years, batch_size not 1..100000, dry_run NULL; FF007 an admin, member or '
  'viewer; FF011 never in practice (a month partition purge emptied still holding a row); FF007/FF008 as for every '
  'API call.';
SELECT flowforge._rights('flowforge.purge(interval,boolean,integer)', 'flowforge_system', '{flowforge_app,flowforge_gateway}');

-- What a live purge removed, in the audit log: which tables (names, never values).
CREATE OR REPLACE FUNCTION flowforge._purge_audit(p_org uuid, p_report jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_tables constant text[] := (SELECT array_agg(r.key ORDER BY r.key) FROM jsonb_each_text(p_report -> 'removed') r
                                 WHERE r.value::bigint > 0);
BEGIN
    IF v_tables IS NOT NULL THEN
        PERFORM flowforge._audit(p_org, 'purge', 'history', p_report ->> 'runs_ended_before', v_tables);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._purge_audit(uuid, jsonb) IS
  'Internal: one audit_log row (action purge, entity history, entity_id the runs'' cutoff, fields the tables it '
  'removed rows from) for a purge that removed anything.';

-- tick's purged duty: when a retention setting is set, one batch as the
-- operator would purge it — runs by retention_runs, firings by
-- retention_firings (default retention_runs), audit rows by retention_audit.
CREATE OR REPLACE FUNCTION flowforge._purge_due(p_now timestamptz, p_batch integer DEFAULT 500) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_setting record;
    v_report jsonb;
BEGIN
    SELECT s.retention_runs, s.retention_firings, s.retention_audit INTO v_setting FROM flowforge.setting s;
    IF v_setting.retention_runs IS NULL AND v_setting.retention_firings IS NULL AND v_setting.retention_audit IS NULL THEN
        RETURN 0;
    END IF;
    v_report := flowforge._purge(NULL, p_now - v_setting.retention_runs,
                                 p_now - coalesce(v_setting.retention_firings, v_setting.retention_runs),
                                 p_now - v_setting.retention_audit, p_batch, true, false);
    PERFORM flowforge._purge_audit('00000000-0000-0000-0000-000000000001', v_report);
    RETURN (SELECT coalesce(sum(r.value::bigint), 0) FROM jsonb_each_text(v_report -> 'removed') r);
END;
$$;
COMMENT ON FUNCTION flowforge._purge_due(timestamptz, integer) IS
  'Internal (tick''s purged duty): when setting.retention_runs, retention_firings or retention_audit is set, one '
  'batch of p_batch (500) as the operator''s purge, cutoffs counted back from p_now; the rows it removed (0 when no '
  'retention is set).';
