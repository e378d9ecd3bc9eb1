-- Undo 0032: the history tables unpartitioned again, as 0031 left them, with
-- every row; the views re-bound to them (tenant_usage and index_usage as 0026
-- wrote them); trigger_delivery, the retention settings, purge's path through
-- the append-only trigger and schema flowforge_history gone.

CREATE TEMP TABLE ff_0032_views ON COMMIT DROP AS
SELECT DISTINCT v.oid::regclass::text AS view_name, pg_get_viewdef(v.oid) AS definition,
       coalesce(array_to_string(v.reloptions, ', '), '') AS options
FROM pg_depend d
JOIN pg_rewrite r ON r.oid = d.objid
JOIN pg_class v ON v.oid = r.ev_class
WHERE d.refobjid IN ('flowforge.task_run_event'::regclass, 'flowforge.audit_log'::regclass,
                     'flowforge.trigger_firing'::regclass)
  AND v.oid <> d.refobjid AND v.relkind = 'v';

ALTER TABLE flowforge.task_run_event SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.task_run_event RENAME TO task_run_event_0032;
ALTER TABLE flowforge.audit_log SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.audit_log RENAME TO audit_log_0032;
ALTER TABLE flowforge.trigger_firing SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.trigger_firing RENAME TO trigger_firing_0032;
DROP TABLE flowforge.trigger_delivery;

-- 0003, 0015, 0027
CREATE TABLE flowforge.task_run_event (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq              bigint      GENERATED ALWAYS AS IDENTITY,
    organization_id  uuid        NOT NULL,
    workflow_run_id  uuid        NOT NULL,
    task_run_id      uuid,
    kind             varchar(30) NOT NULL,
    from_state       varchar(20),
    to_state         varchar(20),
    fencing_token    bigint,
    attempt          integer,
    detail           jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    work_item_id     uuid,
    CONSTRAINT task_run_event_pkey PRIMARY KEY (id),
    CONSTRAINT event_kind_valid CHECK (kind ~ '^[a-z_]{1,30}$')
);
CREATE INDEX idx_event_taskrun_created ON flowforge.task_run_event (task_run_id, created_at);
CREATE INDEX idx_event_run_level ON flowforge.task_run_event (workflow_run_id, created_at) WHERE task_run_id IS NULL;
CREATE INDEX idx_event_work_item ON flowforge.task_run_event (work_item_id, created_at) WHERE work_item_id IS NOT NULL;
CREATE INDEX idx_event_throughput ON flowforge.task_run_event (kind, created_at)
    INCLUDE (organization_id, to_state)
    WHERE kind IN ('claimed', 'completed', 'failed', 'lease_expired', 'timed_out');
COMMENT ON INDEX flowforge.task_run_event_pkey IS
  'an event by id (row identity of append-only history; reads go by run, task run or work item)';
COMMENT ON INDEX flowforge.idx_event_taskrun_created IS 'a task run''s events in order (run_events, per task run)';
COMMENT ON INDEX flowforge.idx_event_run_level IS 'a run''s own events: started, cancelled, finished, retried (run_events)';
COMMENT ON INDEX flowforge.idx_event_work_item IS 'a work item''s own history (run_events of graph, machine and fan-out runs)';
COMMENT ON INDEX flowforge.idx_event_throughput IS
  'the events of a recent window: claims in the last minute (queue_depth), task runs and work items that succeeded '
  'or failed for good in the last hour and day (tenant_usage)';

-- 0001, 0009
CREATE TABLE flowforge.audit_log (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    actor            text        NOT NULL,
    action           varchar(50) NOT NULL,
    entity           varchar(50) NOT NULL,
    entity_id        text,
    fields           text[]      NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_log_pkey PRIMARY KEY (id),
    CONSTRAINT audit_log_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT
);
CREATE INDEX idx_audit_org_created ON flowforge.audit_log (organization_id, created_at DESC);
CREATE INDEX idx_audit_org_entity ON flowforge.audit_log (organization_id, entity, entity_id, created_at DESC);
COMMENT ON INDEX flowforge.audit_log_pkey IS 'an audit row by id (row identity of append-only history; reads go by organization)';
COMMENT ON INDEX flowforge.idx_audit_org_created IS 'an organization''s recent audit trail, newest first';
COMMENT ON INDEX flowforge.idx_audit_org_entity IS 'who did what to one entity (a run, a key), newest first (0009)';

-- 0022
CREATE TABLE flowforge.trigger_firing (
    id               uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid          NOT NULL,
    trigger_id       uuid,
    trigger_name     varchar(63)   NOT NULL,
    trigger_type     varchar(20),
    payload          jsonb,
    action           varchar(10),
    definition_id    uuid,
    event            varchar(200),
    run_id           uuid,
    outcome          varchar(20)   NOT NULL,
    error            text,
    fired_on         timestamptz   NOT NULL,
    recorded_at      timestamptz   NOT NULL,
    delivery_id      varchar(200),
    created_by       text          NOT NULL,
    CONSTRAINT trigger_firing_pkey PRIMARY KEY (id),
    CONSTRAINT trigger_firing_outcome_valid CHECK (outcome IN ('started', 'signalled', 'refused', 'failed')),
    CONSTRAINT trigger_firing_run_iff_acted CHECK ((outcome IN ('started', 'signalled')) = (run_id IS NOT NULL)),
    CONSTRAINT trigger_firing_error_iff_not_acted CHECK ((outcome IN ('refused', 'failed')) = (error IS NOT NULL)),
    CONSTRAINT trigger_firing_action_valid CHECK (action IS NULL OR action IN ('start', 'signal')),
    CONSTRAINT trigger_firing_delivery_id_valid CHECK (delivery_id IS NULL OR length(delivery_id) >= 1)
);
CREATE INDEX trigger_firing_tenant_fired ON flowforge.trigger_firing (organization_id, fired_on DESC, id DESC);
CREATE INDEX trigger_firing_tenant_trigger ON flowforge.trigger_firing (organization_id, trigger_name, fired_on DESC, id DESC);
CREATE INDEX trigger_firing_run ON flowforge.trigger_firing (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX trigger_firing_caused_nothing ON flowforge.trigger_firing (fired_on DESC) WHERE outcome IN ('refused', 'failed');
CREATE UNIQUE INDEX trigger_firing_delivery_uq ON flowforge.trigger_firing (trigger_id, delivery_id)
    WHERE trigger_id IS NOT NULL AND delivery_id IS NOT NULL;
COMMENT ON INDEX flowforge.trigger_firing_pkey IS 'a firing by id (row identity of append-only history; reads go by organization, trigger or run)';
COMMENT ON INDEX flowforge.trigger_firing_tenant_fired IS 'what has fired here lately: list_firings(), newest first';
COMMENT ON INDEX flowforge.trigger_firing_tenant_trigger IS
  'everything one trigger has done: list_firings(trigger_name), newest first';
COMMENT ON INDEX flowforge.trigger_firing_run IS 'the reverse walk: which firing started or moved a run';
COMMENT ON INDEX flowforge.trigger_firing_caused_nothing IS
  'the seed''s second tracing query: the firings that caused nothing (refused, failed), newest first';
COMMENT ON INDEX flowforge.trigger_firing_delivery_uq IS
  'is this delivery (webhook id, cron slot, file, commit) already fired? fire_trigger, feeder_unfired; one firing per delivery';

-- 0004, 0022
CREATE TRIGGER task_run_event_append_only
    BEFORE UPDATE OR DELETE ON flowforge.task_run_event
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER task_run_event_no_truncate
    BEFORE TRUNCATE ON flowforge.task_run_event
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON flowforge.audit_log
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON flowforge.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER trigger_firing_append_only
    BEFORE UPDATE OR DELETE ON flowforge.trigger_firing
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER trigger_firing_no_truncate
    BEFORE TRUNCATE ON flowforge.trigger_firing
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_append_only;
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_no_truncate;
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_append_only;
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_no_truncate;

-- 0006, 0022
DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['task_run_event', 'audit_log', 'trigger_firing'] LOOP
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO flowforge_owner', v_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.%I TO flowforge_system', v_table);
        EXECUTE format('GRANT SELECT ON flowforge.%I TO flowforge_readonly', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I ENABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('CREATE POLICY system_all ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_system '
                       'USING (true) WITH CHECK (true)', v_table);
        EXECUTE format('CREATE POLICY readonly_select ON flowforge.%I AS PERMISSIVE FOR SELECT TO flowforge_readonly '
                       'USING (true)', v_table);
        EXECUTE format('CREATE POLICY tenant_isolation ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_owner '
                       'USING (organization_id = (SELECT flowforge.current_organization())) '
                       'WITH CHECK (organization_id = (SELECT flowforge.current_organization()))', v_table);
    END LOOP;
END;
$$;

INSERT INTO flowforge.task_run_event (id, seq, organization_id, workflow_run_id, task_run_id, kind, from_state,
                                      to_state, fencing_token, attempt, detail, created_at, work_item_id)
OVERRIDING SYSTEM VALUE
SELECT id, seq, organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, fencing_token, attempt,
       detail, created_at, work_item_id
FROM flowforge_history.task_run_event_0032;
SELECT setval(pg_get_serial_sequence('flowforge.task_run_event', 'seq'),
              coalesce((SELECT max(seq) FROM flowforge_history.task_run_event_0032), 0) + 1, false);
INSERT INTO flowforge.audit_log (id, organization_id, actor, action, entity, entity_id, fields, created_at)
SELECT id, organization_id, actor, action, entity, entity_id, fields, created_at
FROM flowforge_history.audit_log_0032;
INSERT INTO flowforge.trigger_firing (id, organization_id, trigger_id, trigger_name, trigger_type, payload, action,
                                      definition_id, event, run_id, outcome, error, fired_on, recorded_at,
                                      delivery_id, created_by)
SELECT id, organization_id, trigger_id, trigger_name, trigger_type, payload, action, definition_id, event, run_id,
       outcome, error, fired_on, recorded_at, delivery_id, created_by
FROM flowforge_history.trigger_firing_0032;

DO $$
DECLARE
    v_view record;
BEGIN
    FOR v_view IN SELECT * FROM ff_0032_views
                  WHERE view_name NOT IN ('flowforge.tenant_usage') ORDER BY view_name LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s WITH (%s) AS %s', v_view.view_name, v_view.options, v_view.definition);
    END LOOP;
END;
$$;

-- 0026's text
CREATE OR REPLACE VIEW flowforge.tenant_usage WITH (security_invoker = true) AS
WITH runs AS (
    SELECT r.organization_id, 'dag'::text AS engine_kind, r.state::text AS status, count(*) AS n
    FROM flowforge.workflow_run r GROUP BY r.organization_id, r.state
    UNION ALL
    SELECT g.organization_id, 'graph', g.status, count(*) FROM flowforge.graph_run g GROUP BY g.organization_id, g.status
    UNION ALL
    SELECT m.organization_id, 'statemachine', m.status, count(*)
    FROM flowforge.machine_run m GROUP BY m.organization_id, m.status
), runs_by_engine AS (
    SELECT r.organization_id, r.engine_kind, jsonb_object_agg(r.status, r.n) AS by_status, sum(r.n) AS n,
           coalesce(sum(r.n) FILTER (WHERE r.status IN ('pending', 'running')), 0) AS live
    FROM runs r GROUP BY r.organization_id, r.engine_kind
), runs_by_org AS (
    SELECT e.organization_id, sum(e.n)::bigint AS runs, sum(e.live)::bigint AS live_runs,
           jsonb_object_agg(e.engine_kind, e.by_status) AS runs_by_engine
    FROM runs_by_engine e GROUP BY e.organization_id
), finished AS (
    SELECT e.organization_id,
           count(*) FILTER (WHERE e.kind = 'completed' AND e.created_at > flowforge.now() - interval '1 hour') AS succeeded_last_hour,
           count(*) FILTER (WHERE e.kind <> 'completed' AND e.created_at > flowforge.now() - interval '1 hour') AS failed_last_hour,
           count(*) FILTER (WHERE e.kind = 'completed') AS succeeded_last_day,
           count(*) FILTER (WHERE e.kind <> 'completed') AS failed_last_day
    FROM flowforge.task_run_event e
    WHERE e.kind IN ('completed', 'failed', 'lease_expired', 'timed_out')
      AND e.created_at > flowforge.now() - interval '1 day' AND e.created_at <= flowforge.now()
      AND (e.kind IN ('completed', 'failed') OR e.to_state = 'failed')
      -- (Every event of these kinds is a task run's or a work item's: a run's own are run_*.)
    GROUP BY e.organization_id
), sample AS (
    -- About 50,000 rows' worth of each history table's blocks (all of them while it is smaller).
    SELECT c.relname::text AS history_table,
           least(100, 5000000 / greatest(c.reltuples, 1))::float4 AS percent,
           pg_total_relation_size(c.oid) AS bytes
    FROM pg_class c
    WHERE c.oid IN ('flowforge.task_run_event'::regclass, 'flowforge.machine_transition'::regclass,
                    'flowforge.trigger_firing'::regclass, 'flowforge.audit_log'::regclass)
), sampled AS (
    SELECT 'task_run_event'::text AS history_table, h.organization_id, count(*) AS n
    FROM flowforge.task_run_event h
        TABLESAMPLE SYSTEM ((SELECT s.percent FROM sample s WHERE s.history_table = 'task_run_event'))
    GROUP BY h.organization_id
    UNION ALL
    SELECT 'machine_transition', h.organization_id, count(*)
    FROM flowforge.machine_transition h
        TABLESAMPLE SYSTEM ((SELECT s.percent FROM sample s WHERE s.history_table = 'machine_transition'))
    GROUP BY h.organization_id
    UNION ALL
    SELECT 'trigger_firing', h.organization_id, count(*)
    FROM flowforge.trigger_firing h
        TABLESAMPLE SYSTEM ((SELECT s.percent FROM sample s WHERE s.history_table = 'trigger_firing'))
    GROUP BY h.organization_id
    UNION ALL
    SELECT 'audit_log', h.organization_id, count(*)
    FROM flowforge.audit_log h
        TABLESAMPLE SYSTEM ((SELECT s.percent FROM sample s WHERE s.history_table = 'audit_log'))
    GROUP BY h.organization_id
), history AS (
    SELECT x.organization_id, x.history_table,
           round(x.n * 100 / s.percent)::bigint AS rows,
           round(s.bytes * x.n / sum(x.n) OVER (PARTITION BY x.history_table))::bigint AS bytes,
           s.percent >= 100 AS exact
    FROM sampled x JOIN sample s ON s.history_table = x.history_table
), history_by_org AS (
    SELECT h.organization_id, sum(h.rows)::bigint AS rows, sum(h.bytes)::bigint AS bytes,
           jsonb_object_agg(h.history_table, jsonb_build_object('rows', h.rows, 'bytes', h.bytes)) AS by_table
    FROM history h GROUP BY h.organization_id
)
SELECT o.id AS organization_id, o.slug::text AS organization,
       coalesce(r.runs, 0) AS runs, coalesce(r.live_runs, 0) AS live_runs, coalesce(r.runs_by_engine, '{}') AS runs_by_engine,
       coalesce(f.succeeded_last_hour, 0) AS succeeded_last_hour, coalesce(f.failed_last_hour, 0) AS failed_last_hour,
       coalesce(f.succeeded_last_day, 0) AS succeeded_last_day, coalesce(f.failed_last_day, 0) AS failed_last_day,
       coalesce(h.rows, 0) AS history_rows, coalesce(h.bytes, 0) AS history_bytes,
       coalesce(h.by_table, '{}') AS history,
       (SELECT bool_and(s.percent >= 100) FROM sample s) AS history_exact
FROM flowforge.organization o
LEFT JOIN runs_by_org r ON r.organization_id = o.id
LEFT JOIN finished f ON f.organization_id = o.id
LEFT JOIN history_by_org h ON h.organization_id = o.id;

CREATE OR REPLACE VIEW flowforge.index_usage WITH (security_invoker = true) AS
-- (Names as text in the database's default collation, not name's "C": they compare with any text.)
SELECT t.relname::text COLLATE "default" AS table_name, i.relname::text COLLATE "default" AS index_name,
       coalesce(s.idx_scan, 0) AS idx_scan,
       coalesce(s.idx_tup_read, 0) AS idx_tup_read, coalesce(s.idx_tup_fetch, 0) AS idx_tup_fetch,
       pg_relation_size(i.oid) AS size_bytes, pg_size_pretty(pg_relation_size(i.oid)) AS size,
       x.indisunique AS is_unique, x.indisprimary AS is_primary, x.indisvalid AS is_valid,
       x.indpred IS NOT NULL AS is_partial,
       coalesce(s.idx_scan, 0) = 0 AND NOT x.indisunique AS unused,
       obj_description(i.oid, 'pg_class') COLLATE "default" AS serves,
       pg_get_indexdef(i.oid) AS definition,
       (SELECT d.stats_reset FROM pg_stat_database d WHERE d.datname = current_database()) AS counted_since
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = x.indexrelid
WHERE t.relnamespace = 'flowforge'::regnamespace;

DROP TABLE flowforge_history.task_run_event_0032;
DROP TABLE flowforge_history.audit_log_0032;
DROP TABLE flowforge_history.trigger_firing_0032;
DROP FUNCTION IF EXISTS flowforge._history_partition_create(text, timestamptz);
DROP SCHEMA flowforge_history;

ALTER TABLE flowforge.setting
    DROP CONSTRAINT setting_retention_audit_sane, DROP CONSTRAINT setting_retention_firings_sane,
    DROP CONSTRAINT setting_retention_runs_sane,
    DROP COLUMN retention_audit, DROP COLUMN retention_firings, DROP COLUMN retention_runs;

-- 0004's text
CREATE OR REPLACE FUNCTION flowforge.refuse_history_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION '% on flowforge.% is not allowed: the table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'FF011',
              HINT = 'History rows are facts; record a new event instead of changing one.';
END;
$$;
COMMENT ON FUNCTION flowforge.refuse_history_change() IS
  'Trigger function: refuses UPDATE, DELETE and TRUNCATE on append-only history tables (SQLSTATE FF011).';
