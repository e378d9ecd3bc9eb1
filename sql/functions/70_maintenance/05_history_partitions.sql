-- The history's partitions (0032): task_run_event and audit_log by created_at,
-- trigger_firing by recorded_at, one partition per UTC calendar month in
-- schema flowforge_history (storage, not API: nobody but the owner roles can
-- name it), plus a DEFAULT partition that catches a row no month partition
-- holds (a clock far ahead or behind, a tick that did not run for months), so
-- an insert never fails for want of a partition.
--
-- tick() keeps the current month and the next three created (the
-- 'partitions' duty, done by the daemon that serves the default
-- organization, or by any lone tick()), and drops the past months that are
-- empty — purge empties an expired month by TRUNCATE — when their parent can
-- be locked without waiting (the 'partitions_dropped' duty, last in tick);
-- 0032 creates the months that already hold rows. Every partition gets, beside what PostgreSQL itself
-- clones from the parent (the row trigger <table>_append_only, ENABLE ALWAYS;
-- audit_log's foreign key): its parent's indexes under the parent index's
-- name plus the partition's suffix (idx_event_taskrun_created_p202612), each
-- with its parent's comment; the statement trigger <table>_no_truncate
-- (ENABLE ALWAYS: TRUNCATE of one partition fires only that partition's
-- triggers); row-level security enabled and forced with no policy (reads and
-- writes go through the parent, whose policies apply; the partition itself
-- shows nobody anything); TRUNCATE granted to flowforge_system, for purge.
--
-- _history_partition_create is 0032's bootstrap too: the migration carries
-- the same text (it runs before this folder is applied), which migrate then
-- replaces with this file's.

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
COMMENT ON FUNCTION flowforge._history_partition_create(text, timestamptz) IS
  'Internal: creates and attaches flowforge_history.<p_table>_pYYYYMM, the partition of history table p_table '
  '(task_run_event, audit_log, trigger_firing) for the UTC month of p_month (p_month NULL: <p_table>_default, the '
  'DEFAULT partition): its indexes named after the parent''s with the suffix and commented like them, the TRUNCATE '
  'trigger (ENABLE ALWAYS), forced row-level security, TRUNCATE for flowforge_system. Returns the partition; an '
  'existing one is returned unchanged. lock_timeout 200 ms (tick tries again). Errors: FF003 not a partitioned history table; 23514 the '
  'DEFAULT partition holds rows of that month; 55P03 a lock not granted in time.';
SELECT flowforge._rights('flowforge._history_partition_create(text,timestamptz)', 'flowforge_owner', '{}');

-- A history table's partitions and their bounds, read from the catalog.
CREATE OR REPLACE FUNCTION flowforge._history_partitions(p_table text)
RETURNS TABLE (partition regclass, lo timestamptz, hi timestamptz, is_default boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.oid::regclass,
           (regexp_match(b.bound, 'FROM \(''([^'']*)''\)'))[1]::timestamptz,
           (regexp_match(b.bound, 'TO \(''([^'']*)''\)'))[1]::timestamptz,
           b.bound = 'DEFAULT'
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
    WHERE i.inhparent = ('flowforge.' || quote_ident(p_table))::regclass
    ORDER BY 3 NULLS FIRST
$$;
COMMENT ON FUNCTION flowforge._history_partitions(text) IS
  'Internal: the partitions of history table p_table with their bounds [lo, hi) (NULL, NULL for the DEFAULT '
  'partition, is_default), oldest first.';

-- The 'partitions' duty: this month and the next p_ahead exist for every
-- history table. A month the DEFAULT partition already holds rows of is left
-- to it (reported under "blocked"; its rows are purged row by row), as is one
-- whose lock is not granted within the lock_timeout (tried again next tick).
CREATE OR REPLACE FUNCTION flowforge._history_partitions_ahead(p_now timestamptz, p_ahead integer DEFAULT 3)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_table text;
    v_month timestamptz;
    v_created integer := 0;
    v_blocked text[] := '{}';
    v_state text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['task_run_event', 'audit_log', 'trigger_firing'] LOOP
        FOR v_month IN
            SELECT (date_trunc('month', p_now AT TIME ZONE 'UTC') + k * interval '1 month') AT TIME ZONE 'UTC'
            FROM generate_series(0, p_ahead) k
        LOOP
            CONTINUE WHEN to_regclass(format('flowforge_history.%I',
                                             v_table || '_p' || to_char(v_month AT TIME ZONE 'UTC', 'YYYYMM'))) IS NOT NULL;
            BEGIN
                PERFORM flowforge._history_partition_create(v_table, v_month);
                v_created := v_created + 1;
            EXCEPTION WHEN check_violation OR lock_not_available OR invalid_object_definition OR duplicate_table THEN
                GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE;
                v_blocked := v_blocked || format('%s_p%s (%s)', v_table, to_char(v_month AT TIME ZONE 'UTC', 'YYYYMM'), v_state);
            END;
        END LOOP;
        IF to_regclass(format('flowforge_history.%I', v_table || '_default')) IS NULL THEN
            BEGIN
                PERFORM flowforge._history_partition_create(v_table, NULL);
                v_created := v_created + 1;
            EXCEPTION WHEN lock_not_available OR invalid_object_definition OR duplicate_table THEN
                GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE;
                v_blocked := v_blocked || format('%s_default (%s)', v_table, v_state);
            END;
        END IF;
    END LOOP;
    RETURN jsonb_build_object('created', v_created, 'blocked', to_jsonb(v_blocked));
END;
$$;
COMMENT ON FUNCTION flowforge._history_partitions_ahead(timestamptz, integer) IS
  'Internal (tick''s partitions duty): creates the partitions of the UTC month of p_now and the next p_ahead months '
  '(and the DEFAULT partition) of every history table that lack one; {"created": n, "blocked": [partition (SQLSTATE)]} '
  '— a month the DEFAULT partition holds rows of, or whose locks were not granted in time, is skipped.';

-- Drops one partition that purge emptied, without waiting for its lock:
-- ACCESS EXCLUSIVE on the parent (a partition's drop changes the parent's
-- partition descriptor) and on the DEFAULT partition is taken NOWAIT, so the
-- drop never queues; once granted it is held until the transaction ends,
-- and inserts into the table wait that long (the drop and the commit: the one
-- moment retention makes anybody wait, once per month and table). A busy
-- parent leaves the empty partition for the next tick. Refuses a partition
-- that still holds a row (the append-only rule: only purge's TRUNCATE empties
-- one) and the DEFAULT partition.
CREATE OR REPLACE FUNCTION flowforge._history_partition_drop(p_partition regclass) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_parent regclass;
    v_default boolean;
    v_default_part regclass;
BEGIN
    SELECT i.inhparent::regclass, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT' INTO v_parent, v_default
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhrelid = p_partition AND c.relnamespace = 'flowforge_history'::regnamespace;
    IF v_parent IS NULL OR v_default THEN
        RAISE EXCEPTION '_history_partition_drop: % is not a month partition of a history table', p_partition
            USING ERRCODE = 'FF003';
    END IF;
    -- Dropping a partition locks its parent and the DEFAULT partition (whose
    -- implicit bound changes): all three NOWAIT, ONLY the parent (LOCK TABLE
    -- recurses into partitions otherwise).
    SELECT i.inhrelid::regclass INTO v_default_part
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = v_parent AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT';
    BEGIN
        EXECUTE format('LOCK TABLE ONLY %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_parent);
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', p_partition);
        IF v_default_part IS NOT NULL THEN
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_default_part);
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
    -- Empty means truncated: no storage at all (row-level security, forced on
    -- the partition, would hide its rows from a count).
    IF pg_relation_size(p_partition) > 0 THEN
        RAISE EXCEPTION '_history_partition_drop: % still holds rows (history is append-only)', p_partition
            USING ERRCODE = 'FF011';
    END IF;
    EXECUTE format('DROP TABLE %s', p_partition);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._history_partition_drop(regclass) IS
  'Internal (tick''s partitions_dropped duty): drops month partition p_partition of a history table once it is empty, '
  'taking ACCESS EXCLUSIVE on it, its parent and the DEFAULT partition NOWAIT; false (nothing done) when one is busy. '
  'Errors: FF003 not a month partition of a history table; FF011 it still holds rows.';
SELECT flowforge._rights('flowforge._history_partition_drop(regclass)', 'flowforge_owner', '{}');

-- The 'partitions_dropped' duty: every past month of the history that is
-- empty (purge truncated it, or it never held a row) is dropped, as long as
-- its parent is free at that moment.
CREATE OR REPLACE FUNCTION flowforge._history_partitions_drop_emptied(p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_this_month constant timestamptz := date_trunc('month', p_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    v_part record;
    v_dropped integer := 0;
BEGIN
    FOR v_part IN
        SELECT p.partition FROM unnest(ARRAY['task_run_event', 'audit_log', 'trigger_firing']) t(name)
        CROSS JOIN LATERAL flowforge._history_partitions(t.name) p
        WHERE NOT p.is_default AND p.hi <= v_this_month AND pg_relation_size(p.partition) = 0
        ORDER BY p.lo
    LOOP
        IF flowforge._history_partition_drop(v_part.partition) THEN
            v_dropped := v_dropped + 1;
        END IF;
    END LOOP;
    RETURN v_dropped;
END;
$$;
COMMENT ON FUNCTION flowforge._history_partitions_drop_emptied(timestamptz) IS
  'Internal (tick''s partitions_dropped duty): drops the empty month partitions of the history before the UTC month of '
  'p_now whose locks are free now (_history_partition_drop, NOWAIT); how many it dropped.';
