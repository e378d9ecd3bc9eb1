-- Reads for flowforge serve (issue 20): what the web UI, the JSON API and
-- /metrics show that no other read returns. Viewer rights in the caller's
-- organization, like every read; metrics_all is the operator's scrape
-- (flowforge_readonly) across organizations.
--
--   run_causes(run_ids) -> what caused each run: parent, trigger, creator
--   queue_stats() -> every queue of both kinds: ready, scheduled, running, age, throughput
--   metrics(since) -> the caller's organization's figures for /metrics
--   metrics_all(since) -> every organization's, for the operator's scrape token
--
-- /metrics counters (claims, completions, failures, retries, trigger firings)
-- are counted over a window: the events after `since` (the window end of the
-- server's previous scrape) up to now less a settle delay (a transaction still
-- open then commits events stamped with its start). The server adds each
-- window to its counters, so each scrape reads what happened since the last
-- one, through the indexes of those event kinds (idx_event_throughput,
-- idx_event_retries, trigger_firing_recorded) — never the history.

CREATE OR REPLACE FUNCTION flowforge.run_causes(run_ids uuid[])
RETURNS TABLE (run_id uuid, kind text, parent_run_id uuid, triggered_by text, trigger_firing_id uuid,
               created_by text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    IF run_causes.run_ids IS NULL OR cardinality(run_causes.run_ids) > 1000 THEN
        RAISE EXCEPTION 'run_ids must be an array of at most 1000 run ids' USING ERRCODE = 'FF003',
            HINT = 'Ask for one page of list_runs at a time.';
    END IF;
    -- One probe of engine_run_tenant_run_uq per id; a foreign or unknown id is simply absent.
    RETURN QUERY
    SELECT e.run_id, e.engine_kind::text, e.parent_run_id, e.triggered_by::text, e.trigger_firing_id, e.created_by
    FROM flowforge.engine_run e
    WHERE e.organization_id = v_org AND e.run_id = ANY (run_causes.run_ids)
    ORDER BY e.created_at DESC, e.id DESC;
END;
$$;
COMMENT ON FUNCTION flowforge.run_causes(uuid[]) IS
  'run_causes(run_ids uuid[]) -> setof (run_id, kind, parent_run_id, triggered_by, trigger_firing_id, created_by): '
  'what caused each of the given runs (a page of list_runs) — its parent run, the trigger and firing that started it, '
  'the login or API key that created it — from the run directory, newest first; ids of no run of the caller''s '
  'organization are left out (the same answer for unknown and foreign). Viewer rights. Errors: FF003 run_ids NULL '
  'or more than 1000; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.run_causes(uuid[])', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

-- The live units of work per organization, kind and queue: ready (due),
-- scheduled (ready later), running, the oldest due one — each state through
-- the partial index that holds only it, as queue_depth (0026) reads them.
CREATE OR REPLACE FUNCTION flowforge._queue_live(p_orgs uuid[], p_now timestamptz)
RETURNS TABLE (organization_id uuid, unit_kind text, queue text, ready bigint, scheduled bigint, running bigint,
               oldest_ready_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH units AS (
        SELECT tr.organization_id, 'task_run'::text AS unit_kind, tr.queue::text AS queue, 'ready'::text AS status,
               tr.ready_at AS at, NULL::text AS holder
        FROM flowforge.task_run tr WHERE tr.state = 'ready' AND (p_orgs IS NULL OR tr.organization_id = ANY (p_orgs))
        UNION ALL
        SELECT tr.organization_id, 'task_run', tr.queue, 'running', NULL, tr.lease_owner
        FROM flowforge.task_run tr WHERE tr.state = 'running' AND (p_orgs IS NULL OR tr.organization_id = ANY (p_orgs))
        UNION ALL
        SELECT w.organization_id, 'work_item', w.queue, 'ready', w.next_attempt_at, NULL
        FROM flowforge.work_item w WHERE w.status = 'pending' AND (p_orgs IS NULL OR w.organization_id = ANY (p_orgs))
        UNION ALL
        SELECT w.organization_id, 'work_item', w.queue, 'running', NULL, w.leased_by
        FROM flowforge.work_item w WHERE w.status = 'dispatched' AND (p_orgs IS NULL OR w.organization_id = ANY (p_orgs))
    )
    SELECT u.organization_id, u.unit_kind, u.queue,
           count(*) FILTER (WHERE u.status = 'ready' AND u.at <= p_now),
           count(*) FILTER (WHERE u.status = 'ready' AND u.at > p_now),
           -- A fan-out's held parent is not running: its children are.
           count(*) FILTER (WHERE u.status = 'running' AND u.holder IS DISTINCT FROM 'flowforge:fan-out'),
           min(u.at) FILTER (WHERE u.status = 'ready' AND u.at <= p_now)
    FROM units u
    GROUP BY u.organization_id, u.unit_kind, u.queue
$$;
COMMENT ON FUNCTION flowforge._queue_live(uuid[], timestamptz) IS
  'Internal: live task runs and work items per organization (p_orgs, NULL for all), kind and queue — ready and due, '
  'scheduled later, running (not a fan-out''s held parent), the oldest due ready_at — through the partial indexes '
  'of those states. Row-level security of the calling definer applies.';

-- Events of the counted kinds in (p_since, p_until], per organization, kind
-- of unit and queue: the window's claims, completions, failures for good and
-- retries. Each unit's queue by its primary key (one probe per event of the
-- window, never a join of the table).
CREATE OR REPLACE FUNCTION flowforge._event_window(p_orgs uuid[], p_since timestamptz, p_until timestamptz)
RETURNS TABLE (organization_id uuid, unit_kind text, queue text, claims bigint, completions bigint, failures bigint,
               retries bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH ev AS (
        SELECT e.organization_id, e.task_run_id, e.work_item_id, e.kind, e.to_state
        FROM flowforge.task_run_event e                                               -- idx_event_throughput
        WHERE e.kind IN ('claimed', 'completed', 'failed', 'lease_expired', 'timed_out')
          AND e.created_at > p_since AND e.created_at <= p_until
          AND (p_orgs IS NULL OR e.organization_id = ANY (p_orgs))
        UNION ALL
        SELECT e.organization_id, e.task_run_id, e.work_item_id, e.kind, e.to_state
        FROM flowforge.task_run_event e                                               -- idx_event_retries
        WHERE e.kind = 'retry_scheduled' AND e.created_at > p_since AND e.created_at <= p_until
          AND (p_orgs IS NULL OR e.organization_id = ANY (p_orgs))
    ), q AS (
        SELECT ev.organization_id, CASE WHEN ev.work_item_id IS NULL THEN 'task_run' ELSE 'work_item' END AS unit_kind,
               CASE WHEN ev.work_item_id IS NULL
                    THEN (SELECT tr.queue::text FROM flowforge.task_run tr WHERE tr.id = ev.task_run_id)
                    ELSE (SELECT w.queue::text FROM flowforge.work_item w WHERE w.id = ev.work_item_id) END AS queue,
               ev.kind, ev.to_state
        FROM ev
    )
    SELECT q.organization_id, q.unit_kind, coalesce(q.queue, '(purged)'),
           count(*) FILTER (WHERE q.kind = 'claimed'),
           count(*) FILTER (WHERE q.kind = 'completed'),
           count(*) FILTER (WHERE q.kind = 'failed' OR (q.kind IN ('lease_expired', 'timed_out') AND q.to_state = 'failed')),
           count(*) FILTER (WHERE q.kind = 'retry_scheduled'
                                  OR (q.kind IN ('lease_expired', 'timed_out') AND q.to_state IS DISTINCT FROM 'failed'))
    FROM q
    GROUP BY 1, 2, 3
$$;
COMMENT ON FUNCTION flowforge._event_window(uuid[], timestamptz, timestamptz) IS
  'Internal: per organization (p_orgs, NULL for all), kind of unit and queue, the events created in (p_since, '
  'p_until] — claims (claimed), completions (completed), failures for good (failed, or a reaped attempt that '
  'failed) and retries (retry_scheduled, or a reaped attempt sent back) — through idx_event_throughput and '
  'idx_event_retries. Row-level security of the calling definer applies.';

CREATE OR REPLACE FUNCTION flowforge.queue_stats()
RETURNS TABLE (queue text, unit_kind text, delivery text, ready bigint, scheduled bigint, running bigint,
               oldest_ready_at timestamptz, oldest_ready_age interval, claims_last_minute bigint,
               completions_last_minute bigint, failures_last_minute bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_now constant timestamptz := flowforge.now();
BEGIN
    RETURN QUERY
    WITH live AS (SELECT * FROM flowforge._queue_live(ARRAY[v_org], v_now)),
         recent AS (SELECT * FROM flowforge._event_window(ARRAY[v_org], v_now - interval '1 minute', v_now)),
         keys AS (SELECT l.unit_kind, l.queue FROM live l UNION SELECT r.unit_kind, r.queue FROM recent r
                  UNION SELECT 'task_run', q.name::text FROM flowforge.queue q WHERE q.organization_id = v_org)
    SELECT k.queue, k.unit_kind,
           CASE WHEN k.unit_kind = 'task_run' AND q.exchange IS NOT NULL THEN 'push' ELSE 'pull' END,
           coalesce(l.ready, 0), coalesce(l.scheduled, 0), coalesce(l.running, 0), l.oldest_ready_at,
           v_now - l.oldest_ready_at, coalesce(r.claims, 0), coalesce(r.completions, 0), coalesce(r.failures, 0)
    FROM keys k
    LEFT JOIN live l ON (l.unit_kind, l.queue) = (k.unit_kind, k.queue)
    LEFT JOIN recent r ON (r.unit_kind, r.queue) = (k.unit_kind, k.queue)
    LEFT JOIN flowforge.queue q ON k.unit_kind = 'task_run' AND q.organization_id = v_org AND q.name = k.queue
    ORDER BY k.queue, k.unit_kind;
END;
$$;
COMMENT ON FUNCTION flowforge.queue_stats() IS
  'queue_stats() -> setof (queue, unit_kind, delivery, ready, scheduled, running, oldest_ready_at, oldest_ready_age, '
  'claims_last_minute, completions_last_minute, failures_last_minute): every queue of the caller''s organization '
  'with live work, recent work or a configuration, per kind of unit (task_run: a DAG task''s attempts, claimed with '
  'claim(); work_item: graph visits, machine actions, fan-out children, claimed with claim_work()), by name — what '
  'is ready and due, scheduled later, running, how old the oldest due unit is, and the last minute''s throughput. '
  'Reads live rows through their partial indexes and the last minute''s events only. Viewer rights. '
  'Errors: FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.queue_stats()', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

-- Every figure of /metrics for the organizations p_orgs (NULL: all), as rows
-- (organization_id, metric, labels, value); the window counters for
-- (p_since, p_until]. Gauges read live rows through partial indexes, runs by
-- engine and state one grouped pass over the run tables (runs, not history).
CREATE OR REPLACE FUNCTION flowforge._metrics(p_orgs uuid[], p_since timestamptz, p_until timestamptz,
                                              p_now timestamptz)
RETURNS TABLE (organization_id uuid, metric text, labels jsonb, value double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_timeout constant interval := (SELECT s.agent_timeout FROM flowforge.setting s);
BEGIN
    RETURN QUERY
    SELECT l.organization_id, x.metric, jsonb_build_object('queue', l.queue, 'unit', l.unit_kind), x.value
    FROM flowforge._queue_live(p_orgs, p_now) l
    CROSS JOIN LATERAL (VALUES ('queue_ready', l.ready::float8), ('queue_scheduled', l.scheduled::float8),
                               ('queue_running', l.running::float8),
                               ('queue_oldest_ready_age_seconds',
                                coalesce(extract(epoch FROM p_now - l.oldest_ready_at)::float8, 0))) x(metric, value);

    IF p_since < p_until THEN
        RETURN QUERY
        SELECT w.organization_id, x.metric, jsonb_build_object('queue', w.queue, 'unit', w.unit_kind), x.value
        FROM flowforge._event_window(p_orgs, p_since, p_until) w
        CROSS JOIN LATERAL (VALUES ('claims', w.claims::float8), ('completions', w.completions::float8),
                                   ('failures', w.failures::float8), ('retries', w.retries::float8)) x(metric, value)
        WHERE x.value > 0;

        RETURN QUERY                                                                  -- trigger_firing_recorded
        SELECT f.organization_id, 'trigger_firings', jsonb_build_object('outcome', f.outcome), count(*)::float8
        FROM flowforge.trigger_firing f
        WHERE f.recorded_at > p_since AND f.recorded_at <= p_until
          AND (p_orgs IS NULL OR f.organization_id = ANY (p_orgs))
        GROUP BY f.organization_id, f.outcome;
    END IF;

    RETURN QUERY                                                                      -- idx_outbox_pending
    SELECT m.organization_id, x.metric, '{}'::jsonb, x.value
    FROM (SELECT o.organization_id, count(*) AS n, min(o.created_at) AS oldest
          FROM flowforge.outbox_message o
          WHERE o.published_at IS NULL AND (p_orgs IS NULL OR o.organization_id = ANY (p_orgs))
          GROUP BY o.organization_id) m
    CROSS JOIN LATERAL (VALUES ('outbox_backlog', m.n::float8),
                               ('outbox_oldest_age_seconds', extract(epoch FROM p_now - m.oldest)::float8)) x(metric, value);

    RETURN QUERY
    SELECT a.organization_id, 'agents', jsonb_build_object('status', s.status), count(*)::float8
    FROM flowforge.agent a
    CROSS JOIN LATERAL (SELECT flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval, v_timeout,
                                                        p_now) AS status) s
    WHERE a.deleted_at IS NULL AND (p_orgs IS NULL OR a.organization_id = ANY (p_orgs))
    GROUP BY a.organization_id, s.status;

    RETURN QUERY
    SELECT r.organization_id, 'runs', jsonb_build_object('engine', r.engine, 'state', r.state), r.n::float8
    FROM (SELECT d.organization_id, 'dag'::text AS engine, d.state::text AS state, count(*) AS n
          FROM flowforge.workflow_run d WHERE p_orgs IS NULL OR d.organization_id = ANY (p_orgs)
          GROUP BY d.organization_id, d.state
          UNION ALL
          SELECT g.organization_id, 'graph', g.status::text, count(*)
          FROM flowforge.graph_run g WHERE p_orgs IS NULL OR g.organization_id = ANY (p_orgs)
          GROUP BY g.organization_id, g.status
          UNION ALL
          SELECT m.organization_id, 'statemachine', m.status::text, count(*)
          FROM flowforge.machine_run m WHERE p_orgs IS NULL OR m.organization_id = ANY (p_orgs)
          GROUP BY m.organization_id, m.status) r;
END;
$$;
COMMENT ON FUNCTION flowforge._metrics(uuid[], timestamptz, timestamptz, timestamptz) IS
  'Internal: every /metrics figure for the organizations p_orgs (NULL for all) as (organization_id, metric, labels, '
  'value): queue_ready / queue_scheduled / queue_running / queue_oldest_ready_age_seconds per queue and unit kind; '
  'claims / completions / failures / retries per queue and unit kind and trigger_firings per outcome in the window '
  '(p_since, p_until]; outbox_backlog and outbox_oldest_age_seconds; agents per effective status; runs per engine '
  'and state. Row-level security of the calling definer applies.';

-- The window a scrape counts: after since (the previous scrape's window end),
-- up to now less the settle delay; at most an hour (a scraper that stopped for
-- longer starts again from the last hour); none on the first scrape.
CREATE OR REPLACE FUNCTION flowforge._metrics_window(p_since timestamptz, p_now timestamptz,
                                                     OUT since timestamptz, OUT until timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    until := p_now - interval '5 seconds';
    since := least(greatest(coalesce(p_since, until), until - interval '1 hour'), until);
END;
$$;
COMMENT ON FUNCTION flowforge._metrics_window(timestamptz, timestamptz) IS
  'Internal: the counting window of a scrape — (since, until] with until = now - 5 s (events of a transaction still '
  'open are stamped with its start) and since = p_since clamped to the last hour; an empty window when p_since is NULL.';

CREATE OR REPLACE FUNCTION flowforge.metrics(since timestamptz DEFAULT NULL)
RETURNS TABLE (organization text, metric text, labels jsonb, value double precision, window_end timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_now constant timestamptz := flowforge.now();
    v_window record;
BEGIN
    SELECT * INTO v_window FROM flowforge._metrics_window(metrics.since, v_now);
    RETURN QUERY
    SELECT o.slug::text, m.metric, m.labels, m.value, v_window.until
    FROM flowforge._metrics(ARRAY[v_org], v_window.since, v_window.until, v_now) m
    JOIN flowforge.organization o ON o.id = m.organization_id
    ORDER BY 2, 1, 3::text;
    -- Always one row, so a scrape of an organization with nothing to count still learns where its window ends.
    RETURN QUERY SELECT NULL::text, 'window_end'::text, '{}'::jsonb, extract(epoch FROM v_window.until)::float8,
                        v_window.until;
END;
$$;
COMMENT ON FUNCTION flowforge.metrics(timestamptz) IS
  'metrics(since timestamptz default null) -> setof (organization, metric, labels, value, window_end): the caller''s '
  'organization''s figures for flowforge serve''s /metrics — gauges (queue_ready, queue_scheduled, queue_running, '
  'queue_oldest_ready_age_seconds per queue and unit kind; outbox_backlog, outbox_oldest_age_seconds; agents per '
  'status; runs per engine and state) and the counts of the window (since, window_end] (claims, completions, '
  'failures, retries per queue and unit kind; trigger_firings per outcome), which the server adds to its counters. '
  'window_end is now - 5 s; since is clamped to the last hour and NULL counts nothing (the first scrape); a last '
  'row, metric window_end with no organization, carries it even when nothing else is there. Reads '
  'live rows through partial indexes, the window''s events through idx_event_throughput, idx_event_retries and '
  'trigger_firing_recorded, and runs with one grouped pass. Viewer rights. Errors: FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.metrics(timestamptz)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.metrics_all(since timestamptz DEFAULT NULL)
RETURNS TABLE (organization text, metric text, labels jsonb, value double precision, window_end timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_window record;
BEGIN
    IF NOT flowforge._is_read_operator() THEN
        RAISE EXCEPTION 'metrics_all is the operator''s: % is not a member of flowforge_readonly or flowforge_owner',
            session_user
            USING ERRCODE = 'FF007', HINT = 'A tenant reads its own organization''s figures with metrics(since).';
    END IF;
    SELECT * INTO v_window FROM flowforge._metrics_window(metrics_all.since, v_now);
    RETURN QUERY
    SELECT o.slug::text, m.metric, m.labels, m.value, v_window.until
    FROM flowforge._metrics(NULL, v_window.since, v_window.until, v_now) m
    JOIN flowforge.organization o ON o.id = m.organization_id
    ORDER BY 2, 1, 3::text;
    RETURN QUERY SELECT NULL::text, 'window_end'::text, '{}'::jsonb, extract(epoch FROM v_window.until)::float8,
                        v_window.until;
END;
$$;
COMMENT ON FUNCTION flowforge.metrics_all(timestamptz) IS
  'metrics_all(since timestamptz default null) -> setof (organization, metric, labels, value, window_end): '
  'metrics(since) for every organization, each row labelled by its organization''s slug — the operator''s scrape '
  '(flowforge serve''s scrape token). For flowforge_readonly logins (not a gateway) and the operator. '
  'Errors: FF007 the caller is not a read operator.';
SELECT flowforge._rights('flowforge.metrics_all(timestamptz)', 'flowforge_system', '{flowforge_readonly}');

-- What each agent holds right now and the affinity keys bound to it (the
-- agents page): running task runs by their lease owner, dispatched work items
-- by their agent, through the partial indexes of those states; the bindings
-- through affinity_binding_agent_idx. Bounded by max_rows, by agent name.
CREATE OR REPLACE FUNCTION flowforge.agent_holdings(max_rows integer DEFAULT 500)
RETURNS TABLE (agent text, what text, unit_id uuid, run_id uuid, name text, queue text, since timestamptz,
               lease_expires_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    IF agent_holdings.max_rows IS NULL OR agent_holdings.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 500.';
    END IF;
    RETURN QUERY
    SELECT h.agent, h.what, h.unit_id, h.run_id, h.name, h.queue, h.since, h.lease_expires_at
    FROM (
        SELECT a.name::text AS agent, 'task_run'::text AS what, t.id AS unit_id, t.workflow_run_id AS run_id,
               t.task_key::text AS name, t.queue::text AS queue, t.started_at AS since, t.lease_expires_at
        FROM flowforge.agent a
        JOIN flowforge.task_run t ON t.organization_id = v_org AND t.state = 'running' AND t.lease_owner = a.name
        WHERE a.organization_id = v_org AND a.deleted_at IS NULL
        UNION ALL
        SELECT a.name::text, 'work_item', w.id, w.run_id,
               w.task_name || coalesce('[' || w.item_index || ']', ''), w.queue::text, w.dispatched_at,
               w.lease_expires_at
        FROM flowforge.agent a
        JOIN flowforge.work_item w ON w.organization_id = v_org AND w.status = 'dispatched' AND w.agent_id = a.name
        WHERE a.organization_id = v_org AND a.deleted_at IS NULL
        UNION ALL
        SELECT a.name::text, 'affinity_binding', b.id, NULL::uuid, b.affinity_key, NULL::text, b.created_at, NULL
        FROM flowforge.agent a
        JOIN flowforge.affinity_binding b ON b.organization_id = v_org AND b.agent_id = a.name
        WHERE a.organization_id = v_org AND a.deleted_at IS NULL
    ) h
    ORDER BY h.agent, h.what, h.since, h.unit_id
    LIMIT agent_holdings.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.agent_holdings(integer) IS
  'agent_holdings(max_rows int default 500) -> setof (agent, what, unit_id, run_id, name, queue, since, '
  'lease_expires_at): what each live agent of the caller''s organization holds now — its running task runs '
  '(what = task_run: the task key, since it started, until its lease expires), its dispatched work items '
  '(work_item: the task name, a fan-out child with its element), and the affinity keys bound to it '
  '(affinity_binding: the key in name, since the binding was made) — by agent, kind and age, at most max_rows. '
  'The units list_agents counts in holding and bindings. Viewer rights. Errors: FF003 max_rows outside 1..10000; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.agent_holdings(integer)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
