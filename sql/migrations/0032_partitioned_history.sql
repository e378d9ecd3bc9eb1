-- FlowForge 0032: the history partitioned by time, and retention (issue 19).
--
--   task_run_event, audit_log   range-partitioned by created_at
--   trigger_firing              range-partitioned by recorded_at (ours; fired_on is the source's and can be anything)
--
-- One partition per UTC calendar month, in schema flowforge_history (storage,
-- not API), plus a DEFAULT partition so an insert never fails for want of a
-- partition; tick() creates the months ahead (70_maintenance/05). purge
-- (70_maintenance/60) drops a month whose rows are all older than its cutoff
-- instead of deleting them row by row.
--
-- Each table is rebuilt: the old one is moved aside, the partitioned one is
-- created under the old name with every column, default, CHECK, index name,
-- trigger name, policy, grant and comment of the old one, the months that
-- hold rows get their partitions, the rows are copied, the views that read the
-- table are re-bound to the new one, the old table is dropped. The copy runs
-- under the migration's locks: the history tables accept no insert meanwhile
-- (every claim and completion writes one), so a large installation migrates
-- in a maintenance window — or purges first (the old purge is the rows' age).
--
-- Primary keys include the partition column, as PostgreSQL requires of a
-- unique index on a partitioned table, and organization_id (Citus: issue 21):
--   task_run_event  (organization_id, created_at, id)   ids are random: time first appends at the right edge
--   audit_log       (organization_id, id, created_at)   idx_audit_org_created already serves time order
--   trigger_firing  (organization_id, id, recorded_at)  ids are uuid7 (time-ordered): a firing by id stays a key lookup
-- trigger_firing_delivery_uq (one firing per delivery of a trigger) cannot be a
-- unique index of a table partitioned by time, so it becomes the key of
-- trigger_delivery, written with each firing that has a delivery id.
--
-- The append-only trigger function gains purge's path: DELETE and TRUNCATE
-- (never UPDATE) are let through when the statement runs as
-- flowforge_system (only FlowForge's own definer functions can) with
-- flowforge.history_purge set, which only purge sets, around its deletes.
-- setting gains retention_runs, retention_firings, retention_audit.
-- depends: 0031_ownership_indexes

-- ---------------------------------------------------------------------------
-- The partitions' schema
-- ---------------------------------------------------------------------------
CREATE SCHEMA flowforge_history;
ALTER SCHEMA flowforge_history OWNER TO flowforge_owner;
REVOKE ALL ON SCHEMA flowforge_history FROM PUBLIC;
GRANT USAGE ON SCHEMA flowforge_history TO flowforge_system;
COMMENT ON SCHEMA flowforge_history IS
  'The monthly partitions of flowforge.task_run_event, audit_log and trigger_firing (0032). Storage, not API: read '
  'and write the parents.';

-- ---------------------------------------------------------------------------
-- Append-only, with purge's path
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION flowforge.refuse_history_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_parent text;
BEGIN
    -- purge's path (0032): a DELETE or TRUNCATE run as flowforge_system — the
    -- owner of FlowForge's cross-tenant definer functions, a role no login can
    -- become — while flowforge.history_purge is on, which only purge sets,
    -- around its own deletes. An UPDATE never passes.
    IF TG_OP IN ('DELETE', 'TRUNCATE') AND current_user = 'flowforge_system'
       AND current_setting('flowforge.history_purge', true) = 'on' THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NULL;
    END IF;
    -- A partition's trigger names its parent: the table the caller wrote.
    SELECT i.inhparent::regclass::text INTO v_parent FROM pg_inherits i WHERE i.inhrelid = TG_RELID;
    IF v_parent IS NOT NULL THEN
        RAISE EXCEPTION '% on % is not allowed: the table is append-only', TG_OP, v_parent
            USING ERRCODE = 'FF011',
                  DETAIL = format('Refused by its partition %I.%I.', TG_TABLE_SCHEMA, TG_TABLE_NAME),
                  HINT = 'History rows are facts; record a new event instead of changing one.';
    END IF;
    RAISE EXCEPTION '% on flowforge.% is not allowed: the table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'FF011',
              HINT = 'History rows are facts; record a new event instead of changing one.';
END;
$$;
COMMENT ON FUNCTION flowforge.refuse_history_change() IS
  'Trigger function: refuses UPDATE, DELETE and TRUNCATE on append-only history tables and their partitions '
  '(SQLSTATE FF011), except purge''s DELETE and TRUNCATE (as flowforge_system, flowforge.history_purge on; 0032).';

-- ---------------------------------------------------------------------------
-- Retention settings (NULL: kept forever). The daemon purges on its own when
-- one is set (tick's purged duty).
-- ---------------------------------------------------------------------------
ALTER TABLE flowforge.setting
    ADD COLUMN retention_runs interval,
    ADD COLUMN retention_firings interval,
    ADD COLUMN retention_audit interval,
    ADD CONSTRAINT setting_retention_runs_sane
        CHECK (retention_runs IS NULL OR retention_runs BETWEEN interval '1 hour' AND interval '100 years'),
    ADD CONSTRAINT setting_retention_firings_sane
        CHECK (retention_firings IS NULL OR retention_firings BETWEEN interval '1 hour' AND interval '100 years'),
    ADD CONSTRAINT setting_retention_audit_sane
        CHECK (retention_audit IS NULL OR retention_audit BETWEEN interval '1 hour' AND interval '100 years');

-- ---------------------------------------------------------------------------
-- Bootstrap: the partition maker, the same text as
-- sql/functions/70_maintenance/05_history_partitions.sql (applied after the
-- migrations, it replaces this one with itself).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION flowforge._history_partition_create(p_table text, p_month timestamptz)
RETURNS regclass
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET lock_timeout = '200ms'
AS $$
DECLARE
    v_parent constant regclass := ('flowforge.' || quote_ident(p_table))::regclass;
    v_lo constant timestamptz := date_trunc('month', p_month AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    v_hi constant timestamptz := (date_trunc('month', p_month AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
    v_suffix constant text := CASE WHEN p_month IS NULL THEN '_default'
                                   ELSE '_p' || to_char(p_month AT TIME ZONE 'UTC', 'YYYYMM') END;
    v_name constant text := p_table || v_suffix;
    v_part regclass;
    v_index record;
BEGIN
    IF p_table NOT IN ('task_run_event', 'audit_log', 'trigger_firing') THEN
        RAISE EXCEPTION '_history_partition_create: % is not a partitioned history table', p_table USING ERRCODE = 'FF003';
    END IF;
    v_part := to_regclass('flowforge_history.' || quote_ident(v_name));
    IF v_part IS NOT NULL THEN
        RETURN v_part;
    END IF;
    -- A table of its own first, attached when complete: ATTACH takes SHARE UPDATE
    -- EXCLUSIVE on the parent (inserts and reads go on), CREATE ... PARTITION OF
    -- would take ACCESS EXCLUSIVE.
    EXECUTE format('CREATE TABLE flowforge_history.%I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)',
                   v_name, v_parent);
    v_part := ('flowforge_history.' || quote_ident(v_name))::regclass;
    FOR v_index IN
        SELECT c.relname::text AS name, x.indisprimary AS is_primary, pg_get_indexdef(x.indexrelid) AS def,
               obj_description(x.indexrelid, 'pg_class') AS comment
        FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
        WHERE x.indrelid = v_parent
        ORDER BY c.relname
    LOOP
        -- "CREATE [UNIQUE] INDEX name ON ONLY flowforge.t USING ..." -> the same index on the partition.
        EXECUTE regexp_replace(v_index.def, '^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ ',
                               'CREATE \1INDEX ' || quote_ident(v_index.name || v_suffix) || ' ON ' || v_part::text || ' ');
        IF v_index.is_primary THEN
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I PRIMARY KEY USING INDEX %I',
                           v_part, v_index.name || v_suffix, v_index.name || v_suffix);
        END IF;
        EXECUTE format('COMMENT ON INDEX flowforge_history.%I IS %L', v_index.name || v_suffix, v_index.comment);
    END LOOP;
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', v_part);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', v_part);
    EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT '
                   'EXECUTE FUNCTION flowforge.refuse_history_change()', p_table || '_no_truncate', v_part);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', v_part, p_table || '_no_truncate');
    EXECUTE format('GRANT TRUNCATE ON %s TO flowforge_system', v_part);
    EXECUTE format('COMMENT ON TABLE %s IS %L', v_part,
                   CASE WHEN p_month IS NULL
                        THEN format('The DEFAULT partition of flowforge.%s: rows no month partition holds (never dropped; '
                                    'purge deletes its rows).', p_table)
                        ELSE format('Partition of flowforge.%s: the UTC month %s.', p_table,
                                    to_char(p_month AT TIME ZONE 'UTC', 'YYYY-MM')) END);
    IF p_month IS NULL THEN
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s DEFAULT', v_parent, v_part);
    ELSE
        -- Fails (23514) when the DEFAULT partition holds rows of this month: the caller leaves the month to it.
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%L) TO (%L)', v_parent, v_part, v_lo, v_hi);
    END IF;
    RETURN v_part;
END;
$$;
ALTER FUNCTION flowforge._history_partition_create(text, timestamptz) OWNER TO flowforge_owner;

-- ---------------------------------------------------------------------------
-- The views that read these tables are re-bound to the new ones at the end
-- (CREATE OR REPLACE with their own text, read here: a view names a table by
-- its identity, not by its name). tenant_usage is replaced below instead.
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE ff_0032_views ON COMMIT DROP AS
SELECT DISTINCT v.oid::regclass::text AS view_name, pg_get_viewdef(v.oid) AS definition,
       coalesce(array_to_string(v.reloptions, ', '), '') AS options
FROM pg_depend d
JOIN pg_rewrite r ON r.oid = d.objid
JOIN pg_class v ON v.oid = r.ev_class
WHERE d.refobjid IN ('flowforge.task_run_event'::regclass, 'flowforge.audit_log'::regclass,
                     'flowforge.trigger_firing'::regclass)
  AND v.oid <> d.refobjid AND v.relkind = 'v';

-- The old tables step aside (their indexes go with them, freeing the names).
ALTER TABLE flowforge.task_run_event SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.task_run_event RENAME TO task_run_event_0031;
ALTER TABLE flowforge.audit_log SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.audit_log RENAME TO audit_log_0031;
ALTER TABLE flowforge.trigger_firing SET SCHEMA flowforge_history;
ALTER TABLE flowforge_history.trigger_firing RENAME TO trigger_firing_0031;

-- ---------------------------------------------------------------------------
-- task_run_event
-- ---------------------------------------------------------------------------
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
    CONSTRAINT task_run_event_pkey PRIMARY KEY (organization_id, created_at, id),
    CONSTRAINT event_kind_valid CHECK (kind ~ '^[a-z_]{1,30}$')
) PARTITION BY RANGE (created_at);
CREATE INDEX idx_event_taskrun_created ON flowforge.task_run_event (task_run_id, created_at);
CREATE INDEX idx_event_run_level ON flowforge.task_run_event (workflow_run_id, created_at) WHERE task_run_id IS NULL;
CREATE INDEX idx_event_work_item ON flowforge.task_run_event (work_item_id, created_at) WHERE work_item_id IS NOT NULL;
CREATE INDEX idx_event_throughput ON flowforge.task_run_event (kind, created_at)
    INCLUDE (organization_id, to_state)
    WHERE kind IN ('claimed', 'completed', 'failed', 'lease_expired', 'timed_out');
COMMENT ON INDEX flowforge.task_run_event_pkey IS
  'an event''s identity within its organization and month (append-only history: reads go by run, task run or work '
  'item; the partition column is part of every unique index of a partitioned table)';
COMMENT ON INDEX flowforge.idx_event_taskrun_created IS 'a task run''s events in order (run_events, per task run; purge)';
COMMENT ON INDEX flowforge.idx_event_run_level IS
  'a run''s own events and its work items'': started, cancelled, finished, retried (run_events; purge)';
COMMENT ON INDEX flowforge.idx_event_work_item IS 'a work item''s own history (run_events of graph, machine and fan-out runs)';
COMMENT ON INDEX flowforge.idx_event_throughput IS
  'the events of a recent window: claims in the last minute (queue_depth), task runs and work items that succeeded '
  'or failed for good in the last hour and day (tenant_usage)';

-- ---------------------------------------------------------------------------
-- audit_log
-- ---------------------------------------------------------------------------
CREATE TABLE flowforge.audit_log (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    actor            text        NOT NULL,
    action           varchar(50) NOT NULL,
    entity           varchar(50) NOT NULL,
    entity_id        text,
    fields           text[]      NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_log_pkey PRIMARY KEY (organization_id, id, created_at),
    CONSTRAINT audit_log_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT
) PARTITION BY RANGE (created_at);
CREATE INDEX idx_audit_org_created ON flowforge.audit_log (organization_id, created_at DESC);
CREATE INDEX idx_audit_org_entity ON flowforge.audit_log (organization_id, entity, entity_id, created_at DESC);
COMMENT ON INDEX flowforge.audit_log_pkey IS
  'an audit row by (organization, id) (row identity of append-only history; reads go by organization and time)';
COMMENT ON INDEX flowforge.idx_audit_org_created IS
  'an organization''s recent audit trail, newest first; purge''s rows older than the audit retention';
COMMENT ON INDEX flowforge.idx_audit_org_entity IS 'who did what to one entity (a run, a key), newest first (0009)';

-- ---------------------------------------------------------------------------
-- trigger_firing, and its delivery key
-- ---------------------------------------------------------------------------
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
    CONSTRAINT trigger_firing_pkey PRIMARY KEY (organization_id, id, recorded_at),
    CONSTRAINT trigger_firing_outcome_valid CHECK (outcome IN ('started', 'signalled', 'refused', 'failed')),
    CONSTRAINT trigger_firing_run_iff_acted CHECK ((outcome IN ('started', 'signalled')) = (run_id IS NOT NULL)),
    CONSTRAINT trigger_firing_error_iff_not_acted CHECK ((outcome IN ('refused', 'failed')) = (error IS NOT NULL)),
    CONSTRAINT trigger_firing_action_valid CHECK (action IS NULL OR action IN ('start', 'signal')),
    CONSTRAINT trigger_firing_delivery_id_valid CHECK (delivery_id IS NULL OR length(delivery_id) >= 1)
) PARTITION BY RANGE (recorded_at);
CREATE INDEX trigger_firing_tenant_fired ON flowforge.trigger_firing (organization_id, fired_on DESC, id DESC);
CREATE INDEX trigger_firing_tenant_trigger ON flowforge.trigger_firing (organization_id, trigger_name, fired_on DESC, id DESC);
CREATE INDEX trigger_firing_run ON flowforge.trigger_firing (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX trigger_firing_caused_nothing ON flowforge.trigger_firing (fired_on DESC) WHERE outcome IN ('refused', 'failed');
CREATE INDEX trigger_firing_tenant_recorded ON flowforge.trigger_firing (organization_id, recorded_at);
COMMENT ON INDEX flowforge.trigger_firing_pkey IS
  'a firing by (organization, id): a run''s firing (engine_run.trigger_firing_id, the seed''s first tracing query), a '
  'replayed delivery''s (with recorded_at, one partition)';
COMMENT ON INDEX flowforge.trigger_firing_tenant_fired IS 'what has fired here lately: list_firings(), newest first';
COMMENT ON INDEX flowforge.trigger_firing_tenant_trigger IS
  'everything one trigger has done: list_firings(trigger_name), newest first';
COMMENT ON INDEX flowforge.trigger_firing_run IS 'the reverse walk: which firing started or moved a run';
COMMENT ON INDEX flowforge.trigger_firing_caused_nothing IS
  'the seed''s second tracing query: the firings that caused nothing (refused, failed), newest first';
COMMENT ON INDEX flowforge.trigger_firing_tenant_recorded IS
  'purge: an organization''s firings older than the firing retention, oldest first (0032)';

-- One firing per delivery of a trigger (a redelivered webhook, a cron slot, a
-- file, a commit): the key trigger_firing_delivery_uq was on the firing log
-- until 0032, which partitions the log by time; a unique index there would
-- have to include recorded_at, and a redelivery a second later would pass.
CREATE TABLE flowforge.trigger_delivery (
    organization_id  uuid          NOT NULL,
    trigger_id       uuid          NOT NULL,
    delivery_id      varchar(200)  NOT NULL,
    firing_id        uuid          NOT NULL,
    recorded_at      timestamptz   NOT NULL,
    CONSTRAINT trigger_firing_delivery_uq PRIMARY KEY (organization_id, trigger_id, delivery_id),
    CONSTRAINT trigger_delivery_id_valid CHECK (length(delivery_id) >= 1)
);
CREATE INDEX trigger_delivery_recorded ON flowforge.trigger_delivery (organization_id, recorded_at);
COMMENT ON TABLE flowforge.trigger_delivery IS
  'The delivery key of each firing that named a delivery id: one firing per (trigger, delivery id), across the '
  'firing log''s partitions (0032). Written with its firing, purged with it.';
COMMENT ON INDEX flowforge.trigger_firing_delivery_uq IS
  'is this delivery (webhook id, cron slot, file, commit) already fired? fire_trigger, feeder_unfired; one firing per delivery';
COMMENT ON INDEX flowforge.trigger_delivery_recorded IS
  'purge: an organization''s delivery keys of firings older than the firing retention, or of a dropped month';

-- ---------------------------------------------------------------------------
-- Triggers, security, ownership: as the old tables had them
-- ---------------------------------------------------------------------------
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
-- ALWAYS: under session_replication_role = replica too. A partition's clone of
-- a parent's row trigger keeps ALWAYS; its TRUNCATE trigger is its own (made
-- by _history_partition_create).
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_append_only;
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_no_truncate;
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_append_only;
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_no_truncate;

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['task_run_event', 'audit_log', 'trigger_firing', 'trigger_delivery'] LOOP
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

-- ---------------------------------------------------------------------------
-- Partitions: every month that holds rows (within five years back and the
-- months ahead; anything else stays in the DEFAULT partition), this month and
-- the next three, the DEFAULT partition. Then the rows.
-- ---------------------------------------------------------------------------
DO $$
DECLARE
    v_from constant timestamptz := (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '5 years') AT TIME ZONE 'UTC';
    v_to constant timestamptz := (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '4 months') AT TIME ZONE 'UTC';
    v_month timestamptz;
BEGIN
    FOR v_month IN
        SELECT DISTINCT date_trunc('month', e.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM flowforge_history.task_run_event_0031 e WHERE e.created_at >= v_from AND e.created_at < v_to
        UNION SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                     date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
                                     interval '1 month') AT TIME ZONE 'UTC'
        ORDER BY 1
    LOOP
        PERFORM flowforge._history_partition_create('task_run_event', v_month);
    END LOOP;
    FOR v_month IN
        SELECT DISTINCT date_trunc('month', a.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM flowforge_history.audit_log_0031 a WHERE a.created_at >= v_from AND a.created_at < v_to
        UNION SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                     date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
                                     interval '1 month') AT TIME ZONE 'UTC'
        ORDER BY 1
    LOOP
        PERFORM flowforge._history_partition_create('audit_log', v_month);
    END LOOP;
    FOR v_month IN
        SELECT DISTINCT date_trunc('month', f.recorded_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        FROM flowforge_history.trigger_firing_0031 f WHERE f.recorded_at >= v_from AND f.recorded_at < v_to
        UNION SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                                     date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
                                     interval '1 month') AT TIME ZONE 'UTC'
        ORDER BY 1
    LOOP
        PERFORM flowforge._history_partition_create('trigger_firing', v_month);
    END LOOP;
    PERFORM flowforge._history_partition_create('task_run_event', NULL);
    PERFORM flowforge._history_partition_create('audit_log', NULL);
    PERFORM flowforge._history_partition_create('trigger_firing', NULL);
END;
$$;

INSERT INTO flowforge.task_run_event (id, seq, organization_id, workflow_run_id, task_run_id, kind, from_state,
                                      to_state, fencing_token, attempt, detail, created_at, work_item_id)
OVERRIDING SYSTEM VALUE
SELECT id, seq, organization_id, workflow_run_id, task_run_id, kind, from_state, to_state, fencing_token, attempt,
       detail, created_at, work_item_id
FROM flowforge_history.task_run_event_0031;
SELECT setval(pg_get_serial_sequence('flowforge.task_run_event', 'seq'),
              coalesce((SELECT max(seq) FROM flowforge_history.task_run_event_0031), 0) + 1, false);
INSERT INTO flowforge.audit_log (id, organization_id, actor, action, entity, entity_id, fields, created_at)
SELECT id, organization_id, actor, action, entity, entity_id, fields, created_at
FROM flowforge_history.audit_log_0031;
INSERT INTO flowforge.trigger_firing (id, organization_id, trigger_id, trigger_name, trigger_type, payload, action,
                                      definition_id, event, run_id, outcome, error, fired_on, recorded_at,
                                      delivery_id, created_by)
SELECT id, organization_id, trigger_id, trigger_name, trigger_type, payload, action, definition_id, event, run_id,
       outcome, error, fired_on, recorded_at, delivery_id, created_by
FROM flowforge_history.trigger_firing_0031;
INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
SELECT organization_id, trigger_id, delivery_id, id, recorded_at
FROM flowforge_history.trigger_firing_0031
WHERE trigger_id IS NOT NULL AND delivery_id IS NOT NULL;

-- ---------------------------------------------------------------------------
-- The views: re-bound (queue_depth, and whatever else reads these tables),
-- tenant_usage replaced (a partitioned table has no storage and no reltuples
-- of its own: its size and row estimate are its partitions'), index_usage
-- replaced (a partitioned index's scans and size are its partitions').
-- ---------------------------------------------------------------------------
DO $$
DECLARE
    v_view record;
BEGIN
    FOR v_view IN SELECT * FROM ff_0032_views WHERE view_name NOT IN ('flowforge.tenant_usage') ORDER BY view_name LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s WITH (%s) AS %s', v_view.view_name, v_view.options, v_view.definition);
    END LOOP;
END;
$$;

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
    -- About 50,000 rows' worth of each history table's blocks (all of them while it is smaller). A
    -- partitioned table's rows and bytes are its partitions' (0032; a plain table is its own only leaf).
    SELECT c.relname::text AS history_table,
           least(100, 5000000 / greatest(sum(greatest(l.reltuples, 0)), 1))::float4 AS percent,
           sum(pg_total_relation_size(l.oid)) AS bytes
    FROM pg_class c
    JOIN pg_class l ON l.oid = c.oid AND c.relkind = 'r'
                    OR l.oid IN (SELECT t.relid FROM pg_partition_tree(c.oid) t WHERE t.isleaf)
    WHERE c.oid IN ('flowforge.task_run_event'::regclass, 'flowforge.machine_transition'::regclass,
                    'flowforge.trigger_firing'::regclass, 'flowforge.audit_log'::regclass)
    GROUP BY c.relname
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
-- A partitioned index (0032's history tables) has no scans and no storage of
-- its own: its figures are the sums over its partitions' indexes (a plain
-- index is its own only leaf).
SELECT t.relname::text COLLATE "default" AS table_name, i.relname::text COLLATE "default" AS index_name,
       p.idx_scan, p.idx_tup_read, p.idx_tup_fetch,
       p.size_bytes, pg_size_pretty(p.size_bytes) AS size,
       x.indisunique AS is_unique, x.indisprimary AS is_primary, x.indisvalid AS is_valid,
       x.indpred IS NOT NULL AS is_partial,
       p.idx_scan = 0 AND NOT x.indisunique AS unused,
       obj_description(i.oid, 'pg_class') COLLATE "default" AS serves,
       pg_get_indexdef(i.oid) AS definition,
       (SELECT d.stats_reset FROM pg_stat_database d WHERE d.datname = current_database()) AS counted_since
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
CROSS JOIN LATERAL (
    SELECT coalesce(sum(s.idx_scan), 0)::bigint AS idx_scan, coalesce(sum(s.idx_tup_read), 0)::bigint AS idx_tup_read,
           coalesce(sum(s.idx_tup_fetch), 0)::bigint AS idx_tup_fetch, coalesce(sum(pg_relation_size(l.relid)), 0)::bigint AS size_bytes
    FROM (SELECT x.indexrelid AS relid WHERE i.relkind = 'i'
          UNION ALL
          SELECT t.relid FROM pg_partition_tree(x.indexrelid) t WHERE t.isleaf) l
    LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = l.relid
) p
WHERE t.relnamespace = 'flowforge'::regnamespace;

-- The old tables, copied and no longer read by anything.
DROP TABLE flowforge_history.task_run_event_0031;
DROP TABLE flowforge_history.audit_log_0031;
DROP TABLE flowforge_history.trigger_firing_0031;
