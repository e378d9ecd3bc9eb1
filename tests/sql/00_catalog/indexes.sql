-- Indexes: every index the seed names exists with its exact definition
-- (columns, order, direction, partial predicate), so do the extra indexes of
-- the migrations (0015: the substrate and the graph engine; 0016: the DAG's
-- claim indexes re-shaped for lower priority first; 0017: the state-machine
-- engine; 0020/0021: fan-out; 0022/0023: triggers; 0027: the inspection views' windows and sweeps; 0030/0031: the
-- keyset listings and the member scope),
-- and each table has exactly the indexes listed — an index nobody can name a query for should not exist
-- (docs/data-model.md), so every index carries the query it serves as its comment (0026).
-- Then the load-bearing ones are shown to serve their query.
BEGIN;
SELECT plan(236);

-- The definition of index p_name in schema flowforge, NULL when it does not exist. (A partitioned table's
-- index, relkind I, is defined ON ONLY its table: each partition has its own, 0032.)
CREATE FUNCTION pg_temp.indexdef(p_name text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT pg_get_indexdef(c.oid)
    FROM pg_class c
    WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relname = p_name AND c.relkind IN ('i', 'I')
$$;

-- ---------------------------------------------------------------------------
-- The seed's indexes
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('idx_wfrun_wf_recent'),
    'CREATE INDEX idx_wfrun_wf_recent ON flowforge.workflow_run USING btree (workflow_id, created_at DESC)',
    'idx_wfrun_wf_recent: (workflow_id, created_at DESC) — the last N runs of a workflow');
SELECT is(pg_temp.indexdef('idx_wfrun_state_age'),
    'CREATE INDEX idx_wfrun_state_age ON flowforge.workflow_run USING btree (state, created_at)',
    'idx_wfrun_state_age: (state, created_at) — the stuck-run sweep');
SELECT is(pg_temp.indexdef('idx_taskrun_state_age'),
    'CREATE INDEX idx_taskrun_state_age ON flowforge.task_run USING btree (organization_id, queue, priority, ready_at) WHERE ((state)::text = ''ready''::text)',
    'idx_taskrun_state_age: reshaped for the claim — (organization_id, queue, priority, ready_at) partial on ready: lower priority first (0016)');
SELECT is(pg_temp.indexdef('idx_taskrun_run_state'),
    'CREATE INDEX idx_taskrun_run_state ON flowforge.task_run USING btree (workflow_run_id, state)',
    'idx_taskrun_run_state: (workflow_run_id, state) — run progress');
SELECT is(pg_temp.indexdef('idx_taskrun_lease_expiry'),
    'CREATE INDEX idx_taskrun_lease_expiry ON flowforge.task_run USING btree (lease_expires_at) WHERE ((state)::text = ''running''::text)',
    'idx_taskrun_lease_expiry: (lease_expires_at) partial on running — the reaper');
SELECT is(pg_temp.indexdef('idx_outbox_pending'),
    'CREATE INDEX idx_outbox_pending ON flowforge.outbox_message USING btree (next_attempt_at) WHERE (published_at IS NULL)',
    'idx_outbox_pending: reshaped for the drain — (next_attempt_at) partial on unpublished (available first)');
SELECT is(pg_temp.indexdef('idx_event_taskrun_created'),
    'CREATE INDEX idx_event_taskrun_created ON ONLY flowforge.task_run_event USING btree (task_run_id, created_at)',
    'idx_event_taskrun_created: (task_run_id, created_at) — a task run''s event log');

-- The seed's unique constraints are backed by these indexes.
SELECT is(pg_temp.indexdef('uniq_workflow_name_version'),
    'CREATE UNIQUE INDEX uniq_workflow_name_version ON flowforge.workflow USING btree (organization_id, name, version)',
    'uniq_workflow_name_version: (organization_id, name, version) — per tenant, unlike the seed');
SELECT is(pg_temp.indexdef('uniq_task_workflow_key'),
    'CREATE UNIQUE INDEX uniq_task_workflow_key ON flowforge.task USING btree (workflow_id, key, organization_id)',
    'uniq_task_workflow_key: (workflow_id, key, organization_id) — also covers the FK task.workflow_id');
SELECT is(pg_temp.indexdef('uniq_taskrun_per_run_task'),
    'CREATE UNIQUE INDEX uniq_taskrun_per_run_task ON flowforge.task_run USING btree (workflow_run_id, task_id, organization_id)',
    'uniq_taskrun_per_run_task: (workflow_run_id, task_id, organization_id)');
SELECT is(pg_temp.indexdef('uniq_outbox_per_taskrun_generation'),
    'CREATE UNIQUE INDEX uniq_outbox_per_taskrun_generation ON flowforge.outbox_message USING btree (task_run_id, fencing_token_snapshot, organization_id)',
    'uniq_outbox_per_taskrun_generation: (task_run_id, fencing_token_snapshot, organization_id)');

-- ---------------------------------------------------------------------------
-- The migrations' further indexes
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('idx_membership_member'),
    'CREATE INDEX idx_membership_member ON flowforge.membership USING btree (member)',
    'idx_membership_member: a login role resolves its organization by name');
SELECT is(pg_temp.indexdef('uniq_membership_org_member'),
    'CREATE UNIQUE INDEX uniq_membership_org_member ON flowforge.membership USING btree (organization_id, member)',
    'uniq_membership_org_member: (organization_id, member)');
SELECT is(pg_temp.indexdef('uniq_organization_slug'),
    'CREATE UNIQUE INDEX uniq_organization_slug ON flowforge.organization USING btree (slug)',
    'uniq_organization_slug: (slug)');
SELECT is(pg_temp.indexdef('uniq_api_key_prefix'),
    'CREATE UNIQUE INDEX uniq_api_key_prefix ON flowforge.api_key USING btree (prefix, organization_id)',
    'uniq_api_key_prefix: an API key is found by its prefix');
SELECT is(pg_temp.indexdef('idx_audit_org_created'),
    'CREATE INDEX idx_audit_org_created ON ONLY flowforge.audit_log USING btree (organization_id, created_at DESC)',
    'idx_audit_org_created: an organization''s audit log, newest first');
SELECT is(pg_temp.indexdef('idx_taskdep_depends_on'),
    'CREATE INDEX idx_taskdep_depends_on ON flowforge.task_dependency USING btree (depends_on_task_id)',
    'idx_taskdep_depends_on: which tasks wait on this one (release and skip)');
SELECT is(pg_temp.indexdef('idx_taskdep_workflow'),
    'CREATE INDEX idx_taskdep_workflow ON flowforge.task_dependency USING btree (workflow_id)',
    'idx_taskdep_workflow: the cascade when a workflow version is deleted');
SELECT is(pg_temp.indexdef('idx_idempotency_run'),
    'CREATE INDEX idx_idempotency_run ON flowforge.idempotency_key USING btree (workflow_run_id)',
    'idx_idempotency_run: the cascade when a run is deleted');
SELECT is(pg_temp.indexdef('idx_outbox_run'),
    'CREATE INDEX idx_outbox_run ON flowforge.outbox_message USING btree (workflow_run_id)',
    'idx_outbox_run: the cascade when a run is deleted');
SELECT is(pg_temp.indexdef('task_dependency_pkey'),
    'CREATE UNIQUE INDEX task_dependency_pkey ON flowforge.task_dependency USING btree (task_id, depends_on_task_id, organization_id)',
    'task_dependency_pkey: (task_id, depends_on_task_id, organization_id) — also a task''s upstream edges');
SELECT is(pg_temp.indexdef('idx_trigger_due'),
    'CREATE INDEX idx_trigger_due ON flowforge.scheduled_trigger USING btree (next_fire_at) WHERE enabled',
    'idx_trigger_due: (next_fire_at) partial on enabled — due triggers');
SELECT is(pg_temp.indexdef('idx_wfrun_org_recent'),
    'CREATE INDEX idx_wfrun_org_recent ON flowforge.workflow_run USING btree (organization_id, created_at DESC)',
    'idx_wfrun_org_recent: an organization''s newest runs (run list)');
SELECT is(pg_temp.indexdef('idx_taskrun_task'),
    'CREATE INDEX idx_taskrun_task ON flowforge.task_run USING btree (task_id)',
    'idx_taskrun_task: (task_id) — serves the RESTRICT check when a task is deleted');
SELECT is(pg_temp.indexdef('idempotency_key_pkey'),
    'CREATE UNIQUE INDEX idempotency_key_pkey ON flowforge.idempotency_key USING btree (organization_id, key)',
    'idempotency_key_pkey: (organization_id, key)');
SELECT is(pg_temp.indexdef('idx_event_run_level'),
    'CREATE INDEX idx_event_run_level ON ONLY flowforge.task_run_event USING btree (workflow_run_id, created_at) WHERE (task_run_id IS NULL)',
    'idx_event_run_level: (workflow_run_id, created_at) partial on run-level events');

SELECT is(pg_temp.indexdef('idx_taskrun_ready_by_name'),
    'CREATE INDEX idx_taskrun_ready_by_name ON flowforge.task_run USING btree (organization_id, queue, task_key, priority, ready_at) WHERE ((state)::text = ''ready''::text)',
    'idx_taskrun_ready_by_name: (organization_id, queue, task_key, priority, ready_at) partial on ready — claims of given task names, lower priority first (0016)');
SELECT is(pg_temp.indexdef('idx_audit_org_entity'),
    'CREATE INDEX idx_audit_org_entity ON ONLY flowforge.audit_log USING btree (organization_id, entity, entity_id, created_at DESC)',
    'idx_audit_org_entity: who did what to one entity, newest first');
SELECT is(pg_temp.indexdef('api_key_usage_pkey'),
    'CREATE UNIQUE INDEX api_key_usage_pkey ON flowforge.api_key_usage USING btree (api_key_id, organization_id)',
    'api_key_usage_pkey: a key''s usage row');
SELECT is(pg_temp.indexdef('idx_queue_push'),
    'CREATE INDEX idx_queue_push ON flowforge.queue USING btree (organization_id, name) WHERE (exchange IS NOT NULL)',
    'idx_queue_push: (organization_id, name) partial on push queues');
-- 0028 / 0029: flow control.
SELECT is(pg_temp.indexdef('queue_flow_idx'),
    'CREATE INDEX queue_flow_idx ON flowforge.queue USING btree (organization_id, name) WHERE flow',
    'queue_flow_idx: (organization_id, name) partial on queues claimed through flow control — empty without it');
SELECT is(pg_temp.indexdef('idx_taskrun_flow_lane'),
    'CREATE INDEX idx_taskrun_flow_lane ON flowforge.task_run USING btree (organization_id, queue, flow_lane, priority, ready_at) WHERE (((state)::text = ''ready''::text) AND (flow_lane IS NOT NULL))',
    'idx_taskrun_flow_lane: (organization_id, queue, flow_lane, priority, ready_at) partial on ready units with a lane');
SELECT is(pg_temp.indexdef('work_item_flow_lane_idx'),
    'CREATE INDEX work_item_flow_lane_idx ON flowforge.work_item USING btree (organization_id, queue, flow_lane, priority, next_attempt_at) WHERE (((status)::text = ''pending''::text) AND (flow_lane IS NOT NULL))',
    'work_item_flow_lane_idx: (organization_id, queue, flow_lane, priority, next_attempt_at) partial on pending items with a lane');
SELECT is(pg_temp.indexdef('flow_slot_pkey'),
    'CREATE UNIQUE INDEX flow_slot_pkey ON flowforge.flow_slot USING btree (organization_id, scope, name, value)',
    'flow_slot_pkey: one running counter per queue and per concurrency key value');
SELECT is(pg_temp.indexdef('flow_bucket_pkey'),
    'CREATE UNIQUE INDEX flow_bucket_pkey ON flowforge.flow_bucket USING btree (organization_id, scope, name, value, rate_limit, rate_per)',
    'flow_bucket_pkey: one token bucket per queue or rate-limit key value and rate');
SELECT is(pg_temp.indexdef('flow_lane_identity_uq'),
    'CREATE UNIQUE INDEX flow_lane_identity_uq ON flowforge.flow_lane USING btree (organization_id, identity)',
    'flow_lane_identity_uq: one lane per distinct evaluated flow control');

-- ---------------------------------------------------------------------------
-- 0015: the substrate (seed 002's names) and the graph engine
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('engine_run_tenant_created'),
    'CREATE INDEX engine_run_tenant_created ON flowforge.engine_run USING btree (organization_id, created_at DESC, id DESC)',
    'engine_run_tenant_created: an organization''s runs of every engine, newest first (list_runs)');
SELECT is(pg_temp.indexdef('engine_run_definition_recent'),
    'CREATE INDEX engine_run_definition_recent ON flowforge.engine_run USING btree (definition_id, created_at DESC, id DESC)',
    'engine_run_definition_recent: the last N runs of a workflow version, of any engine (list_runs(workflow))');
SELECT is(pg_temp.indexdef('engine_run_run_idx'),
    'CREATE INDEX engine_run_run_idx ON flowforge.engine_run USING btree (run_id)',
    'engine_run_run_idx: a run id alone, across organizations (the operator''s read path, resolve_run_id''s prefix range)');
SELECT is(pg_temp.indexdef('engine_run_tenant_run_uq'),
    'CREATE UNIQUE INDEX engine_run_tenant_run_uq ON flowforge.engine_run USING btree (organization_id, run_id)',
    'engine_run_tenant_run_uq: one directory row per run, within an organization (the lock every work-item engine shares)');
SELECT is(pg_temp.indexdef('work_item_status_priority_idx'),
    'CREATE INDEX work_item_status_priority_idx ON flowforge.work_item USING btree (organization_id, queue, priority, next_attempt_at) WHERE ((status)::text = ''pending''::text)',
    'work_item_status_priority_idx: (organization_id, queue, priority, next_attempt_at) partial on pending — claim_work, lower priority first');
SELECT is(pg_temp.indexdef('work_item_ready_by_name_idx'),
    'CREATE INDEX work_item_ready_by_name_idx ON flowforge.work_item USING btree (organization_id, queue, task_name, priority, next_attempt_at) WHERE ((status)::text = ''pending''::text)',
    'work_item_ready_by_name_idx: (organization_id, queue, task_name, priority, next_attempt_at) partial on pending — claim_work(task_names)');
SELECT is(pg_temp.indexdef('work_item_lease_idx'),
    'CREATE INDEX work_item_lease_idx ON flowforge.work_item USING btree (lease_expires_at) WHERE ((status)::text = ''dispatched''::text)',
    'work_item_lease_idx: (lease_expires_at) partial on dispatched — the work-item reaper');
SELECT is(pg_temp.indexdef('work_item_run_idx'),
    'CREATE INDEX work_item_run_idx ON flowforge.work_item USING btree (organization_id, run_id)',
    'work_item_run_idx: (organization_id, run_id) — a run''s items (cancel, get_run)');
SELECT is(pg_temp.indexdef('work_item_parent_idx'),
    'CREATE INDEX work_item_parent_idx ON flowforge.work_item USING btree (parent_work_item_id) WHERE (parent_work_item_id IS NOT NULL)',
    'work_item_parent_idx: (parent_work_item_id) partial — a fan-out''s children, the parent cascade');
SELECT is(pg_temp.indexdef('work_item_task_idx'),
    'CREATE INDEX work_item_task_idx ON flowforge.work_item USING btree (task_id)',
    'work_item_task_idx: (task_id) — serves the RESTRICT check when a definition node is deleted');
SELECT is(pg_temp.indexdef('agent_name_key'),
    'CREATE UNIQUE INDEX agent_name_key ON flowforge.agent USING btree (organization_id, name)',
    'agent_name_key: (organization_id, name) — agents are addressed by name, per organization');
SELECT is(pg_temp.indexdef('agent_live_idx'),
    'CREATE INDEX agent_live_idx ON flowforge.agent USING btree (organization_id) WHERE ((status)::text <> ''inactive''::text)',
    'agent_live_idx: the agents not inactive yet — the sweep''s candidates, however many dead ones piled up');
SELECT is(pg_temp.indexdef('affinity_binding_key_uq'),
    'CREATE UNIQUE INDEX affinity_binding_key_uq ON flowforge.affinity_binding USING btree (organization_id, affinity_key)',
    'affinity_binding_key_uq: (organization_id, affinity_key) — one binding per key: two agents racing to pin it, one wins');
SELECT is(pg_temp.indexdef('affinity_binding_agent_idx'),
    'CREATE INDEX affinity_binding_agent_idx ON flowforge.affinity_binding USING btree (organization_id, agent_id)',
    'affinity_binding_agent_idx: what is pinned to an agent (releasing an inactive agent''s bindings, list_agents, the FK cascade)');
SELECT is(pg_temp.indexdef('engine_tenant_engine_uq'),
    'CREATE UNIQUE INDEX engine_tenant_engine_uq ON flowforge.engine USING btree (organization_id, engine_id)',
    'engine_tenant_engine_uq: (organization_id, engine_id) — one row per daemon per organization');
SELECT is(pg_temp.indexdef('engine_one_serving_per_org'),
    'CREATE UNIQUE INDEX engine_one_serving_per_org ON flowforge.engine USING btree (organization_id) WHERE ((status)::text = ''serving''::text)',
    'engine_one_serving_per_org: (organization_id) unique partial on serving — never two daemons on one organization''s duties');
SELECT is(pg_temp.indexdef('engine_engine_idx'),
    'CREATE INDEX engine_engine_idx ON flowforge.engine USING btree (engine_id, heartbeat_at)',
    'engine_engine_idx: (engine_id, heartbeat_at) — a daemon''s own rows (renew, give back)');
SELECT is(pg_temp.indexdef('graph_run_runid_uq'),
    'CREATE UNIQUE INDEX graph_run_runid_uq ON flowforge.graph_run USING btree (organization_id, run_id)',
    'graph_run_runid_uq: (organization_id, run_id) — one graph run per run id');
SELECT is(pg_temp.indexdef('graph_step_pkey'),
    'CREATE UNIQUE INDEX graph_step_pkey ON flowforge.graph_step USING btree (run_id, step, organization_id)',
    'graph_step_pkey: (run_id, step, organization_id) — the path, in step order');
SELECT is(pg_temp.indexdef('graph_visit_pkey'),
    'CREATE UNIQUE INDEX graph_visit_pkey ON flowforge.graph_visit USING btree (run_id, node, organization_id)',
    'graph_visit_pkey: (run_id, node, organization_id) — one visit counter per node (run_counts)');
SELECT is(pg_temp.indexdef('graph_edge_pkey'),
    'CREATE UNIQUE INDEX graph_edge_pkey ON flowforge.graph_edge USING btree (from_task_id, "position", organization_id)',
    'graph_edge_pkey: (from_task_id, position, organization_id) — a node''s edges in the order they are tried');
SELECT is(pg_temp.indexdef('idx_graph_edge_workflow'),
    'CREATE INDEX idx_graph_edge_workflow ON flowforge.graph_edge USING btree (workflow_id)',
    'idx_graph_edge_workflow: the cascade when a workflow version is deleted');
SELECT is(pg_temp.indexdef('idx_event_work_item'),
    'CREATE INDEX idx_event_work_item ON ONLY flowforge.task_run_event USING btree (work_item_id, created_at) WHERE (work_item_id IS NOT NULL)',
    'idx_event_work_item: (work_item_id, created_at) partial — a work item''s event log');

-- ---------------------------------------------------------------------------
-- 0017: the state-machine engine
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('machine_run_pkey'),
    'CREATE UNIQUE INDEX machine_run_pkey ON flowforge.machine_run USING btree (id, organization_id)',
    'machine_run_pkey: (id, organization_id)');
SELECT is(pg_temp.indexdef('machine_run_runid_uq'),
    'CREATE UNIQUE INDEX machine_run_runid_uq ON flowforge.machine_run USING btree (organization_id, run_id)',
    'machine_run_runid_uq: (organization_id, run_id) — a machine by its run id (every event, action end, timer, get_run)');
SELECT is(pg_temp.indexdef('machine_transition_pkey'),
    'CREATE UNIQUE INDEX machine_transition_pkey ON flowforge.machine_transition USING btree (run_id, n, organization_id)',
    'machine_transition_pkey: (run_id, n, organization_id) — a run''s history in order, its most recent entries');
SELECT is(pg_temp.indexdef('machine_event_queue_pkey'),
    'CREATE UNIQUE INDEX machine_event_queue_pkey ON flowforge.machine_event_queue USING btree (run_id, seq, organization_id)',
    'machine_event_queue_pkey: (run_id, seq, organization_id) — a suspended run''s events in arrival order');
SELECT is(pg_temp.indexdef('machine_event_seen_pkey'),
    'CREATE UNIQUE INDEX machine_event_seen_pkey ON flowforge.machine_event_seen USING btree (run_id, event_id, organization_id)',
    'machine_event_seen_pkey: (run_id, event_id, organization_id) — "seen this id?" is one key lookup');
SELECT is(pg_temp.indexdef('machine_timer_pkey'),
    'CREATE UNIQUE INDEX machine_timer_pkey ON flowforge.machine_timer USING btree (id, organization_id)',
    'machine_timer_pkey: (id, organization_id) — the timer duty re-reads each due timer by id');
SELECT is(pg_temp.indexdef('machine_timer_one_per_entry'),
    'CREATE UNIQUE INDEX machine_timer_one_per_entry ON flowforge.machine_timer USING btree (run_id, entered, "position", organization_id)',
    'machine_timer_one_per_entry: (run_id, entered, position, organization_id) — a run''s timers (deleted when it leaves a state)');
SELECT is(pg_temp.indexdef('machine_timer_due_idx'),
    'CREATE INDEX machine_timer_due_idx ON flowforge.machine_timer USING btree (fire_at)',
    'machine_timer_due_idx: (fire_at) — the timer duty: due timers, oldest first');

-- ---------------------------------------------------------------------------
-- 0020/0021: fan-out
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('checkpoint_pkey'),
    'CREATE UNIQUE INDEX checkpoint_pkey ON flowforge.checkpoint USING btree (id, organization_id)',
    'checkpoint_pkey: (id, organization_id) — a child''s checkpoint, by the id it carries');
SELECT is(pg_temp.indexdef('checkpoint_run_node_uq'),
    'CREATE UNIQUE INDEX checkpoint_run_node_uq ON flowforge.checkpoint USING btree (organization_id, run_id, node_name)',
    'checkpoint_run_node_uq: (organization_id, run_id, node_name) — one checkpoint per fanning node of a run (begin, resume, '
    'get_run, fan_out_output)');
SELECT is(pg_temp.indexdef('checkpoint_page_pkey'),
    'CREATE UNIQUE INDEX checkpoint_page_pkey ON flowforge.checkpoint_page USING btree (checkpoint_id, page, organization_id)',
    'checkpoint_page_pkey: (checkpoint_id, page, organization_id) — the page of the element a child is made from');
SELECT is(pg_temp.indexdef('work_item_checkpoint_item_idx'),
    'CREATE INDEX work_item_checkpoint_item_idx ON flowforge.work_item USING btree (checkpoint_id, checkpoint_generation, item_index) WHERE (checkpoint_id IS NOT NULL)',
    'work_item_checkpoint_item_idx: (checkpoint_id, checkpoint_generation, item_index) partial on children — a fan-out''s '
    'children by element (failed indexes, reads, the checkpoint cascade)');
SELECT is(pg_temp.indexdef('work_item_checkpoint_live_uq'),
    'CREATE UNIQUE INDEX work_item_checkpoint_live_uq ON flowforge.work_item USING btree (checkpoint_id, checkpoint_generation, item_index, organization_id) WHERE ((checkpoint_id IS NOT NULL) AND ((status)::text = ANY ((ARRAY[''pending''::character varying, ''dispatched''::character varying])::text[])))',
    'work_item_checkpoint_live_uq: unique (checkpoint_id, checkpoint_generation, item_index, organization_id) partial on live children — '
    'an element dispatched twice is refused; cancel finds the live ones');
SELECT is(pg_temp.indexdef('work_item_checkpoint_done_uq'),
    'CREATE UNIQUE INDEX work_item_checkpoint_done_uq ON flowforge.work_item USING btree (checkpoint_id, checkpoint_generation, item_index, organization_id) WHERE ((checkpoint_id IS NOT NULL) AND ((status)::text = ''completed''::text))',
    'work_item_checkpoint_done_uq: unique (checkpoint_id, checkpoint_generation, item_index, organization_id) partial on completed children — '
    'one success per element; "already succeeded?" on resume; the output collected in element order');
SELECT is(pg_temp.indexdef('idx_taskrun_fanout_ready'),
    'CREATE INDEX idx_taskrun_fanout_ready ON flowforge.task_run USING btree (workflow_run_id) WHERE (((state)::text = ''ready''::text) AND fans_out)',
    'idx_taskrun_fanout_ready: (workflow_run_id) partial on ready fanning tasks — _tasks_ready''s probe, nearly always empty');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace
             AND c.relname IN ('work_item_checkpoint_item_idx', 'work_item_checkpoint_live_uq', 'work_item_checkpoint_done_uq',
                               'idx_taskrun_fanout_ready')
             AND i.indisvalid AND i.indisready), 4,
          'the four indexes 0021 builds CONCURRENTLY are valid and ready');

-- ---------------------------------------------------------------------------
-- 0022/0023: triggers (seed 002's firing log; the name key over live triggers)
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('scheduled_trigger_live_name_uq'),
    'CREATE UNIQUE INDEX scheduled_trigger_live_name_uq ON flowforge.scheduled_trigger USING btree (organization_id, name) WHERE (deleted_at IS NULL)',
    'scheduled_trigger_live_name_uq: unique (organization_id, name) partial on live triggers — a trigger by name (every call '
    'naming one); a dropped trigger frees its name (0023, replacing seed 000''s uniq_scheduled_trigger_org_name)');
SELECT is(pg_temp.indexdef('trigger_secret_pkey'),
    'CREATE UNIQUE INDEX trigger_secret_pkey ON flowforge.trigger_secret USING btree (trigger_id, organization_id)',
    'trigger_secret_pkey: (trigger_id, organization_id) — a webhook''s key, by its trigger (receive_webhook)');
SELECT is(pg_temp.indexdef('trigger_firing_pkey'),
    'CREATE UNIQUE INDEX trigger_firing_pkey ON ONLY flowforge.trigger_firing USING btree (organization_id, id, recorded_at)',
    'trigger_firing_pkey: (organization_id, id, recorded_at) — the firing a run names (trigger_firing_id, within its '
    'organization; 0032: the partition column is part of the key)');
SELECT is(pg_temp.indexdef('trigger_firing_tenant_fired'),
    'CREATE INDEX trigger_firing_tenant_fired ON ONLY flowforge.trigger_firing USING btree (organization_id, fired_on DESC, id DESC)',
    'trigger_firing_tenant_fired: (organization_id, fired_on DESC, id DESC) — what fired here lately (list_firings())');
SELECT is(pg_temp.indexdef('trigger_firing_tenant_trigger'),
    'CREATE INDEX trigger_firing_tenant_trigger ON ONLY flowforge.trigger_firing USING btree (organization_id, trigger_name, fired_on DESC, id DESC)',
    'trigger_firing_tenant_trigger: (organization_id, trigger_name, fired_on DESC, id DESC) — everything one trigger did '
    '(list_firings(trigger_name))');
SELECT is(pg_temp.indexdef('trigger_firing_run'),
    'CREATE INDEX trigger_firing_run ON ONLY flowforge.trigger_firing USING btree (run_id) WHERE (run_id IS NOT NULL)',
    'trigger_firing_run: (run_id) partial — the reverse walk: which firing started or moved a run');
SELECT is(pg_temp.indexdef('trigger_firing_caused_nothing'),
    'CREATE INDEX trigger_firing_caused_nothing ON ONLY flowforge.trigger_firing USING btree (fired_on DESC) WHERE ((outcome)::text = ANY ((ARRAY[''refused''::character varying, ''failed''::character varying])::text[]))',
    'trigger_firing_caused_nothing: (fired_on DESC) partial on refused and failed — the seed''s second tracing query');
SELECT is(pg_temp.indexdef('trigger_firing_delivery_uq'),
    'CREATE UNIQUE INDEX trigger_firing_delivery_uq ON flowforge.trigger_delivery USING btree (organization_id, trigger_id, delivery_id)',
    'trigger_firing_delivery_uq: unique (organization_id, trigger_id, delivery_id), trigger_delivery''s key since 0032 — one '
    'firing per delivery (a redelivered webhook, a cron slot, a file, a commit) across the firing log''s months; "fired '
    'already?" (fire_trigger, feeder_unfired)');
SELECT is(pg_temp.indexdef('engine_run_triggered_by'),
    'CREATE INDEX engine_run_triggered_by ON flowforge.engine_run USING btree (triggered_by, created_at DESC) WHERE (triggered_by IS NOT NULL)',
    'engine_run_triggered_by: (triggered_by, created_at DESC) partial — the seed''s first tracing query: the runs a trigger caused');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace
             AND c.relname IN ('scheduled_trigger_live_name_uq', 'engine_run_triggered_by') AND i.indisvalid AND i.indisready), 2,
          'the two indexes 0023 builds CONCURRENTLY are valid and ready');

-- 0027: the inspection views' recent windows and stuck-run sweeps
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('idx_event_throughput'),
    'CREATE INDEX idx_event_throughput ON ONLY flowforge.task_run_event USING btree (kind, created_at) INCLUDE (organization_id, to_state) WHERE ((kind)::text = ANY ((ARRAY[''claimed''::character varying, ''completed''::character varying, ''failed''::character varying, ''lease_expired''::character varying, ''timed_out''::character varying])::text[]))',
    'idx_event_throughput: (kind, created_at) INCLUDE (organization_id, to_state) partial on the kinds it counts — '
    'claims in the last minute (queue_depth), work finished in the last hour and day (tenant_usage)');
SELECT is(pg_temp.indexdef('graph_run_live_age'),
    'CREATE INDEX graph_run_live_age ON flowforge.graph_run USING btree (created_at) WHERE ((status)::text = ''running''::text)',
    'graph_run_live_age: (created_at) partial on running — the stuck-run sweep of graph runs');
SELECT is(pg_temp.indexdef('machine_run_live_age'),
    'CREATE INDEX machine_run_live_age ON flowforge.machine_run USING btree (created_at) WHERE ((status)::text = ''running''::text)',
    'machine_run_live_age: (created_at) partial on running — the stuck-run sweep of machines');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace
             AND c.relname IN ('idx_event_throughput', 'graph_run_live_age', 'machine_run_live_age')
             AND i.indisvalid AND i.indisready), 3,
          'the three indexes 0027 builds CONCURRENTLY are valid and ready');

-- 0030/0031: ownership and the keyset listings
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('workflow_latest_uq'),
    'CREATE UNIQUE INDEX workflow_latest_uq ON flowforge.workflow USING btree (organization_id, name) WHERE (superseded_at IS NULL)',
    'workflow_latest_uq: unique (organization_id, name) partial on latest versions — one latest version per name, the '
    'version a start reads by name');
SELECT is(pg_temp.indexdef('workflow_tenant_latest_created'),
    'CREATE INDEX workflow_tenant_latest_created ON flowforge.workflow USING btree (organization_id, created_at DESC, id DESC) WHERE (superseded_at IS NULL)',
    'workflow_tenant_latest_created: each name''s latest version, newest first (list_workflows)');
SELECT is(pg_temp.indexdef('scheduled_trigger_tenant_created'),
    'CREATE INDEX scheduled_trigger_tenant_created ON flowforge.scheduled_trigger USING btree (organization_id, created_at DESC, id DESC)',
    'scheduled_trigger_tenant_created: the organization''s triggers, newest first (list_triggers)');
SELECT is(pg_temp.indexdef('engine_run_tenant_creator_created'),
    'CREATE INDEX engine_run_tenant_creator_created ON flowforge.engine_run USING btree (organization_id, created_by, created_at DESC, id DESC)',
    'engine_run_tenant_creator_created: a member''s own runs, newest first (list_runs for the member role, creator =>)');
SELECT is(pg_temp.indexdef('engine_run_tenant_definition_created'),
    'CREATE INDEX engine_run_tenant_definition_created ON flowforge.engine_run USING btree (organization_id, definition_name, created_at DESC, id DESC)',
    'engine_run_tenant_definition_created: one workflow''s runs of every version, newest first (list_runs(workflow =>))');
SELECT is(pg_temp.indexdef('engine_run_tenant_trigger_created'),
    'CREATE INDEX engine_run_tenant_trigger_created ON flowforge.engine_run USING btree (organization_id, triggered_by, created_at DESC, id DESC) WHERE (triggered_by IS NOT NULL)',
    'engine_run_tenant_trigger_created: the runs one trigger started, newest first (list_runs(trigger_name =>))');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace
             AND c.relname IN ('engine_run_tenant_creator_created', 'engine_run_tenant_definition_created',
                               'engine_run_tenant_trigger_created', 'workflow_tenant_latest_created',
                               'scheduled_trigger_tenant_created')
             AND i.indisvalid AND i.indisready), 5,
          'the five indexes 0031 builds CONCURRENTLY are valid and ready');
-- 0032/0033: the history partitioned by time, retention
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('task_run_event_pkey'),
    'CREATE UNIQUE INDEX task_run_event_pkey ON ONLY flowforge.task_run_event USING btree (organization_id, created_at, id)',
    'task_run_event_pkey: (organization_id, created_at, id) — an event''s identity within its tenant and month, appended '
    'at the right edge (ids are random)');
SELECT is(pg_temp.indexdef('audit_log_pkey'),
    'CREATE UNIQUE INDEX audit_log_pkey ON ONLY flowforge.audit_log USING btree (organization_id, id, created_at)',
    'audit_log_pkey: (organization_id, id, created_at) — an audit row within its tenant and month');
SELECT is(pg_temp.indexdef('trigger_firing_tenant_recorded'),
    'CREATE INDEX trigger_firing_tenant_recorded ON ONLY flowforge.trigger_firing USING btree (organization_id, recorded_at)',
    'trigger_firing_tenant_recorded: (organization_id, recorded_at) — purge: an organization''s firings past their retention, oldest first');
SELECT is(pg_temp.indexdef('trigger_delivery_recorded'),
    'CREATE INDEX trigger_delivery_recorded ON flowforge.trigger_delivery USING btree (organization_id, recorded_at)',
    'trigger_delivery_recorded: (organization_id, recorded_at) — purge: the delivery keys of a month, or past their retention');
SELECT is(pg_temp.indexdef('engine_run_ended_created'),
    'CREATE INDEX engine_run_ended_created ON flowforge.engine_run USING btree (organization_id, created_at) INCLUDE (ended_at) WHERE (ended_at IS NOT NULL)',
    'engine_run_ended_created: (organization_id, created_at) INCLUDE (ended_at) partial on ended runs — purge''s runs, '
    'oldest created first, and the oldest kept (0033)');
SELECT is(pg_temp.indexdef('engine_run_live_created'),
    'CREATE INDEX engine_run_live_created ON flowforge.engine_run USING btree (organization_id, created_at) WHERE (ended_at IS NULL)',
    'engine_run_live_created: (organization_id, created_at) partial on live runs — the oldest live run, for purge (0033)');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relname IN ('engine_run_ended_created', 'engine_run_live_created')
             AND i.indisvalid AND i.indisready), 2,
          'the two indexes 0033 builds CONCURRENTLY are valid and ready');
-- Each partition has each of its parent's indexes, attached to it, named after it with the partition's suffix
-- (EXPLAIN names them: idx_event_taskrun_created_p202612), and commented like it.
SELECT is_empty(
    $$SELECT pi.relname::text || ' of ' || part.relname::text
      FROM pg_inherits ti
      JOIN pg_class part ON part.oid = ti.inhrelid
      JOIN pg_index px ON px.indrelid = ti.inhparent
      JOIN pg_class pi ON pi.oid = px.indexrelid
      WHERE ti.inhparent IN ('flowforge.task_run_event'::regclass, 'flowforge.audit_log'::regclass,
                             'flowforge.trigger_firing'::regclass)
        AND NOT EXISTS (
            SELECT 1 FROM pg_inherits ii JOIN pg_class ci ON ci.oid = ii.inhrelid JOIN pg_index cx ON cx.indexrelid = ci.oid
            WHERE ii.inhparent = pi.oid AND cx.indrelid = part.oid
              AND ci.relname = pi.relname || substring(part.relname FROM '(_p[0-9]{6}|_default)$')
              AND obj_description(ci.oid, 'pg_class') = obj_description(pi.oid, 'pg_class'))$$,
    'every partition of the history carries every index of its table, named <index>_<pYYYYMM|default>, with its comment');
-- 0038: the /metrics windows (flowforge serve)
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.indexdef('idx_event_retries'),
    'CREATE INDEX idx_event_retries ON ONLY flowforge.task_run_event USING btree (created_at) INCLUDE (organization_id) WHERE ((kind)::text = ''retry_scheduled''::text)',
    'idx_event_retries: (created_at) INCLUDE (organization_id) partial on retry_scheduled — the retries of a scrape window');
SELECT is(pg_temp.indexdef('trigger_firing_recorded'),
    'CREATE INDEX trigger_firing_recorded ON ONLY flowforge.trigger_firing USING btree (recorded_at) INCLUDE (organization_id, outcome)',
    'trigger_firing_recorded: (recorded_at) INCLUDE (organization_id, outcome) — the firings of a scrape window by outcome');
SELECT is((SELECT count(*)::int FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           WHERE c.relnamespace = 'flowforge'::regnamespace
             AND c.relname IN ('idx_event_retries', 'trigger_firing_recorded') AND i.indisvalid AND i.indisready), 2,
          'the two indexes of 0038 are valid and ready (built and attached on every partition)');

-- ---------------------------------------------------------------------------
-- Every index says which query it serves (COMMENT ON INDEX, 0026): the text
-- index_usage shows beside idx_scan. A new index without one fails here.
-- ---------------------------------------------------------------------------
SELECT is_empty(
    $$SELECT t.relname || '.' || i.relname FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      WHERE t.relnamespace = 'flowforge'::regnamespace
        AND coalesce(length(btrim(obj_description(i.oid, 'pg_class'))), 0) < 10$$,
    'every flowforge index has a comment naming the query it serves (COMMENT ON INDEX; docs/data-model.md)');

-- ---------------------------------------------------------------------------
-- Exactly these indexes per table
-- ---------------------------------------------------------------------------
SELECT indexes_are('flowforge', 'organization', ARRAY['organization_pkey', 'uniq_organization_slug']);
SELECT indexes_are('flowforge', 'membership', ARRAY['membership_pkey', 'uniq_membership_org_member', 'idx_membership_member']);
SELECT indexes_are('flowforge', 'api_key', ARRAY['api_key_pkey', 'uniq_api_key_prefix']);
SELECT indexes_are('flowforge', 'audit_log', ARRAY['audit_log_pkey', 'idx_audit_org_created', 'idx_audit_org_entity']);
SELECT indexes_are('flowforge', 'workflow', ARRAY['workflow_pkey', 'uniq_workflow_name_version', 'workflow_latest_uq',
                                                 'workflow_tenant_latest_created']);
SELECT indexes_are('flowforge', 'task', ARRAY['task_pkey', 'uniq_task_workflow_key']);
SELECT indexes_are('flowforge', 'task_dependency', ARRAY['task_dependency_pkey', 'idx_taskdep_depends_on', 'idx_taskdep_workflow']);
SELECT indexes_are('flowforge', 'scheduled_trigger', ARRAY['scheduled_trigger_pkey', 'scheduled_trigger_live_name_uq', 'idx_trigger_due',
                                                          'scheduled_trigger_tenant_created']);
SELECT indexes_are('flowforge', 'workflow_run', ARRAY[
    'workflow_run_pkey', 'idx_wfrun_wf_recent', 'idx_wfrun_state_age', 'idx_wfrun_org_recent']);
SELECT indexes_are('flowforge', 'task_run', ARRAY[
    'task_run_pkey', 'uniq_taskrun_per_run_task', 'idx_taskrun_state_age', 'idx_taskrun_run_state',
    'idx_taskrun_lease_expiry', 'idx_taskrun_task', 'idx_taskrun_ready_by_name', 'idx_taskrun_fanout_ready',
    'idx_taskrun_flow_lane']);
SELECT indexes_are('flowforge', 'idempotency_key', ARRAY['idempotency_key_pkey', 'idx_idempotency_run']);
SELECT indexes_are('flowforge', 'outbox_message', ARRAY[
    'outbox_message_pkey', 'uniq_outbox_per_taskrun_generation', 'idx_outbox_pending', 'idx_outbox_run']);
SELECT indexes_are('flowforge', 'task_run_event', ARRAY[
    'task_run_event_pkey', 'idx_event_taskrun_created', 'idx_event_run_level', 'idx_event_work_item',
    'idx_event_throughput', 'idx_event_retries']);
SELECT indexes_are('flowforge', 'queue', ARRAY['queue_pkey', 'idx_queue_push', 'queue_flow_idx']);
SELECT indexes_are('flowforge', 'api_key_usage', ARRAY['api_key_usage_pkey']);
SELECT indexes_are('flowforge', 'server_secret', ARRAY['server_secret_pkey']);
SELECT indexes_are('flowforge', 'setting', ARRAY['setting_pkey']);
SELECT indexes_are('flowforge', 'engine_run', ARRAY[
    'engine_run_pkey', 'engine_run_tenant_run_uq', 'engine_run_tenant_created', 'engine_run_run_idx',
    'engine_run_definition_recent', 'engine_run_triggered_by', 'engine_run_tenant_creator_created',
    'engine_run_tenant_definition_created', 'engine_run_tenant_trigger_created',
    'engine_run_ended_created', 'engine_run_live_created']);
SELECT indexes_are('flowforge', 'work_item', ARRAY[
    'work_item_pkey', 'work_item_status_priority_idx', 'work_item_ready_by_name_idx', 'work_item_lease_idx',
    'work_item_run_idx', 'work_item_parent_idx', 'work_item_task_idx', 'work_item_checkpoint_item_idx',
    'work_item_checkpoint_live_uq', 'work_item_checkpoint_done_uq', 'work_item_flow_lane_idx']);
SELECT indexes_are('flowforge', 'agent', ARRAY['agent_pkey', 'agent_name_key', 'agent_live_idx']);
SELECT indexes_are('flowforge', 'affinity_binding', ARRAY['affinity_binding_pkey', 'affinity_binding_key_uq', 'affinity_binding_agent_idx']);
SELECT indexes_are('flowforge', 'engine', ARRAY['engine_pkey', 'engine_tenant_engine_uq', 'engine_one_serving_per_org', 'engine_engine_idx']);
SELECT indexes_are('flowforge', 'graph_run', ARRAY['graph_run_pkey', 'graph_run_runid_uq', 'graph_run_live_age']);
SELECT indexes_are('flowforge', 'graph_step', ARRAY['graph_step_pkey']);
SELECT indexes_are('flowforge', 'graph_visit', ARRAY['graph_visit_pkey']);
SELECT indexes_are('flowforge', 'graph_edge', ARRAY['graph_edge_pkey', 'idx_graph_edge_workflow']);
SELECT indexes_are('flowforge', 'machine_run', ARRAY['machine_run_pkey', 'machine_run_runid_uq', 'machine_run_live_age']);
SELECT indexes_are('flowforge', 'machine_transition', ARRAY['machine_transition_pkey']);
SELECT indexes_are('flowforge', 'machine_event_queue', ARRAY['machine_event_queue_pkey']);
SELECT indexes_are('flowforge', 'machine_event_seen', ARRAY['machine_event_seen_pkey']);
SELECT indexes_are('flowforge', 'machine_timer', ARRAY['machine_timer_pkey', 'machine_timer_one_per_entry', 'machine_timer_due_idx']);
SELECT indexes_are('flowforge', 'checkpoint', ARRAY['checkpoint_pkey', 'checkpoint_run_node_uq']);
SELECT indexes_are('flowforge', 'checkpoint_page', ARRAY['checkpoint_page_pkey']);
SELECT indexes_are('flowforge', 'trigger_secret', ARRAY['trigger_secret_pkey']);
SELECT indexes_are('flowforge', 'flow_lane', ARRAY['flow_lane_pkey', 'flow_lane_identity_uq']);
SELECT indexes_are('flowforge', 'flow_slot', ARRAY['flow_slot_pkey']);
SELECT indexes_are('flowforge', 'flow_bucket', ARRAY['flow_bucket_pkey']);
SELECT indexes_are('flowforge', 'flow_fair', ARRAY['flow_fair_pkey']);
SELECT indexes_are('flowforge', 'trigger_firing', ARRAY[
    'trigger_firing_pkey', 'trigger_firing_tenant_fired', 'trigger_firing_tenant_trigger', 'trigger_firing_run',
    'trigger_firing_caused_nothing', 'trigger_firing_tenant_recorded',
    'trigger_firing_recorded']);
SELECT indexes_are('flowforge', 'trigger_delivery', ARRAY['trigger_firing_delivery_uq', 'trigger_delivery_recorded']);

-- ---------------------------------------------------------------------------
-- The indexes serve their queries. With sequential and bitmap scans priced
-- out, the planner must find an index whose shape fits: the plan names the
-- index and has no Sort node (the index delivers the order).
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.plan_of(p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_line text;
    v_plan text := '';
BEGIN
    FOR v_line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || p_sql LOOP
        v_plan := v_plan || v_line || E'\n';
    END LOOP;
    RETURN v_plan;
END;
$$;

-- A few rows so the statistics are not empty.
SELECT isnt(flowforge_test.define_diamond('ix_diamond'), NULL, 'fixture: ix_diamond defined');
SELECT is((SELECT count(DISTINCT r)::int FROM (SELECT flowforge.start_run('ix_diamond') AS r FROM generate_series(1, 20)) s),
          20, 'fixture: 20 runs started');
ANALYZE flowforge.task_run;
ANALYZE flowforge.workflow_run;
ANALYZE flowforge.outbox_message;
-- Graph runs: items pending and dispatched, directory rows of both engines.
SELECT isnt(flowforge_test.define_graph_single('ix_graph'), NULL, 'fixture: ix_graph defined');
SELECT is((SELECT count(DISTINCT r)::int FROM (SELECT flowforge.start_run('ix_graph') AS r FROM generate_series(1, 20)) s),
          20, 'fixture: 20 graph runs started');
SELECT is((SELECT count(*)::int FROM flowforge.claim_work(ARRAY['default'], 'ix-agent', '30 seconds', 5)), 5,
          'fixture: 5 work items dispatched');
ANALYZE flowforge.task_run_event;
ANALYZE flowforge.work_item;
ANALYZE flowforge.engine_run;
ANALYZE flowforge.audit_log;

-- The timer duty (_fire_machine_timers) on a table of many timers, most not
-- yet due, with the planner left free: 20 machine runs waiting, 10,000 timers
-- of which 2,000 are due. tick runs the duty with plan_cache_mode =
-- force_generic_plan, so its plan is the generic one (parameters, not values).
SELECT isnt(flowforge.define_workflow($${"name": "ix_machine", "kind": "statemachine", "initial": "waiting",
    "states": {"waiting": {"on": {"go": "done"}, "after": [{"delay": "1 hour", "target": "done"}]},
               "done": {"final": true}}}$$), NULL, 'fixture: ix_machine defined');
SELECT is((SELECT count(DISTINCT r)::int FROM (SELECT flowforge.start_run('ix_machine') AS r FROM generate_series(1, 20)) s),
          20, 'fixture: 20 machine runs started, each waiting with its timer');
INSERT INTO flowforge.machine_timer (organization_id, run_id, entered, position, target, delay, fire_at)
SELECT m.organization_id, m.run_id, 1000 + g, 1, 'done', interval '1 hour', now() + (g - 100) * interval '1 minute'
FROM flowforge.machine_run m CROSS JOIN generate_series(1, 500) g;
SELECT is((SELECT count(*) FILTER (WHERE fire_at <= now())::int FROM flowforge.machine_timer), 2000,
          'fixture: 10,020 timers, 2,000 of them due');
ANALYZE flowforge.machine_timer;
ANALYZE flowforge.machine_run;
ANALYZE flowforge.machine_transition;
PREPARE ix_due_timers(uuid[], integer, timestamptz) AS
    SELECT t.id FROM flowforge.machine_timer t
    WHERE t.fire_at <= $3 AND ($1 IS NULL OR t.organization_id = ANY ($1))
    ORDER BY t.fire_at
    LIMIT $2;
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_due_timers(NULL, 1000, now())$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using machine_timer_due_idx',
    'the timer duty''s due timers (generic plan, as tick runs it) are an ordered range scan of machine_timer_due_idx, no sort');
SELECT matches(pg_temp.plan_of($$EXECUTE ix_due_timers(ARRAY['00000000-0000-0000-0000-000000000001']::uuid[], 1000, now())$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using machine_timer_due_idx',
    'the timer duty of the organizations a daemon serves reads machine_timer_due_idx too, no sort');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_due_timers;
SELECT matches(pg_temp.plan_of($$
    SELECT t.id FROM flowforge.machine_timer t
    WHERE t.fire_at <= now() AND (NULL::uuid[] IS NULL OR t.organization_id = ANY (NULL::uuid[]))
    ORDER BY t.fire_at LIMIT 1000$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using machine_timer_due_idx',
    'the timer duty''s due timers (custom plan) are an ordered range scan of machine_timer_due_idx, no sort');

-- Fan-out's lookups with the planner free, generic plans as PL/pgSQL caches
-- them and custom ones: five 200-element maps, 250 children completed and
-- 250 pending, beside the 20 DAG runs' ready tasks above.
SELECT isnt(flowforge.define_workflow($${"name": "ix_fanout", "tasks": [
    {"key": "m", "queue": "ix-fan", "map": {"over": "$.run.n", "max_concurrency": 50}}]}$$), NULL, 'fixture: ix_fanout defined');
SELECT is((SELECT count(DISTINCT r)::int FROM (SELECT flowforge.start_run('ix_fanout', jsonb_build_object('n',
              (SELECT jsonb_agg(i) FROM generate_series(1, 200) i))) AS r FROM generate_series(1, 5)) s),
          5, 'fixture: 5 map runs started, 50 children each');
SELECT is((SELECT count(*)::int FROM (SELECT flowforge.complete_work(c.work_item_id, c.fencing_token, '1')
                                      FROM flowforge.claim_work(ARRAY['ix-fan'], 'ix-agent', '30 seconds', 1000) c) x),
          250, 'fixture: 250 children completed, each dispatching the next');
ANALYZE flowforge.work_item;
ANALYZE flowforge.task_run;
ANALYZE flowforge.checkpoint;
ANALYZE flowforge.checkpoint_page;
SELECT c.id AS ix_cp, c.run_id AS ix_cp_run FROM flowforge.checkpoint c JOIN flowforge.workflow_run r ON r.id = c.run_id
JOIN flowforge.workflow w ON w.id = r.workflow_id WHERE w.name = 'ix_fanout' LIMIT 1 \gset
-- _fanout_progress: "did this element already succeed?" (resume skips it).
PREPARE ix_skip(uuid, integer, bigint) AS
    SELECT 1 FROM flowforge.work_item w
    WHERE w.checkpoint_id = $1 AND w.checkpoint_generation = $2 AND w.item_index = $3 AND w.status = 'completed';
-- _fanout_finish: the outputs in element order.
PREPARE ix_collect(uuid, integer, bigint) AS
    SELECT coalesce(jsonb_agg(w.output ORDER BY g.i), '[]') FROM generate_series(0, $3 - 1) AS g(i)
    LEFT JOIN flowforge.work_item w ON w.checkpoint_id = $1 AND w.checkpoint_generation = $2 AND w.item_index = g.i
                                   AND w.status = 'completed';
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_skip(%L, 1, 7)', :'ix_cp')),
    '^(?!.*Seq Scan)(?!.*Sort\n).*Index (Only )?Scan using work_item_checkpoint_done_uq',
    'the resume''s "already succeeded?" lookup (generic plan) is one key lookup in work_item_checkpoint_done_uq');
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_collect(%L, 1, 200)', :'ix_cp')),
    '^(?!.*Seq Scan on work_item).*work_item_checkpoint_done_uq',
    '_fanout_finish''s collection in element order (generic plan) reads the completed children from work_item_checkpoint_done_uq');
SET LOCAL plan_cache_mode = force_custom_plan;
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_skip(%L, 1, 7)', :'ix_cp')),
    '^(?!.*Seq Scan)(?!.*Sort\n).*Index (Only )?Scan using work_item_checkpoint_done_uq',
    'the resume''s lookup (custom plan) reads work_item_checkpoint_done_uq');
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_collect(%L, 1, 200)', :'ix_cp')),
    '^(?!.*Seq Scan on work_item).*work_item_checkpoint_done_uq',
    'the collection (custom plan) reads work_item_checkpoint_done_uq');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_skip;
DEALLOCATE ix_collect;

-- Triggers (0022/0023), with the planner free on tables of enough rows:
-- 2,000 cron triggers of which 50 are due beside 500 webhooks; 5,000 firings
-- of 40 triggers, one in fifty refused; 5,000 directory rows, two in three
-- caused by one of 40 triggers.
SELECT isnt(flowforge_test.define_single('ix_trig'), NULL, 'fixture: ix_trig defined');
INSERT INTO flowforge.scheduled_trigger (organization_id, name, trigger_type, action, target, cron, next_fire_at, created_by)
SELECT '00000000-0000-0000-0000-000000000001', 'ix-cron-' || g, 'cron', 'start', 'ix_trig', '* * * * *',
       now() + (g - 50) * interval '1 minute', 'test'
FROM generate_series(1, 2000) g;
INSERT INTO flowforge.scheduled_trigger (organization_id, name, trigger_type, action, target, created_by)
SELECT '00000000-0000-0000-0000-000000000001', 'ix-hook-' || g, 'webhook', 'start', 'ix_trig', 'test' FROM generate_series(1, 500) g;
INSERT INTO flowforge.trigger_firing (organization_id, trigger_name, trigger_type, outcome, run_id, error, fired_on, recorded_at,
                                      created_by)
SELECT '00000000-0000-0000-0000-000000000001', 'ix-hook-' || (g % 40), 'webhook',
       CASE WHEN g % 50 = 0 THEN 'refused' ELSE 'started' END, CASE WHEN g % 50 = 0 THEN NULL ELSE gen_random_uuid() END,
       CASE WHEN g % 50 = 0 THEN 'no trigger named it' END, now() - g * interval '1 minute',
       -- recorded in every partition (0032): this month, the three made ahead and, four months on, the DEFAULT one
       now() + (g % 5) * interval '1 month', 'test'
FROM generate_series(1, 5000) g;
INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
SELECT f.organization_id, gen_random_uuid(), 'push-' || row_number() OVER (), f.id, f.recorded_at FROM flowforge.trigger_firing f;
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, triggered_by, created_at, created_by,
                                  ended_at)
SELECT '00000000-0000-0000-0000-000000000001', gen_random_uuid(), 'dag', (SELECT id FROM flowforge.workflow WHERE name = 'ix_trig'),
       CASE WHEN g % 3 = 0 THEN NULL ELSE 'ix-hook-' || (g % 40) END, now() - g * interval '1 second', 'test',
       CASE WHEN g % 10 <> 0 THEN now() - g * interval '1 second' + interval '1 second' END  -- nine in ten ended
FROM generate_series(1, 5000) g;
SELECT results_eq(
    $$SELECT (SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE enabled AND next_fire_at <= now()),
             (SELECT count(*)::int FROM flowforge.trigger_firing WHERE outcome = 'refused'),
             (SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'ix-hook-7')$$,
    $$VALUES (50, 100, 84)$$, 'fixture: 50 due cron triggers, 100 refused firings, 84 runs caused by ix-hook-7');
ANALYZE flowforge.scheduled_trigger;
ANALYZE flowforge.trigger_firing;
ANALYZE flowforge.trigger_delivery;
ANALYZE flowforge.engine_run;
-- _fire_cron_triggers: the due triggers, oldest first; tick runs it as a generic plan.
PREPARE ix_due_triggers(uuid[], integer, timestamptz) AS
    SELECT t.id FROM flowforge.scheduled_trigger t
    WHERE t.enabled AND t.next_fire_at <= $3 AND ($1 IS NULL OR t.organization_id = ANY ($1))
    ORDER BY t.next_fire_at
    LIMIT $2;
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_due_triggers(NULL, 100, now())$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using idx_trigger_due',
    'the cron duty''s due triggers (generic plan, as tick runs it) are an ordered range scan of idx_trigger_due, no sort');
SELECT matches(pg_temp.plan_of($$EXECUTE ix_due_triggers(ARRAY['00000000-0000-0000-0000-000000000001']::uuid[], 100, now())$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using idx_trigger_due',
    'the cron duty of the organizations a daemon serves reads idx_trigger_due too');
SET LOCAL plan_cache_mode = force_custom_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_due_triggers(NULL, 100, now())$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using idx_trigger_due', 'and as a custom plan');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_due_triggers;
-- list_firings' query (custom plans: PL/pgSQL's RETURN QUERY plans it with the values of each call).
PREPARE ix_list_firings(uuid, text, text, integer) AS
    SELECT f.id, w.name FROM flowforge.trigger_firing f LEFT JOIN flowforge.workflow w ON w.id = f.definition_id
    WHERE f.organization_id = $1 AND ($2 IS NULL OR f.trigger_name = $2) AND ($3 IS NULL OR f.outcome = $3)
    ORDER BY f.fired_on DESC, f.id DESC
    LIMIT $4;
SET LOCAL plan_cache_mode = force_custom_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_list_firings('00000000-0000-0000-0000-000000000001', NULL, NULL, 50)$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using trigger_firing_tenant_fired',
    'list_firings(): what fired here lately is an ordered scan of trigger_firing_tenant_fired, no sort');
SELECT matches(pg_temp.plan_of($$EXECUTE ix_list_firings('00000000-0000-0000-0000-000000000001', 'ix-hook-7', NULL, 50)$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using trigger_firing_tenant_trigger',
    'list_firings(trigger_name): one trigger''s firings are an ordered scan of trigger_firing_tenant_trigger, no sort');
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_list_firings('00000000-0000-0000-0000-000000000001', NULL, NULL, 50)$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using trigger_firing_tenant_fired',
    'list_firings() as a generic plan reads trigger_firing_tenant_fired too');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_list_firings;
-- list_runs' filters, each an ordered range of its own index (the shape of the function's query; the 1M-row
-- EXPLAIN of the function itself is tests/py/test_listing_explain.py): the 5,000 directory rows above are the
-- fixture's ('test'), the 60 runs started before are postgres's; 84 were started by ix-hook-7; 20 ran ix_diamond.
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND created_by = 'postgres' ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index Scan using engine_run_tenant_creator_created',
    'a member''s own runs (created_by = the caller) are an ordered range of engine_run_tenant_creator_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND definition_name = 'ix_diamond' ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index Scan using engine_run_tenant_definition_created',
    'one workflow''s runs of every version are an ordered range of engine_run_tenant_definition_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND triggered_by = 'ix-hook-7' ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index Scan using engine_run_tenant_trigger_created',
    'the runs one trigger started are an ordered range of engine_run_tenant_trigger_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND (created_at, id) < (now() - interval '1 hour', '00000000-0000-0000-0000-000000000000')
    ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index Cond: .*ROW\(created_at, id\) < ROW',
    'a page after a cursor starts inside engine_run_tenant_created: the cursor is an index condition, no sort, no offset');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.workflow WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND superseded_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index (Only )?Scan using workflow_tenant_latest_created',
    'list_workflows: each name''s latest version, newest first, reads workflow_tenant_latest_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.scheduled_trigger WHERE organization_id = '00000000-0000-0000-0000-000000000001'
    ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index (Only )?Scan using scheduled_trigger_tenant_created',
    'list_triggers: the newest triggers read scheduled_trigger_tenant_created, no sort');
-- The seed's two tracing queries (tests/sql/70_maintenance/cron_triggers.sql runs them for their rows).
-- Query 1 joins within the tenant (0032: a firing's key is (organization_id, id, recorded_at); the seed's own rule:
-- an id alone is not a key).
SELECT matches(pg_temp.plan_of($$SELECT r.run_id, r.engine_kind, r.definition_id, f.outcome, f.payload FROM flowforge.engine_run r JOIN flowforge.trigger_firing f ON f.organization_id = r.organization_id AND f.id = r.trigger_firing_id WHERE r.triggered_by = 'on-push' ORDER BY r.created_at DESC$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using engine_run_triggered_by.*trigger_firing_pkey',
    'tracing query 1: the runs a trigger caused read engine_run_triggered_by in order, each firing by trigger_firing_pkey');
SELECT matches(pg_temp.plan_of($$SELECT trigger_name, outcome, error, fired_on FROM flowforge.trigger_firing WHERE outcome IN ('refused', 'failed') ORDER BY fired_on DESC LIMIT 50$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan using trigger_firing_caused_nothing',
    'tracing query 2: the firings that caused nothing are an ordered scan of trigger_firing_caused_nothing, no sort');
SELECT matches(pg_temp.plan_of($$SELECT id FROM flowforge.trigger_firing WHERE run_id = '00000000-0000-0000-0000-000000000000'$$),
    'Index Scan using trigger_firing_run', 'the reverse walk (which firing moved this run) reads trigger_firing_run');
SELECT matches(pg_temp.plan_of($$SELECT 1 FROM flowforge.trigger_delivery k
                                 WHERE k.organization_id = '00000000-0000-0000-0000-000000000001'
                                   AND k.trigger_id = '00000000-0000-0000-0000-000000000000' AND k.delivery_id = 'push-1'$$),
    'Index (Only )?Scan using trigger_firing_delivery_uq', '"this delivery fired already?" is one key lookup in trigger_firing_delivery_uq');
SELECT matches(pg_temp.plan_of($$SELECT f.outcome FROM flowforge.trigger_delivery k
                                 JOIN flowforge.trigger_firing f
                                   ON f.organization_id = k.organization_id AND f.id = k.firing_id AND f.recorded_at = k.recorded_at
                                 WHERE k.organization_id = '00000000-0000-0000-0000-000000000001'
                                   AND k.trigger_id = '00000000-0000-0000-0000-000000000000' AND k.delivery_id = 'push-1'$$),
    '^(?!.*Seq Scan).*trigger_firing_delivery_uq.*Index Scan using trigger_firing_pkey',
    'a replay''s first firing (_delivered_firing): its key, then the firing by its whole primary key');
SELECT matches(pg_temp.plan_of($$SELECT id FROM flowforge.scheduled_trigger
                                 WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND name = 'ix-hook-7' AND deleted_at IS NULL$$),
    'Index Scan using scheduled_trigger_live_name_uq', 'a live trigger by name reads scheduled_trigger_live_name_uq');

SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;

SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.task_run
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND state = 'ready' AND queue = 'default'
      AND ready_at <= now()
    ORDER BY priority, ready_at LIMIT 10 FOR UPDATE SKIP LOCKED$$),
    '^(?!.*Sort\n).*Index Scan using idx_taskrun_state_age', 'the claim query (lower priority first) is an ordered scan of idx_taskrun_state_age, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.task_run WHERE state = 'running' AND lease_expires_at < now()
    ORDER BY lease_expires_at LIMIT 1000$$),
    '^(?!.*Sort\n).*Index Scan using idx_taskrun_lease_expiry', 'the reaper query is an ordered scan of idx_taskrun_lease_expiry');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.outbox_message WHERE published_at IS NULL AND next_attempt_at <= now()
    ORDER BY next_attempt_at LIMIT 100 FOR UPDATE SKIP LOCKED$$),
    '^(?!.*Sort\n).*Index Scan using idx_outbox_pending', 'the outbox drain is an ordered range scan of idx_outbox_pending');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.task_run
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND state = 'ready' AND queue = 'default'
      AND task_key = 'a' AND ready_at <= now()
    ORDER BY priority, ready_at LIMIT 10 FOR UPDATE SKIP LOCKED$$),
    '^(?!.*Sort\n).*Index Scan using idx_taskrun_ready_by_name', 'a claim of one task name is an ordered scan of idx_taskrun_ready_by_name');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.audit_log
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND entity = 'workflow_run' AND entity_id = 'x'
    ORDER BY created_at DESC LIMIT 50$$),
    '^(?!.*Sort\n).*Index Scan using idx_audit_org_entity', 'who did what to an entity reads idx_audit_org_entity, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.workflow_run
    WHERE id BETWEEN '1a2b0000-0000-0000-0000-000000000000' AND '1a2bffff-ffff-ffff-ffff-ffffffffffff'$$),
    'Index (Only )?Scan using workflow_run_pkey', 'a run id prefix is a range of workflow_run_pkey (resolve_run_id)');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.workflow_run WHERE workflow_id = '00000000-0000-0000-0000-000000000000'
    ORDER BY created_at DESC LIMIT 50$$),
    '^(?!.*Sort\n).*Index Scan using idx_wfrun_wf_recent', 'the last N runs of a workflow read idx_wfrun_wf_recent, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.workflow_run WHERE state = 'running' AND created_at < now() - interval '1 hour'$$),
    'Index Scan using idx_wfrun_state_age', 'the stuck-run sweep reads idx_wfrun_state_age');
SELECT matches(pg_temp.plan_of($$
    SELECT state, count(*) FROM flowforge.task_run WHERE workflow_run_id = '00000000-0000-0000-0000-000000000000'
    GROUP BY state$$),
    'Index (Only )?Scan using idx_taskrun_run_state', 'run progress reads idx_taskrun_run_state');
SELECT matches(pg_temp.plan_of($$
    SELECT kind FROM flowforge.task_run_event WHERE task_run_id = '00000000-0000-0000-0000-000000000000'
    ORDER BY created_at$$),
    '^(?!.*Sort\n).*Index Scan using idx_event_taskrun_created', 'a task run''s events read idx_event_taskrun_created, no sort');

-- The substrate's load-bearing indexes: the query shapes of claim_work, the
-- work-item reaper and list_runs.
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.work_item
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND status = 'pending' AND queue = 'default'
      AND next_attempt_at <= now()
    ORDER BY priority, next_attempt_at LIMIT 10 FOR UPDATE SKIP LOCKED$$),
    '^(?!.*Sort\n).*Index Scan using work_item_status_priority_idx',
    'claim_work''s pick (lower priority first, then oldest) is an ordered scan of work_item_status_priority_idx, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.work_item
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND status = 'pending' AND queue = 'default'
      AND task_name = 'work' AND next_attempt_at <= now()
    ORDER BY priority, next_attempt_at LIMIT 10 FOR UPDATE SKIP LOCKED$$),
    '^(?!.*Sort\n).*Index Scan using work_item_ready_by_name_idx',
    'claim_work of one task name is an ordered scan of work_item_ready_by_name_idx, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.work_item WHERE status = 'dispatched' AND lease_expires_at < now()
    ORDER BY lease_expires_at LIMIT 1000$$),
    '^(?!.*Sort\n).*Index Scan using work_item_lease_idx', 'the work-item reaper is an ordered scan of work_item_lease_idx, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE organization_id = '00000000-0000-0000-0000-000000000001'
    ORDER BY created_at DESC, id DESC LIMIT 10$$),
    '^(?!.*Sort\n).*Index Scan using engine_run_tenant_created',
    'an organization''s newest runs of every engine read engine_run_tenant_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run WHERE definition_id = '00000000-0000-0000-0000-000000000000'
    ORDER BY created_at DESC, id DESC LIMIT 50$$),
    '^(?!.*Sort\n).*Index Scan using engine_run_definition_recent',
    'the last N runs of a workflow version read engine_run_definition_recent, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT organization_id FROM flowforge.engine_run WHERE run_id = '00000000-0000-0000-0000-000000000000'$$),
    'Index (Only )?Scan using engine_run_run_idx', 'a run id alone (the operator''s read path) reads engine_run_run_idx');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.engine_run
    WHERE run_id BETWEEN '1a2b0000-0000-0000-0000-000000000000' AND '1a2bffff-ffff-ffff-ffff-ffffffffffff'$$),
    'Index (Only )?Scan using engine_run_run_idx', 'a run id prefix is a range of engine_run_run_idx (resolve_run_id)');
SELECT matches(pg_temp.plan_of($$
    SELECT id FROM flowforge.work_item
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND run_id = '00000000-0000-0000-0000-000000000000'
      AND status IN ('pending', 'dispatched')$$),
    'Index Scan using work_item_run_idx', 'a run''s outstanding items (cancel_run) read work_item_run_idx');
SELECT matches(pg_temp.plan_of($$
    SELECT kind FROM flowforge.task_run_event WHERE work_item_id = '00000000-0000-0000-0000-000000000000'
    ORDER BY created_at$$),
    '^(?!.*Sort\n).*Index Scan using idx_event_work_item', 'a work item''s events read idx_event_work_item, no sort');

-- purge's reads (0032/0033): its runs in creation order, the oldest it keeps (live; ended after the cutoff,
-- index-only), their events by task run and by run, firings and audit rows past their retention.
SELECT matches(pg_temp.plan_of($$
    SELECT e.run_id FROM flowforge.engine_run e
    WHERE e.organization_id = '00000000-0000-0000-0000-000000000001' AND e.ended_at < now() - interval '30 days'
      AND e.created_at < now() - interval '30 days'
    ORDER BY e.created_at LIMIT 1000$$),
    '^(?!.*Sort\n).*Index Scan using engine_run_ended_created', 'purge''s runs, oldest created first, read engine_run_ended_created, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT e.created_at FROM flowforge.engine_run e
    WHERE e.organization_id = '00000000-0000-0000-0000-000000000001' AND e.ended_at IS NULL ORDER BY e.created_at LIMIT 1$$),
    'Index (Only )?Scan using engine_run_live_created', 'the oldest live run is one step into engine_run_live_created');
SELECT matches(pg_temp.plan_of($$
    SELECT e.created_at FROM flowforge.engine_run e
    WHERE e.organization_id = '00000000-0000-0000-0000-000000000001' AND e.ended_at >= now() - interval '30 days'
    ORDER BY e.created_at LIMIT 1$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index (Only )?Scan( Backward)? using engine_run_(ended_created|tenant_created)',
    'the oldest run that ended after the cutoff is an ordered index scan in creation order, no sort: '
    'engine_run_ended_created (index-only once vacuumed: ended_at is included) or, while few runs have ended long '
    'ago, engine_run_tenant_created backwards');
SELECT matches(pg_temp.plan_of($$
    SELECT f.id FROM flowforge.trigger_firing f
    WHERE f.organization_id = '00000000-0000-0000-0000-000000000001' AND f.recorded_at < now() - interval '30 days'
    ORDER BY f.recorded_at LIMIT 1000$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index (Only )?Scan using trigger_firing_(tenant_)?recorded',
    'firings past their retention, oldest first, are an ordered range in recorded_at, no sort: '
    'trigger_firing_tenant_recorded or, with one organization in the fixture, 0038''s trigger_firing_recorded '
    '(recorded_at) INCLUDE (organization_id, ...), which the planner may equally take');
SELECT matches(pg_temp.plan_of($$
    SELECT a.id FROM flowforge.audit_log a
    WHERE a.organization_id = '00000000-0000-0000-0000-000000000001' AND a.created_at < now() - interval '30 days'
    ORDER BY a.created_at LIMIT 1000$$),
    '^(?!.*Sort\n)(?!.*Seq Scan).*Index Scan Backward using idx_audit_org_created',
    'audit rows past their retention, oldest first, are a backward scan of idx_audit_org_created');
SELECT matches(pg_temp.plan_of($$
    DELETE FROM flowforge.task_run_event e WHERE e.task_run_id = ANY (ARRAY['00000000-0000-0000-0000-000000000000'::uuid])$$),
    '^(?!.*Seq Scan).*Index Scan using idx_event_taskrun_created', 'purge deletes a task run''s events through idx_event_taskrun_created');
SELECT matches(pg_temp.plan_of($$
    DELETE FROM flowforge.task_run_event e
    WHERE e.workflow_run_id = ANY (ARRAY['00000000-0000-0000-0000-000000000000'::uuid]) AND e.task_run_id IS NULL$$),
    '^(?!.*Seq Scan).*Index Scan using idx_event_run_level', 'and a run''s own and its work items'' through idx_event_run_level');
SELECT matches(pg_temp.plan_of($$
    DELETE FROM flowforge.trigger_delivery k
    WHERE k.organization_id = '00000000-0000-0000-0000-000000000001' AND k.recorded_at >= now() - interval '60 days'
      AND k.recorded_at < now() - interval '30 days'$$),
    'Index Scan using trigger_delivery_recorded', 'a month''s delivery keys read trigger_delivery_recorded');

-- A realistic history before the windows' plans: thousands of events of
-- kinds the windows do not count (run_started, created), so that reading any
-- index but the partial idx_event_throughput costs what it would in
-- production (on a near-empty month partition every index looks free).
DO $$
BEGIN
    PERFORM flowforge.define_workflow('{"name": "ix_bulk", "tasks": [{"key": "t", "queue": "ix_bulk"}]}');
    PERFORM flowforge.start_run('ix_bulk') FROM generate_series(1, 3000);
END;
$$;
ANALYZE flowforge.task_run_event;
-- The inspection views' windows and sweeps (0027): the claims of the last
-- minute, the work finished in the last day, the stuck graph and machine runs.
SELECT matches(pg_temp.plan_of($$
    SELECT e.task_run_id, e.work_item_id FROM flowforge.task_run_event e
    WHERE e.kind = 'claimed' AND e.created_at > now() - interval '1 minute' AND e.created_at <= now()$$),
    'Index (Only )?Scan using idx_event_throughput', 'the claims of the last minute (queue_depth) read idx_event_throughput');
SELECT matches(pg_temp.plan_of($$
    SELECT e.organization_id, count(*) FROM flowforge.task_run_event e
    WHERE e.kind IN ('completed', 'failed', 'lease_expired', 'timed_out')
      AND e.created_at > now() - interval '1 day' AND e.created_at <= now()
      AND (e.kind IN ('completed', 'failed') OR e.to_state = 'failed')
    GROUP BY e.organization_id$$),
    'Index Only Scan using idx_event_throughput',
    'the work finished in the last day (tenant_usage) is an index-only scan of idx_event_throughput');
-- /metrics (0038): a scrape counts the window since the last one — the
-- retries scheduled and the trigger firings recorded in it — each one range
-- scan; the window's claims, completions and failures read idx_event_throughput.
SELECT matches(pg_temp.plan_of($$
    SELECT e.organization_id, count(*) FROM flowforge.task_run_event e
    WHERE e.kind = 'retry_scheduled' AND e.created_at > now() - interval '15 seconds' AND e.created_at <= now()
    GROUP BY e.organization_id$$),
    'Index Only Scan using idx_event_retries', 'the retries of a scrape window are an index-only scan of idx_event_retries');
SELECT matches(pg_temp.plan_of($$
    SELECT f.organization_id, f.outcome, count(*) FROM flowforge.trigger_firing f
    WHERE f.recorded_at > now() - interval '15 seconds' AND f.recorded_at <= now()
    GROUP BY f.organization_id, f.outcome$$),
    '^(?!.*Seq Scan).*Index (Only )?Scan using trigger_firing_(tenant_)?recorded.*\n.*Index Cond: .*recorded_at >',
    'the firings of a scrape window by outcome are a range of recorded_at: trigger_firing_recorded or, with one '
    'organization in the fixture, trigger_firing_tenant_recorded (organization_id, recorded_at), which the planner '
    'may equally take');
SELECT matches(pg_temp.plan_of($$
    SELECT e.task_run_id FROM flowforge.task_run_event e
    WHERE e.kind IN ('claimed', 'completed', 'failed', 'lease_expired', 'timed_out')
      AND e.created_at > now() - interval '15 seconds' AND e.created_at <= now()$$),
    'Index (Only )?Scan using idx_event_throughput', 'the claims, completions and failures of a scrape window read idx_event_throughput');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.graph_run WHERE status = 'running' AND created_at < now() - interval '1 hour'$$),
    'Index Scan using graph_run_live_age', 'the stuck-run sweep of graph runs reads graph_run_live_age');
SELECT matches(pg_temp.plan_of($$
    SELECT run_id FROM flowforge.machine_run WHERE status = 'running' AND created_at < now() - interval '1 hour'$$),
    'Index Scan using machine_run_live_age', 'the stuck-run sweep of machines reads machine_run_live_age');

-- Fan-out's other reads by key: _tasks_ready's probe for ready fanning tasks
-- (every time tasks become ready, so generic and custom), a checkpoint by its
-- node, a child's page, a fan-out's live children (cancel), its failed
-- elements (get_run).
PREPARE ix_fanning(uuid) AS
    SELECT 1 FROM flowforge.task_run tr WHERE tr.workflow_run_id = $1 AND tr.state = 'ready' AND tr.fans_out;
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_fanning(%L)', :'ix_cp_run')),
    'Index (Only )?Scan using idx_taskrun_fanout_ready',
    '_tasks_ready''s probe for ready fanning tasks (generic plan) reads idx_taskrun_fanout_ready');
SET LOCAL plan_cache_mode = force_custom_plan;
SELECT matches(pg_temp.plan_of(format('EXECUTE ix_fanning(%L)', :'ix_cp_run')),
    'Index (Only )?Scan using idx_taskrun_fanout_ready', 'the probe (custom plan) reads idx_taskrun_fanout_ready');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_fanning;
SELECT matches(pg_temp.plan_of(format($$
    SELECT id FROM flowforge.checkpoint WHERE organization_id = '00000000-0000-0000-0000-000000000001'
      AND run_id = %L AND node_name = 'm'$$, :'ix_cp_run')),
    'Index Scan using checkpoint_run_node_uq', 'a checkpoint by (run, node) reads checkpoint_run_node_uq');
SELECT matches(pg_temp.plan_of(format($$SELECT elements FROM flowforge.checkpoint_page WHERE checkpoint_id = %L AND page = 1$$, :'ix_cp')),
    'Index Scan using checkpoint_page_pkey', 'a child''s page is one key lookup in checkpoint_page_pkey');
SELECT matches(pg_temp.plan_of(format($$
    SELECT id FROM flowforge.work_item WHERE checkpoint_id = %L AND status IN ('pending', 'dispatched') FOR UPDATE$$, :'ix_cp')),
    'Index Scan using work_item_checkpoint_live_uq', 'a fan-out''s live children (_fanout_cancel_children) read work_item_checkpoint_live_uq');
SELECT matches(pg_temp.plan_of(format($$
    SELECT DISTINCT item_index FROM flowforge.work_item WHERE checkpoint_id = %L AND checkpoint_generation = 1 AND status = 'failed'
    ORDER BY item_index LIMIT 100$$, :'ix_cp')),
    '^(?!.*Sort\n).*Index Scan using work_item_checkpoint_item_idx',
    'a fan-out''s failed elements in order (_fanout_detail) are an ordered scan of work_item_checkpoint_item_idx, no sort');

-- The state-machine engine's reads by run: get_run's recent history, a
-- machine by run id, its queue, its seen ids, its timers.
SELECT matches(pg_temp.plan_of($$
    SELECT * FROM flowforge.machine_transition x
    WHERE x.run_id = '00000000-0000-0000-0000-000000000000' AND x.organization_id = '00000000-0000-0000-0000-000000000001'
    ORDER BY x.n DESC LIMIT 100$$),
    '^(?!.*Sort\n).*Index Scan Backward using machine_transition_pkey',
    'a run''s most recent history entries (get_run) are a backward scan of machine_transition_pkey, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT state FROM flowforge.machine_run
    WHERE organization_id = '00000000-0000-0000-0000-000000000001' AND run_id = '00000000-0000-0000-0000-000000000000'$$),
    'Index Scan using machine_run_runid_uq', 'a machine by its run id reads machine_run_runid_uq');
SELECT matches(pg_temp.plan_of($$
    SELECT event FROM flowforge.machine_event_queue WHERE run_id = '00000000-0000-0000-0000-000000000000'
    ORDER BY seq LIMIT 1$$),
    '^(?!.*Sort\n).*Index Scan using machine_event_queue_pkey', 'a run''s oldest queued event reads machine_event_queue_pkey, no sort');
SELECT matches(pg_temp.plan_of($$
    SELECT 1 FROM flowforge.machine_event_seen WHERE run_id = '00000000-0000-0000-0000-000000000000' AND event_id = 'e-1'$$),
    'Index (Only )?Scan using machine_event_seen_pkey', '"seen this event id?" is a key lookup in machine_event_seen_pkey');
SELECT matches(pg_temp.plan_of($$
    DELETE FROM flowforge.machine_timer t WHERE t.run_id = '00000000-0000-0000-0000-000000000000'$$),
    'Index Scan using machine_timer_one_per_entry', 'deleting a run''s timers (it left the state) reads machine_timer_one_per_entry');

-- Flow control's reads (0028, 0029), generic plans as PL/pgSQL caches them: the claim's
-- probe of the flow flag, the loose scan of a queue's lanes, a lane's first units in order.
SELECT isnt(flowforge.define_workflow($${"name": "ix_flow", "tasks": [
    {"key": "t", "queue": "ix-flow", "concurrency": {"key": "$.run.c", "max": 2}}]}$$), NULL, 'fixture: ix_flow defined');
SELECT is((SELECT count(DISTINCT r)::int FROM (SELECT flowforge.start_run('ix_flow', jsonb_build_object('c', g % 10)) AS r
                                              FROM generate_series(1, 200) g) s),
          200, 'fixture: 200 keyed runs started over 10 keys');
ANALYZE flowforge.task_run;
ANALYZE flowforge.queue;
PREPARE ix_flow_probe(uuid, text[]) AS
    SELECT 1 FROM flowforge.queue q WHERE q.organization_id = $1 AND q.name = ANY ($2) AND q.flow;
PREPARE ix_flow_next_lane(uuid, text, uuid) AS
    SELECT tr.flow_lane FROM flowforge.task_run tr
    WHERE tr.organization_id = $1 AND tr.queue = $2 AND tr.state = 'ready' AND tr.flow_lane IS NOT NULL AND tr.flow_lane > $3
    ORDER BY tr.flow_lane LIMIT 1;
PREPARE ix_flow_lane_head(uuid, text, uuid, integer) AS
    SELECT tr.id FROM flowforge.task_run tr
    WHERE tr.organization_id = $1 AND tr.queue = $2 AND tr.state = 'ready' AND tr.flow_lane IS NOT NULL
      AND tr.flow_lane = $3 AND tr.ready_at <= now()
    ORDER BY tr.priority, tr.ready_at LIMIT $4;
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT matches(pg_temp.plan_of($$EXECUTE ix_flow_probe('00000000-0000-0000-0000-000000000001', ARRAY['default', 'ix-flow'])$$),
    'Index (Only )?Scan using queue_flow_idx',
    'the claim''s one question, "is any of these queues under flow control?", is a probe of queue_flow_idx');
SELECT matches(pg_temp.plan_of($$EXECUTE ix_flow_next_lane('00000000-0000-0000-0000-000000000001', 'ix-flow',
                                                           '00000000-0000-0000-0000-000000000000')$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index (Only )?Scan using idx_taskrun_flow_lane',
    'the next lane of a queue with ready work (the loose scan''s step) is one probe of idx_taskrun_flow_lane, no sort');
SELECT matches(pg_temp.plan_of($$EXECUTE ix_flow_lane_head('00000000-0000-0000-0000-000000000001', 'ix-flow',
                                                           '00000000-0000-0000-0000-000000000000', 5)$$),
    '^(?!.*Sort)(?!.*Seq Scan).*Index Scan using idx_taskrun_flow_lane',
    'a lane''s first ready units in claim order are an ordered scan of idx_taskrun_flow_lane, no sort');
SET LOCAL plan_cache_mode = auto;
DEALLOCATE ix_flow_probe;
DEALLOCATE ix_flow_next_lane;
DEALLOCATE ix_flow_lane_head;

SELECT * FROM finish();
ROLLBACK;
