-- FlowForge 0034 rollback: the keys as they were before (no organization_id),
-- foreign keys single-column again. The history tables' keys go back only when
-- they are exactly what 0034 made of them (another migration's keys stay).
-- One inverse per statement of 0034, last first: yoyo pairs them up, so a
-- migration that failed half-way is undone step by step.
-- transactional: false

SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
SELECT 'VALIDATE CONSTRAINT needs no undo';
DO $$
DECLARE
    r record;
    v_def text;
    v_comment text;
    v_word text;
BEGIN
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
        IF v_def = r.def THEN
            EXECUTE format('ALTER TABLE flowforge.%I DROP CONSTRAINT %I', r.tab, r.name);
        END IF;
    END LOOP;

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
        v_word := CASE r.kind WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END;
        SELECT pg_get_constraintdef(c.oid), obj_description(c.conindid, 'pg_class') INTO v_def, v_comment
        FROM pg_constraint c WHERE c.conrelid = format('flowforge.%I', r.tab)::regclass AND c.conname = r.name;
        CONTINUE WHEN v_def IS DISTINCT FROM format('%s (%s, organization_id)', v_word, r.cols);
        EXECUTE format('ALTER TABLE flowforge.%I DROP CONSTRAINT %I, ADD CONSTRAINT %I %s (%s)',
                       r.tab, r.name, r.name, v_word, r.cols);
        EXECUTE format('COMMENT ON INDEX flowforge.%I IS %L', r.name, v_comment);
    END LOOP;

    FOR r IN SELECT * FROM (VALUES
        ('work_item', 'work_item_checkpoint_live_uq',
         '(checkpoint_id, checkpoint_generation, item_index, organization_id)',
         '(checkpoint_id, checkpoint_generation, item_index) WHERE checkpoint_id IS NOT NULL AND status IN (''pending'', ''dispatched'')'),
        ('work_item', 'work_item_checkpoint_done_uq',
         '(checkpoint_id, checkpoint_generation, item_index, organization_id)',
         '(checkpoint_id, checkpoint_generation, item_index) WHERE checkpoint_id IS NOT NULL AND status = ''completed'''),
        ('trigger_firing', 'trigger_firing_delivery_uq',
         '(trigger_id, delivery_id, organization_id)',
         '(trigger_id, delivery_id) WHERE trigger_id IS NOT NULL AND delivery_id IS NOT NULL')
    ) AS u(tab, name, cols, def) LOOP
        SELECT pg_get_indexdef(i.indexrelid), obj_description(i.indexrelid, 'pg_class') INTO v_def, v_comment
        FROM pg_index i WHERE i.indexrelid = to_regclass(format('flowforge.%I', r.name));
        CONTINUE WHEN v_def IS NULL OR position(r.cols IN v_def) = 0;
        EXECUTE format('DROP INDEX flowforge.%I', r.name);
        EXECUTE format('CREATE UNIQUE INDEX %I ON flowforge.%I %s', r.name, r.tab, r.def);
        EXECUTE format('COMMENT ON INDEX flowforge.%I IS %L', r.name, v_comment);
    END LOOP;

    FOR r IN SELECT * FROM (VALUES
        ('api_key_usage', 'api_key_usage_key_fkey', 'FOREIGN KEY (api_key_id) REFERENCES flowforge.api_key(id) ON DELETE CASCADE'),
        ('checkpoint', 'checkpoint_definition_fkey', 'FOREIGN KEY (definition_id) REFERENCES flowforge.workflow(id) ON DELETE RESTRICT'),
        ('checkpoint', 'checkpoint_task_fkey', 'FOREIGN KEY (task_id) REFERENCES flowforge.task(id) ON DELETE RESTRICT'),
        ('checkpoint_page', 'checkpoint_page_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id) REFERENCES flowforge.checkpoint(id) ON DELETE CASCADE'),
        ('engine_run', 'engine_run_definition_fkey', 'FOREIGN KEY (definition_id) REFERENCES flowforge.workflow(id) ON DELETE RESTRICT'),
        ('graph_edge', 'graph_edge_from_fkey', 'FOREIGN KEY (from_task_id) REFERENCES flowforge.task(id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_to_fkey', 'FOREIGN KEY (to_task_id) REFERENCES flowforge.task(id) ON DELETE CASCADE'),
        ('graph_edge', 'graph_edge_workflow_fkey', 'FOREIGN KEY (workflow_id) REFERENCES flowforge.workflow(id) ON DELETE CASCADE'),
        ('graph_run', 'graph_run_definition_fkey', 'FOREIGN KEY (definition_id) REFERENCES flowforge.workflow(id) ON DELETE RESTRICT'),
        ('machine_run', 'machine_run_definition_fkey', 'FOREIGN KEY (definition_id) REFERENCES flowforge.workflow(id) ON DELETE RESTRICT'),
        ('outbox_message', 'outbox_message_task_run_fkey', 'FOREIGN KEY (task_run_id) REFERENCES flowforge.task_run(id) ON DELETE CASCADE'),
        ('outbox_message', 'outbox_message_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id) REFERENCES flowforge.workflow_run(id) ON DELETE CASCADE'),
        ('task', 'task_workflow_fkey', 'FOREIGN KEY (workflow_id) REFERENCES flowforge.workflow(id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_depends_on_fkey', 'FOREIGN KEY (depends_on_task_id) REFERENCES flowforge.task(id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_task_fkey', 'FOREIGN KEY (task_id) REFERENCES flowforge.task(id) ON DELETE CASCADE'),
        ('task_dependency', 'task_dependency_workflow_fkey', 'FOREIGN KEY (workflow_id) REFERENCES flowforge.workflow(id) ON DELETE CASCADE'),
        ('task_run', 'task_run_task_fkey', 'FOREIGN KEY (task_id) REFERENCES flowforge.task(id) ON DELETE RESTRICT'),
        ('task_run', 'task_run_workflow_run_fkey', 'FOREIGN KEY (workflow_run_id) REFERENCES flowforge.workflow_run(id) ON DELETE CASCADE'),
        ('trigger_secret', 'trigger_secret_trigger_fkey', 'FOREIGN KEY (trigger_id) REFERENCES flowforge.scheduled_trigger(id) ON DELETE CASCADE'),
        ('work_item', 'work_item_checkpoint_fkey', 'FOREIGN KEY (checkpoint_id) REFERENCES flowforge.checkpoint(id) ON DELETE CASCADE'),
        ('work_item', 'work_item_parent_fkey', 'FOREIGN KEY (parent_work_item_id) REFERENCES flowforge.work_item(id) ON DELETE CASCADE'),
        ('work_item', 'work_item_task_fkey', 'FOREIGN KEY (task_id) REFERENCES flowforge.task(id) ON DELETE RESTRICT'),
        ('workflow_run', 'workflow_run_workflow_fkey', 'FOREIGN KEY (workflow_id) REFERENCES flowforge.workflow(id) ON DELETE RESTRICT')
    ) AS f(tab, name, def) LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_constraint c
                       WHERE c.conrelid = format('flowforge.%I', r.tab)::regclass AND c.conname = r.name) THEN
            EXECUTE format('ALTER TABLE flowforge.%I ADD CONSTRAINT %I %s', r.tab, r.name, r.def);
        END IF;
    END LOOP;
END;
$$;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_checkpoint_done_uq_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_checkpoint_live_uq_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.workflow_run_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.workflow_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.trigger_secret_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.uniq_taskrun_per_run_task_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.task_run_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.task_dependency_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.uniq_task_workflow_key_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.task_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.scheduled_trigger_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.uniq_outbox_per_taskrun_generation_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.outbox_message_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.membership_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_transition_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_timer_one_per_entry_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_timer_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_run_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_event_seen_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_event_queue_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.graph_visit_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.graph_step_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.graph_run_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.graph_edge_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.checkpoint_page_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.checkpoint_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.api_key_usage_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.uniq_api_key_prefix_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.api_key_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.agent_pkey_tk;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.affinity_binding_pkey_tk;
