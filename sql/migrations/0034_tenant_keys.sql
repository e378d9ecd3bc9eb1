-- FlowForge 0034: every key of a tenant table includes organization_id (issue 21).
--
-- Citus distributes a table by one column and enforces a primary key, a unique
-- constraint or a foreign key only inside one shard: each must include the
-- distribution column (docs/scale.md cites the rules). Every tenant table (a
-- table with organization_id) is distributed on organization_id, so:
--   primary keys and unique keys   (the old columns, organization_id): the old
--                                  leading column stays first, so every lookup an
--                                  index served before it serves unchanged
--   foreign keys between tenant    (the old column, organization_id) REFERENCES
--   tables                         (the key, organization_id): a row can no longer
--                                  point at another organization's row
--   unique partial indexes         the same, organization_id appended
-- Names are kept (seed 000's and 002's among them); only definitions change.
-- tests/sql/00_catalog/citus_readiness.sql enforces the rule for every table.
--
-- The history tables task_run_event, audit_log and trigger_firing are being
-- made partitioned with keys that include organization_id (issue 20): their
-- parts below are guarded, a key that already includes organization_id is left
-- alone, and theirs are rebuilt in place (no CONCURRENTLY: the statement
-- cannot be conditional, and a partitioned table has no concurrent build).
--
-- Without long locks: (1) every new key's index is built CONCURRENTLY under the
-- name <key>_tk; (2) one short transaction drops the foreign keys that hold the
-- old keys, swaps each key for its index (ADD CONSTRAINT ... USING INDEX keeps
-- the name), carries the index comment over and re-adds the foreign keys NOT
-- VALID; (3) each foreign key is validated in its own transaction (SHARE UPDATE
-- EXCLUSIVE: writes go on). Step 2 is idempotent (it changes only what lacks
-- organization_id), so migrate's retry after a lock timeout is safe.
-- transactional: false
-- depends: 0033_purge_index

-- (1) the new keys' indexes
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS affinity_binding_pkey_tk ON flowforge.affinity_binding (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS agent_pkey_tk ON flowforge.agent (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS api_key_pkey_tk ON flowforge.api_key (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uniq_api_key_prefix_tk ON flowforge.api_key (prefix, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS api_key_usage_pkey_tk ON flowforge.api_key_usage (api_key_id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_pkey_tk ON flowforge.checkpoint (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_page_pkey_tk ON flowforge.checkpoint_page (checkpoint_id, page, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS engine_pkey_tk ON flowforge.engine (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS engine_run_pkey_tk ON flowforge.engine_run (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS graph_edge_pkey_tk ON flowforge.graph_edge (from_task_id, "position", organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS graph_run_pkey_tk ON flowforge.graph_run (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS graph_step_pkey_tk ON flowforge.graph_step (run_id, step, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS graph_visit_pkey_tk ON flowforge.graph_visit (run_id, node, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_event_queue_pkey_tk ON flowforge.machine_event_queue (run_id, seq, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_event_seen_pkey_tk ON flowforge.machine_event_seen (run_id, event_id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_run_pkey_tk ON flowforge.machine_run (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_timer_pkey_tk ON flowforge.machine_timer (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_timer_one_per_entry_tk ON flowforge.machine_timer (run_id, entered, "position", organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS machine_transition_pkey_tk ON flowforge.machine_transition (run_id, n, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS membership_pkey_tk ON flowforge.membership (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS outbox_message_pkey_tk ON flowforge.outbox_message (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uniq_outbox_per_taskrun_generation_tk ON flowforge.outbox_message (task_run_id, fencing_token_snapshot, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS scheduled_trigger_pkey_tk ON flowforge.scheduled_trigger (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS task_pkey_tk ON flowforge.task (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uniq_task_workflow_key_tk ON flowforge.task (workflow_id, key, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS task_dependency_pkey_tk ON flowforge.task_dependency (task_id, depends_on_task_id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS task_run_pkey_tk ON flowforge.task_run (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uniq_taskrun_per_run_task_tk ON flowforge.task_run (workflow_run_id, task_id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS trigger_secret_pkey_tk ON flowforge.trigger_secret (trigger_id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS work_item_pkey_tk ON flowforge.work_item (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_pkey_tk ON flowforge.workflow (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_run_pkey_tk ON flowforge.workflow_run (id, organization_id);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS work_item_checkpoint_live_uq_tk
    ON flowforge.work_item (checkpoint_id, checkpoint_generation, item_index, organization_id)
    WHERE checkpoint_id IS NOT NULL AND status IN ('pending', 'dispatched');
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS work_item_checkpoint_done_uq_tk
    ON flowforge.work_item (checkpoint_id, checkpoint_generation, item_index, organization_id)
    WHERE checkpoint_id IS NOT NULL AND status = 'completed';

-- (2) the swap, in one transaction
DO $$
DECLARE
    r record;
    v_def text;
    v_has_org boolean;
    v_comment text;
    v_word text;
BEGIN
    -- Foreign keys between tenant tables whose definition is not the new one go first: they hold the old keys.
    FOR r IN SELECT * FROM (VALUES
        ('api_key_usage', 'api_key_usage_key_fkey', 'FOREIGN KEY (api_key_id, organization_id) REFERENCES flowforge.api_key(id, organization_id) ON DELETE CASCADE'),
        ('checkpoint', 'checkpoint_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('checkpoint', 'checkpoint_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('checkpoint_page', 'checkpoint_page_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id, organization_id) REFERENCES flowforge.checkpoint(id, organization_id) ON DELETE CASCADE'),
        ('engine_run', 'engine_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('graph_edge', 'graph_edge_from_fkey', 'FOREIGN KEY (from_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_to_fkey', 'FOREIGN KEY (to_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('graph_run', 'graph_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('machine_run', 'machine_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('outbox_message', 'outbox_message_task_run_fkey', 'FOREIGN KEY (task_run_id, organization_id) REFERENCES flowforge.task_run(id, organization_id) ON DELETE CASCADE'),
        ('outbox_message', 'outbox_message_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id, organization_id) REFERENCES flowforge.workflow_run(id, organization_id) ON DELETE CASCADE'),
        ('task', 'task_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_depends_on_fkey', 'FOREIGN KEY (depends_on_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('task_run', 'task_run_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('task_run', 'task_run_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id, organization_id) REFERENCES flowforge.workflow_run(id, organization_id) ON DELETE CASCADE'),
        ('trigger_secret', 'trigger_secret_trigger_fkey', 'FOREIGN KEY (trigger_id, organization_id) REFERENCES flowforge.scheduled_trigger(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id, organization_id) REFERENCES flowforge.checkpoint(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_parent_fkey', 'FOREIGN KEY (parent_work_item_id, organization_id) REFERENCES flowforge.work_item(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('workflow_run', 'workflow_run_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT')
    ) AS f(tab, name, def) LOOP
        SELECT replace(pg_get_constraintdef(c.oid), ' NOT VALID', '') INTO v_def
        FROM pg_constraint c WHERE c.conrelid = format('flowforge.%I', r.tab)::regclass AND c.conname = r.name;
        IF v_def IS DISTINCT FROM r.def THEN
            EXECUTE format('ALTER TABLE flowforge.%I DROP CONSTRAINT IF EXISTS %I', r.tab, r.name);
        END IF;
    END LOOP;

    -- Primary and unique keys: (old columns, organization_id), the built index taking the key's name.
    FOR r IN SELECT * FROM (VALUES
        ('affinity_binding', 'affinity_binding_pkey', 'p', 'id'),
        ('agent', 'agent_pkey', 'p', 'id'),
        ('api_key', 'api_key_pkey', 'p', 'id'),
        ('api_key', 'uniq_api_key_prefix', 'u', 'prefix'),
        ('api_key_usage', 'api_key_usage_pkey', 'p', 'api_key_id'),
        ('audit_log', 'audit_log_pkey', 'p', 'id'),
        ('checkpoint', 'checkpoint_pkey', 'p', 'id'),
        ('checkpoint_page', 'checkpoint_page_pkey', 'p', 'checkpoint_id, page'),
        ('engine', 'engine_pkey', 'p', 'id'),
        ('engine_run', 'engine_run_pkey', 'p', 'id'),
        ('graph_edge', 'graph_edge_pkey', 'p', 'from_task_id, "position"'),
        ('graph_run', 'graph_run_pkey', 'p', 'id'),
        ('graph_step', 'graph_step_pkey', 'p', 'run_id, step'),
        ('graph_visit', 'graph_visit_pkey', 'p', 'run_id, node'),
        ('machine_event_queue', 'machine_event_queue_pkey', 'p', 'run_id, seq'),
        ('machine_event_seen', 'machine_event_seen_pkey', 'p', 'run_id, event_id'),
        ('machine_run', 'machine_run_pkey', 'p', 'id'),
        ('machine_timer', 'machine_timer_pkey', 'p', 'id'),
        ('machine_timer', 'machine_timer_one_per_entry', 'u', 'run_id, entered, "position"'),
        ('machine_transition', 'machine_transition_pkey', 'p', 'run_id, n'),
        ('membership', 'membership_pkey', 'p', 'id'),
        ('outbox_message', 'outbox_message_pkey', 'p', 'id'),
        ('outbox_message', 'uniq_outbox_per_taskrun_generation', 'u', 'task_run_id, fencing_token_snapshot'),
        ('scheduled_trigger', 'scheduled_trigger_pkey', 'p', 'id'),
        ('task', 'task_pkey', 'p', 'id'),
        ('task', 'uniq_task_workflow_key', 'u', 'workflow_id, key'),
        ('task_dependency', 'task_dependency_pkey', 'p', 'task_id, depends_on_task_id'),
        ('task_run', 'task_run_pkey', 'p', 'id'),
        ('task_run', 'uniq_taskrun_per_run_task', 'u', 'workflow_run_id, task_id'),
        ('task_run_event', 'task_run_event_pkey', 'p', 'id'),
        ('trigger_firing', 'trigger_firing_pkey', 'p', 'id'),
        ('trigger_secret', 'trigger_secret_pkey', 'p', 'trigger_id'),
        ('work_item', 'work_item_pkey', 'p', 'id'),
        ('workflow', 'workflow_pkey', 'p', 'id'),
        ('workflow_run', 'workflow_run_pkey', 'p', 'id')
    ) AS k(tab, name, kind, cols) LOOP
        SELECT EXISTS (SELECT 1 FROM unnest(c.conkey) AS x(n)
                       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = x.n
                       WHERE a.attname = 'organization_id'),
               obj_description(c.conindid, 'pg_class')
        INTO v_has_org, v_comment
        FROM pg_constraint c
        WHERE c.conrelid = format('flowforge.%I', r.tab)::regclass AND c.conname = r.name;
        -- Absent (another migration replaced it) or compliant already: leave it.
        CONTINUE WHEN v_has_org IS NULL OR v_has_org;
        v_word := CASE r.kind WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END;
        IF to_regclass(format('flowforge.%I', r.name || '_tk')) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE flowforge.%I DROP CONSTRAINT %I, ADD CONSTRAINT %I %s USING INDEX %I',
                           r.tab, r.name, r.name, v_word, r.name || '_tk');
        ELSE
            EXECUTE format('ALTER TABLE flowforge.%I DROP CONSTRAINT %I, ADD CONSTRAINT %I %s (%s, organization_id)',
                           r.tab, r.name, r.name, v_word, r.cols);
        END IF;
        EXECUTE format('COMMENT ON INDEX flowforge.%I IS %L', r.name, v_comment);
    END LOOP;

    -- Unique partial indexes: the same rule.
    FOR r IN SELECT * FROM (VALUES
        ('work_item', 'work_item_checkpoint_live_uq',
         '(checkpoint_id, checkpoint_generation, item_index, organization_id) WHERE checkpoint_id IS NOT NULL AND status IN (''pending'', ''dispatched'')'),
        ('work_item', 'work_item_checkpoint_done_uq',
         '(checkpoint_id, checkpoint_generation, item_index, organization_id) WHERE checkpoint_id IS NOT NULL AND status = ''completed'''),
        ('trigger_firing', 'trigger_firing_delivery_uq',
         '(trigger_id, delivery_id, organization_id) WHERE trigger_id IS NOT NULL AND delivery_id IS NOT NULL')
    ) AS u(tab, name, def) LOOP
        SELECT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) AS x(n)
                       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = x.n
                       WHERE a.attname = 'organization_id'),
               obj_description(i.indexrelid, 'pg_class')
        INTO v_has_org, v_comment
        FROM pg_index i WHERE i.indexrelid = to_regclass(format('flowforge.%I', r.name));
        CONTINUE WHEN v_has_org IS NULL OR v_has_org;
        EXECUTE format('DROP INDEX flowforge.%I', r.name);
        IF to_regclass(format('flowforge.%I', r.name || '_tk')) IS NOT NULL THEN
            EXECUTE format('ALTER INDEX flowforge.%I RENAME TO %I', r.name || '_tk', r.name);
        ELSE
            EXECUTE format('CREATE UNIQUE INDEX %I ON flowforge.%I %s', r.name, r.tab, r.def);
        END IF;
        EXECUTE format('COMMENT ON INDEX flowforge.%I IS %L', r.name, v_comment);
    END LOOP;

    -- The foreign keys again, with organization_id; validated below, one at a time.
    FOR r IN SELECT * FROM (VALUES
        ('api_key_usage', 'api_key_usage_key_fkey', 'FOREIGN KEY (api_key_id, organization_id) REFERENCES flowforge.api_key(id, organization_id) ON DELETE CASCADE'),
        ('checkpoint', 'checkpoint_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('checkpoint', 'checkpoint_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('checkpoint_page', 'checkpoint_page_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id, organization_id) REFERENCES flowforge.checkpoint(id, organization_id) ON DELETE CASCADE'),
        ('engine_run', 'engine_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('graph_edge', 'graph_edge_from_fkey', 'FOREIGN KEY (from_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_to_fkey', 'FOREIGN KEY (to_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('graph_run', 'graph_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('machine_run', 'machine_run_definition_fkey', 'FOREIGN KEY (definition_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT'),
        ('outbox_message', 'outbox_message_task_run_fkey', 'FOREIGN KEY (task_run_id, organization_id) REFERENCES flowforge.task_run(id, organization_id) ON DELETE CASCADE'),
        ('outbox_message', 'outbox_message_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id, organization_id) REFERENCES flowforge.workflow_run(id, organization_id) ON DELETE CASCADE'),
        ('task', 'task_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_depends_on_fkey', 'FOREIGN KEY (depends_on_task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE CASCADE'),
        ('task_run', 'task_run_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('task_run', 'task_run_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id, organization_id) REFERENCES flowforge.workflow_run(id, organization_id) ON DELETE CASCADE'),
        ('trigger_secret', 'trigger_secret_trigger_fkey', 'FOREIGN KEY (trigger_id, organization_id) REFERENCES flowforge.scheduled_trigger(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id, organization_id) REFERENCES flowforge.checkpoint(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_parent_fkey', 'FOREIGN KEY (parent_work_item_id, organization_id) REFERENCES flowforge.work_item(id, organization_id) ON DELETE CASCADE'),
        ('work_item', 'work_item_task_fkey', 'FOREIGN KEY (task_id, organization_id) REFERENCES flowforge.task(id, organization_id) ON DELETE RESTRICT'),
        ('workflow_run', 'workflow_run_workflow_fkey', 'FOREIGN KEY (workflow_id, organization_id) REFERENCES flowforge.workflow(id, organization_id) ON DELETE RESTRICT')
    ) AS f(tab, name, def) LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_constraint c
                       WHERE c.conrelid = format('flowforge.%I', r.tab)::regclass AND c.conname = r.name) THEN
            EXECUTE format('ALTER TABLE flowforge.%I ADD CONSTRAINT %I %s NOT VALID', r.tab, r.name, r.def);
        END IF;
    END LOOP;
END;
$$;

-- (3) validation: a row pointing at another organization's row fails here, by name
ALTER TABLE flowforge.api_key_usage VALIDATE CONSTRAINT api_key_usage_key_fkey;
ALTER TABLE flowforge.checkpoint VALIDATE CONSTRAINT checkpoint_definition_fkey;
ALTER TABLE flowforge.checkpoint VALIDATE CONSTRAINT checkpoint_task_fkey;
ALTER TABLE flowforge.checkpoint_page VALIDATE CONSTRAINT checkpoint_page_checkpoint_fkey;
ALTER TABLE flowforge.engine_run VALIDATE CONSTRAINT engine_run_definition_fkey;
ALTER TABLE flowforge.graph_edge VALIDATE CONSTRAINT graph_edge_from_fkey;
ALTER TABLE flowforge.graph_edge VALIDATE CONSTRAINT graph_edge_to_fkey;
ALTER TABLE flowforge.graph_edge VALIDATE CONSTRAINT graph_edge_workflow_fkey;
ALTER TABLE flowforge.graph_run VALIDATE CONSTRAINT graph_run_definition_fkey;
ALTER TABLE flowforge.machine_run VALIDATE CONSTRAINT machine_run_definition_fkey;
ALTER TABLE flowforge.outbox_message VALIDATE CONSTRAINT outbox_message_task_run_fkey;
ALTER TABLE flowforge.outbox_message VALIDATE CONSTRAINT outbox_message_workflow_run_fkey;
ALTER TABLE flowforge.task VALIDATE CONSTRAINT task_workflow_fkey;
ALTER TABLE flowforge.task_dependency VALIDATE CONSTRAINT task_dependency_depends_on_fkey;
ALTER TABLE flowforge.task_dependency VALIDATE CONSTRAINT task_dependency_task_fkey;
ALTER TABLE flowforge.task_dependency VALIDATE CONSTRAINT task_dependency_workflow_fkey;
ALTER TABLE flowforge.task_run VALIDATE CONSTRAINT task_run_task_fkey;
ALTER TABLE flowforge.task_run VALIDATE CONSTRAINT task_run_workflow_run_fkey;
ALTER TABLE flowforge.trigger_secret VALIDATE CONSTRAINT trigger_secret_trigger_fkey;
ALTER TABLE flowforge.work_item VALIDATE CONSTRAINT work_item_checkpoint_fkey;
ALTER TABLE flowforge.work_item VALIDATE CONSTRAINT work_item_parent_fkey;
ALTER TABLE flowforge.work_item VALIDATE CONSTRAINT work_item_task_fkey;
ALTER TABLE flowforge.workflow_run VALIDATE CONSTRAINT workflow_run_workflow_fkey;
