-- Schema structure: the tables of the migrations (0015 adds the substrate
-- every engine shares and the graph engine's tables, 0017 the state-machine
-- engine's, 0020 fan-out's checkpoint and its element pages, 0022 the triggers' secrets and firing
-- log on seed 000's scheduled_trigger made the general trigger table, 0032 the history partitioned by time and
-- the firings' delivery keys), the views (0008, 0026), their exact columns,
-- generated columns,
-- key column types, tenancy columns, primary keys, every foreign key with its
-- delete rule, the defaults that matter, and the built-in organization.
-- docs/data-model.md explains why each of these exists.
BEGIN;
SELECT plan(761);

SELECT has_schema('flowforge');

SELECT tables_are('flowforge', ARRAY[
    'organization', 'membership', 'api_key', 'audit_log',
    'workflow', 'task', 'task_dependency', 'scheduled_trigger',
    'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event',
    'queue', 'setting', 'api_key_usage', 'server_secret',
    'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine',
    'graph_run', 'graph_step', 'graph_visit', 'graph_edge',
    'machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen', 'machine_timer',
    'checkpoint', 'checkpoint_page', 'trigger_secret', 'trigger_firing', 'trigger_delivery',
    'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair'
], 'flowforge has exactly the forty tables of the migrations');

-- ---------------------------------------------------------------------------
-- Exact column lists (a column added or dropped without this test changing fails)
-- ---------------------------------------------------------------------------
SELECT columns_are('flowforge', 'organization', ARRAY['id', 'slug', 'name', 'created_at']);
SELECT columns_are('flowforge', 'membership', ARRAY['id', 'organization_id', 'member', 'role', 'created_at']);
SELECT columns_are('flowforge', 'api_key', ARRAY[
    'id', 'organization_id', 'name', 'prefix', 'hashed_key', 'role', 'created_at', 'revoked_at']);
SELECT columns_are('flowforge', 'audit_log', ARRAY[
    'id', 'organization_id', 'actor', 'action', 'entity', 'entity_id', 'fields', 'created_at']);
SELECT columns_are('flowforge', 'workflow', ARRAY[
    'id', 'organization_id', 'name', 'version', 'kind', 'spec', 'content_hash', 'created_at',
    'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by', 'superseded_at']);
SELECT columns_are('flowforge', 'task', ARRAY[
    'id', 'organization_id', 'workflow_id', 'key', 'queue', 'priority', 'max_attempts', 'backoff',
    'backoff_factor', 'max_backoff', 'timeout', 'dependency_count', 'created_at',
    'max_visits', 'is_final', 'affinity', 'affinity_policy', 'worker_params', 'spec', 'flow']);
SELECT columns_are('flowforge', 'task_dependency', ARRAY[
    'organization_id', 'workflow_id', 'task_id', 'depends_on_task_id']);
-- 0022: seed 000's cron table is the general trigger table (workflow_name became target).
SELECT columns_are('flowforge', 'scheduled_trigger', ARRAY[
    'id', 'organization_id', 'target', 'name', 'cron', 'input', 'enabled', 'next_fire_at',
    'last_fired_at', 'created_at', 'trigger_type', 'action', 'options', 'timezone', 'feeder_state', 'created_by',
    'updated_at', 'updated_by', 'deleted_at', 'deleted_by']);
SELECT columns_are('flowforge', 'workflow_run', ARRAY[
    'id', 'organization_id', 'workflow_id', 'state', 'input', 'idempotency_key', 'tasks_total',
    'tasks_remaining', 'tasks_failed', 'reason', 'created_at', 'started_at', 'finished_at',
    'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by']);
SELECT columns_are('flowforge', 'task_run', ARRAY[
    'id', 'organization_id', 'workflow_run_id', 'task_id', 'task_key', 'queue', 'priority', 'state',
    'attempt', 'max_attempts', 'fencing_token', 'lease_owner', 'lease_expires_at', 'timeout', 'ready_at',
    'remaining_deps', 'output', 'error', 'created_at', 'started_at', 'finished_at',
    'worker_params', 'affinity_key', 'affinity_policy', 'fans_out', 'flow_lane', 'flow_token', 'flow_queue_slot']);
SELECT columns_are('flowforge', 'idempotency_key', ARRAY[
    'organization_id', 'key', 'workflow_run_id', 'request_hash', 'created_at']);
SELECT columns_are('flowforge', 'outbox_message', ARRAY[
    'id', 'organization_id', 'task_run_id', 'workflow_run_id', 'exchange', 'routing_key', 'payload',
    'fencing_token_snapshot', 'attempt_snapshot', 'published_at', 'created_at',
    'publish_attempts', 'next_attempt_at', 'last_error']);
SELECT columns_are('flowforge', 'task_run_event', ARRAY[
    'id', 'seq', 'organization_id', 'workflow_run_id', 'task_run_id', 'kind', 'from_state', 'to_state',
    'fencing_token', 'attempt', 'detail', 'created_at', 'work_item_id']);
SELECT columns_are('flowforge', 'queue', ARRAY[
    'organization_id', 'name', 'exchange', 'routing_key', 'dispatch_lease', 'created_at', 'updated_at',
    'paused', 'max_running', 'rate_limit', 'rate_per', 'keyed', 'flow', 'created_by', 'updated_by']);
SELECT columns_are('flowforge', 'api_key_usage', ARRAY['api_key_id', 'organization_id', 'last_used_at']);
SELECT columns_are('flowforge', 'server_secret', ARRAY['singleton', 'gateway_key', 'created_at']);
SELECT columns_are('flowforge', 'setting', ARRAY['singleton', 'max_payload_bytes', 'max_json_depth', 'agent_timeout',
                                                'duty_lease', 'max_fanout_items', 'retention_runs', 'retention_firings',
                                                'retention_audit']);
-- 0032: the delivery key of a firing (one firing per delivery, across the firing log's partitions).
SELECT columns_are('flowforge', 'trigger_delivery', ARRAY['organization_id', 'trigger_id', 'delivery_id', 'firing_id',
                                                         'recorded_at']);
-- 0015: the substrate (seed 002's tables; kisai.common columns as created/updated/deleted _at/_by).
SELECT columns_are('flowforge', 'engine_run', ARRAY[
    'id', 'organization_id', 'run_id', 'engine_kind', 'definition_id', 'parent_run_id', 'triggered_by',
    'trigger_firing_id', 'ended_at', 'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by',
    'definition_name']);
SELECT columns_are('flowforge', 'work_item', ARRAY[
    'id', 'organization_id', 'engine_id', 'engine_kind', 'parent_work_item_id', 'run_id', 'task_id', 'task_name',
    'queue', 'worker_params', 'payload', 'output', 'status', 'priority', 'fencing_token', 'agent_id', 'leased_by',
    'dispatched_at', 'completed_at', 'lease_expires_at', 'next_attempt_at', 'retry_count', 'max_retries', 'backoff',
    'backoff_factor', 'max_backoff', 'timeout', 'affinity_key', 'affinity_policy', 'error', 'created_at', 'created_by',
    'updated_at', 'updated_by', 'deleted_at', 'deleted_by', 'checkpoint_id', 'checkpoint_generation', 'item_index',
    'flow_lane', 'flow_token', 'flow_queue_slot']);
SELECT columns_are('flowforge', 'agent', ARRAY[
    'id', 'organization_id', 'name', 'http_address', 'grpc_address', 'infra_address', 'agent_version', 'binary_path',
    'agent_type', 'status', 'metrics', 'metadata', 'heartbeat_interval', 'last_heartbeat_at', 'last_claim_at',
    'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by']);
SELECT columns_are('flowforge', 'affinity_binding', ARRAY[
    'id', 'organization_id', 'affinity_key', 'agent_id', 'generation', 'created_at', 'created_by', 'updated_at',
    'updated_by']);
SELECT columns_are('flowforge', 'engine', ARRAY[
    'id', 'organization_id', 'engine_id', 'status', 'generation', 'lease_expires_at', 'heartbeat_at', 'created_at',
    'updated_at']);
SELECT columns_are('flowforge', 'graph_run', ARRAY[
    'id', 'organization_id', 'run_id', 'definition_id', 'task', 'steps', 'max_steps', 'state', 'input', 'status',
    'reason', 'error', 'idempotency_key', 'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at',
    'deleted_by', 'started_at', 'finished_at']);
SELECT columns_are('flowforge', 'graph_step', ARRAY[
    'organization_id', 'run_id', 'step', 'node', 'visit', 'work_item_id', 'entered_at']);
SELECT columns_are('flowforge', 'graph_visit', ARRAY['organization_id', 'run_id', 'node', 'visits']);
SELECT columns_are('flowforge', 'graph_edge', ARRAY[
    'organization_id', 'workflow_id', 'from_task_id', 'position', 'to_task_id', 'condition']);
-- 0017: the state-machine engine (seed 002's machine_run, its history as rows).
SELECT columns_are('flowforge', 'machine_run', ARRAY[
    'id', 'organization_id', 'run_id', 'definition_id', 'state', 'context', 'status', 'live', 'suspended', 'failure',
    'reason', 'transitions', 'history_length', 'next_event_seq', 'action_item_id', 'input', 'idempotency_key',
    'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by', 'started_at', 'finished_at']);
SELECT columns_are('flowforge', 'machine_transition', ARRAY[
    'organization_id', 'run_id', 'n', 'cause', 'outcome', 'event', 'event_id', 'payload', 'from_state', 'to_state',
    'detail', 'created_at']);
SELECT columns_are('flowforge', 'machine_event_queue', ARRAY[
    'organization_id', 'run_id', 'seq', 'event', 'payload', 'event_id', 'received_at']);
SELECT columns_are('flowforge', 'machine_event_seen', ARRAY['organization_id', 'run_id', 'event_id', 'seen_at']);
SELECT columns_are('flowforge', 'machine_timer', ARRAY[
    'id', 'organization_id', 'run_id', 'entered', 'position', 'target', 'delay', 'fire_at']);
-- 0020: fan-out (seed 002's checkpoint: one row per fanning node of a run; its elements in pages).
SELECT columns_are('flowforge', 'checkpoint', ARRAY[
    'id', 'organization_id', 'run_id', 'node_name', 'definition_id', 'task_id', 'engine_kind', 'parent_task_run_id',
    'parent_work_item_id', 'iterator_type', 'generation', 'cursor', 'idx', 'total', 'succeeded', 'failed', 'live',
    'max_concurrency', 'tolerated_failures', 'done', 'outcome', 'child_input', 'output_by_reference', 'error',
    'created_at', 'created_by', 'updated_at', 'updated_by', 'deleted_at', 'deleted_by']);
SELECT columns_are('flowforge', 'checkpoint_page', ARRAY['organization_id', 'checkpoint_id', 'page', 'elements']);
-- 0022: a webhook's key apart from its trigger; seed 002's firing log (fired_on the source's, recorded_at ours).
SELECT columns_are('flowforge', 'trigger_secret', ARRAY['trigger_id', 'organization_id', 'secret', 'created_at']);
SELECT columns_are('flowforge', 'trigger_firing', ARRAY[
    'id', 'organization_id', 'trigger_id', 'trigger_name', 'trigger_type', 'payload', 'action', 'definition_id', 'event',
    'run_id', 'outcome', 'error', 'fired_on', 'recorded_at', 'delivery_id', 'created_by']);
-- 0028: flow control's counted rows.
SELECT columns_are('flowforge', 'flow_lane', ARRAY[
    'organization_id', 'id', 'identity', 'conc_name', 'conc_value', 'conc_max', 'rate_name', 'rate_value', 'rate_limit',
    'rate_per', 'fair_value', 'fair_weight', 'created_at']);
SELECT columns_are('flowforge', 'flow_slot', ARRAY['organization_id', 'scope', 'name', 'value', 'running', 'updated_at']);
SELECT columns_are('flowforge', 'flow_bucket', ARRAY[
    'organization_id', 'scope', 'name', 'value', 'rate_limit', 'rate_per', 'level', 'refilled_at']);
SELECT columns_are('flowforge', 'flow_fair', ARRAY['organization_id', 'queue', 'value', 'pass', 'updated_at']);

-- ---------------------------------------------------------------------------
-- Key column types
-- ---------------------------------------------------------------------------
-- UUID primary keys everywhere an entity has an id.
SELECT col_type_is('flowforge', t, 'id', 'uuid', format('%s.id is uuid', t))
FROM unnest(ARRAY['organization', 'membership', 'api_key', 'audit_log', 'workflow', 'task', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'outbox_message', 'task_run_event']) AS t;
-- Tenant and reference columns.
SELECT col_type_is('flowforge', t, 'organization_id', 'uuid', format('%s.organization_id is uuid', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue']) AS t;
SELECT col_type_is('flowforge', 'organization', 'slug', 'character varying(63)', 'organization.slug is character varying(63)');
SELECT col_type_is('flowforge', 'membership', 'member', 'name', 'membership.member is name');
SELECT col_type_is('flowforge', 'api_key', 'prefix', 'character varying(32)', 'api_key.prefix is character varying(32)');
SELECT col_type_is('flowforge', 'api_key', 'hashed_key', 'bytea', 'api_key.hashed_key is bytea');
SELECT col_type_is('flowforge', 'audit_log', 'fields', 'text[]', 'audit_log.fields is text[]');
SELECT col_type_is('flowforge', 'workflow', 'name', 'character varying(63)', 'workflow.name is character varying(63)');
SELECT col_type_is('flowforge', 'workflow', 'version', 'integer', 'workflow.version is integer');
SELECT col_type_is('flowforge', 'workflow', 'spec', 'jsonb', 'workflow.spec is jsonb');
SELECT col_type_is('flowforge', 'task', 'workflow_id', 'uuid', 'task.workflow_id is uuid');
SELECT col_type_is('flowforge', 'task', 'backoff', 'interval', 'task.backoff is interval');
SELECT col_type_is('flowforge', 'task', 'backoff_factor', 'numeric', 'task.backoff_factor is numeric');
SELECT col_type_is('flowforge', 'task', 'timeout', 'interval', 'task.timeout is interval');
SELECT col_type_is('flowforge', 'workflow_run', 'workflow_id', 'uuid', 'workflow_run.workflow_id is uuid');
SELECT col_type_is('flowforge', 'workflow_run', 'state', 'flowforge', 'workflow_run_state', 'workflow_run.state is the domain workflow_run_state (0040)');
SELECT col_type_is('flowforge', 'workflow_run', 'input', 'flowforge', 'workflow_run_input', 'workflow_run.input is the domain workflow_run_input (0040)');
SELECT col_type_is('flowforge', 'workflow_run', 'finished_at', 'timestamp with time zone', 'workflow_run.finished_at is timestamp with time zone');
SELECT col_type_is('flowforge', 'task_run', 'workflow_run_id', 'uuid', 'task_run.workflow_run_id is uuid');
SELECT col_type_is('flowforge', 'task_run', 'task_id', 'uuid', 'task_run.task_id is uuid');
SELECT col_type_is('flowforge', 'task_run', 'state', 'flowforge', 'task_run_state', 'task_run.state is the domain task_run_state (0040)');
SELECT col_type_is('flowforge', 'task_run', 'attempt', 'flowforge', 'task_run_attempt', 'task_run.attempt is the domain task_run_attempt (0040)');
SELECT col_type_is('flowforge', 'task_run', 'fencing_token', 'flowforge', 'task_run_fencing_token', 'task_run.fencing_token is the domain task_run_fencing_token (0040)');
SELECT col_type_is('flowforge', 'task_run', 'timeout', 'flowforge', 'task_run_timeout', 'task_run.timeout is the domain task_run_timeout (0040)');
SELECT col_type_is('flowforge', 'task_run', 'remaining_deps', 'flowforge', 'task_run_remaining_deps', 'task_run.remaining_deps is the domain task_run_remaining_deps (0040)');
SELECT col_type_is('flowforge', 'task_run', 'worker_params', 'flowforge', 'task_run_worker_params', 'task_run.worker_params is the domain task_run_worker_params (0040)');
SELECT col_type_is('flowforge', 'task_run', 'affinity_policy', 'flowforge', 'task_run_affinity_policy', 'task_run.affinity_policy is the domain task_run_affinity_policy (0040)');
SELECT col_type_is('flowforge', 'task_run', 'flow_token', 'flowforge', 'task_run_flow_token', 'task_run.flow_token is the domain task_run_flow_token (0040)');
-- Each domain keeps the column's own type (0040: the retype rewrote no table) and holds one check.
SELECT set_eq(
    $$SELECT t.typname::text, format_type(t.typbasetype, t.typtypmod), c.conname::text
      FROM pg_type t LEFT JOIN pg_constraint c ON c.contypid = t.oid
      WHERE t.typnamespace = 'flowforge'::regnamespace AND t.typtype = 'd'$$,
    $$VALUES ('task_run_state', 'character varying(20)', 'taskrun_state_valid'),
             ('task_run_attempt', 'integer', 'taskrun_attempt_positive'),
             ('task_run_fencing_token', 'bigint', 'taskrun_fencing_non_negative'),
             ('task_run_timeout', 'interval', 'taskrun_timeout_bounded'),
             ('task_run_remaining_deps', 'integer', 'taskrun_remaining_deps_non_negative'),
             ('task_run_worker_params', 'jsonb', 'taskrun_worker_params_is_object'),
             ('task_run_affinity_policy', 'character varying(10)', 'taskrun_affinity_policy_valid'),
             ('task_run_flow_token', 'bigint', 'taskrun_flow_token_positive'),
             ('workflow_run_state', 'character varying(20)', 'wfrun_state_valid'),
             ('workflow_run_input', 'jsonb', 'wfrun_input_is_object'),
             ('engine_run_kind', 'character varying(20)', 'engine_run_kind_valid')$$,
    'the eleven domains of 0040: each over its column''s former type, each with its one named check');
SELECT col_type_is('flowforge', 'task_run', 'lease_owner', 'character varying(200)', 'task_run.lease_owner is character varying(200)');
SELECT col_type_is('flowforge', 'task_run', 'lease_expires_at', 'timestamp with time zone', 'task_run.lease_expires_at is timestamp with time zone');
SELECT col_type_is('flowforge', 'task_run', 'ready_at', 'timestamp with time zone', 'task_run.ready_at is timestamp with time zone');
SELECT col_type_is('flowforge', 'task_run', 'output', 'jsonb', 'task_run.output is jsonb');
SELECT col_type_is('flowforge', 'idempotency_key', 'key', 'character varying(200)', 'idempotency_key.key is character varying(200)');
SELECT col_type_is('flowforge', 'outbox_message', 'fencing_token_snapshot', 'bigint', 'outbox_message.fencing_token_snapshot is bigint');
SELECT col_type_is('flowforge', 'outbox_message', 'payload', 'jsonb', 'outbox_message.payload is jsonb');
SELECT col_type_is('flowforge', 'outbox_message', 'published_at', 'timestamp with time zone', 'outbox_message.published_at is timestamp with time zone');
SELECT col_type_is('flowforge', 'task_run_event', 'seq', 'bigint', 'task_run_event.seq is bigint');
SELECT col_type_is('flowforge', 'task_run_event', 'task_run_id', 'uuid', 'task_run_event.task_run_id is uuid');
SELECT col_type_is('flowforge', 'task_run_event', 'kind', 'character varying(30)', 'task_run_event.kind is character varying(30)');
SELECT col_type_is('flowforge', 'queue', 'name', 'character varying(63)', 'queue.name is character varying(63), like task.queue');
SELECT col_type_is('flowforge', 'queue', 'dispatch_lease', 'interval', 'queue.dispatch_lease is interval');
SELECT col_type_is('flowforge', 'api_key_usage', 'api_key_id', 'uuid', 'api_key_usage.api_key_id is uuid');
SELECT col_type_is('flowforge', 'api_key_usage', 'organization_id', 'uuid', 'api_key_usage.organization_id is uuid');
SELECT col_type_is('flowforge', 'server_secret', 'gateway_key', 'bytea', 'server_secret.gateway_key is bytea');
SELECT col_type_is('flowforge', 'setting', 'singleton', 'boolean', 'setting.singleton is boolean');
-- 0015: time-ordered uuid ids (seed 002's ULIDs), names where the seed stores an agent's name.
SELECT col_type_is('flowforge', t, 'id', 'uuid', format('%s.id is uuid', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run']) AS t;
SELECT col_type_is('flowforge', t, 'organization_id', 'uuid', format('%s.organization_id is uuid', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run', 'graph_step',
                  'graph_visit', 'graph_edge']) AS t;
SELECT col_type_is('flowforge', t, 'run_id', 'uuid', format('%s.run_id is uuid (a run of any engine)', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'graph_run', 'graph_step', 'graph_visit']) AS t;
SELECT col_type_is('flowforge', t, c, 'timestamp with time zone', format('%s.%s is timestamp with time zone (the seed''s epoch nanoseconds)', t, c))
FROM (VALUES ('engine_run', 'ended_at'), ('work_item', 'next_attempt_at'), ('work_item', 'lease_expires_at'),
             ('work_item', 'dispatched_at'), ('agent', 'last_heartbeat_at'), ('agent', 'last_claim_at'),
             ('engine', 'lease_expires_at'), ('engine', 'heartbeat_at'), ('graph_step', 'entered_at')) AS x(t, c);
SELECT col_type_is('flowforge', 'engine_run', 'engine_kind', 'flowforge', 'engine_run_kind', 'engine_run.engine_kind is the domain engine_run_kind (0040)');
SELECT col_type_is('flowforge', 'work_item', 'engine_kind', 'character varying(20)', 'work_item.engine_kind is character varying(20)');
SELECT col_type_is('flowforge', 'work_item', 'status', 'character varying(20)', 'work_item.status is character varying(20)');
SELECT col_type_is('flowforge', 'work_item', 'priority', 'integer', 'work_item.priority is integer');
SELECT col_type_is('flowforge', 'work_item', 'fencing_token', 'bigint', 'work_item.fencing_token is bigint, like task_run''s');
SELECT col_type_is('flowforge', 'work_item', 'queue', 'character varying(63)', 'work_item.queue is character varying(63), like task.queue');
SELECT col_type_is('flowforge', 'work_item', 'task_name', 'character varying(63)', 'work_item.task_name is character varying(63), like task.key');
SELECT col_type_is('flowforge', 'work_item', 'payload', 'jsonb', 'work_item.payload is jsonb');
SELECT col_type_is('flowforge', 'work_item', 'output', 'jsonb', 'work_item.output is jsonb');
SELECT col_type_is('flowforge', 'work_item', 'agent_id', 'character varying(200)', 'work_item.agent_id is character varying(200): the agent''s name');
SELECT col_type_is('flowforge', 'work_item', 'timeout', 'interval', 'work_item.timeout is interval');
SELECT col_type_is('flowforge', 'agent', 'name', 'character varying(200)', 'agent.name is character varying(200)');
SELECT col_type_is('flowforge', 'agent', 'heartbeat_interval', 'interval', 'agent.heartbeat_interval is interval');
SELECT col_type_is('flowforge', 'agent', 'metadata', 'jsonb', 'agent.metadata is jsonb (the labels selectors match)');
SELECT col_type_is('flowforge', 'affinity_binding', 'agent_id', 'character varying(200)', 'affinity_binding.agent_id is character varying(200): the agent''s name');
SELECT col_type_is('flowforge', 'affinity_binding', 'generation', 'bigint', 'affinity_binding.generation is bigint');
SELECT col_type_is('flowforge', 'engine', 'engine_id', 'character varying(200)', 'engine.engine_id is character varying(200): a daemon''s instance id');
SELECT col_type_is('flowforge', 'engine', 'generation', 'bigint', 'engine.generation is bigint');
SELECT col_type_is('flowforge', 'graph_run', 'steps', 'bigint', 'graph_run.steps is bigint');
SELECT col_type_is('flowforge', 'graph_run', 'state', 'jsonb', 'graph_run.state is jsonb (the run''s data)');
SELECT col_type_is('flowforge', 'graph_step', 'step', 'bigint', 'graph_step.step is bigint, like graph_run.steps');
SELECT col_type_is('flowforge', 'graph_edge', 'condition', 'jsonpath', 'graph_edge.condition is jsonpath (parsed once, at definition)');
SELECT col_type_is('flowforge', 'task_run_event', 'work_item_id', 'uuid', 'task_run_event.work_item_id is uuid');
SELECT col_type_is('flowforge', 'setting', 'agent_timeout', 'interval', 'setting.agent_timeout is interval');
SELECT col_type_is('flowforge', 'setting', 'duty_lease', 'interval', 'setting.duty_lease is interval');
-- 0017: the state-machine engine. A state is named like a task key (it is one), events like send_event's names.
SELECT col_type_is('flowforge', t, 'id', 'uuid', format('%s.id is uuid', t))
FROM unnest(ARRAY['machine_run', 'machine_timer']) AS t;
SELECT col_type_is('flowforge', t, 'organization_id', 'uuid', format('%s.organization_id is uuid', t))
FROM unnest(ARRAY['machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen', 'machine_timer']) AS t;
SELECT col_type_is('flowforge', t, 'run_id', 'uuid', format('%s.run_id is uuid (the run''s directory id)', t))
FROM unnest(ARRAY['machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen', 'machine_timer']) AS t;
SELECT col_type_is('flowforge', t, c, 'timestamp with time zone', format('%s.%s is timestamp with time zone', t, c))
FROM (VALUES ('machine_run', 'created_at'), ('machine_run', 'started_at'), ('machine_run', 'finished_at'),
             ('machine_run', 'updated_at'), ('machine_run', 'deleted_at'), ('machine_transition', 'created_at'),
             ('machine_event_queue', 'received_at'), ('machine_event_seen', 'seen_at'),
             ('machine_timer', 'fire_at')) AS x(t, c);
SELECT col_type_is('flowforge', t, c, 'bigint', format('%s.%s is bigint', t, c))
FROM (VALUES ('machine_run', 'transitions'), ('machine_run', 'history_length'), ('machine_run', 'next_event_seq'),
             ('machine_transition', 'n'), ('machine_event_queue', 'seq'), ('machine_timer', 'entered')) AS x(t, c);
SELECT col_type_is('flowforge', t, c, 'character varying(63)', format('%s.%s is character varying(63), like task.key', t, c))
FROM (VALUES ('machine_run', 'state'), ('machine_transition', 'from_state'), ('machine_transition', 'to_state'),
             ('machine_timer', 'target')) AS x(t, c);
SELECT col_type_is('flowforge', t, c, 'character varying(200)', format('%s.%s is character varying(200)', t, c))
FROM (VALUES ('machine_run', 'idempotency_key'), ('machine_transition', 'event'), ('machine_transition', 'event_id'),
             ('machine_event_queue', 'event'), ('machine_event_queue', 'event_id'), ('machine_event_seen', 'event_id')) AS x(t, c);
SELECT col_type_is('flowforge', t, c, 'jsonb', format('%s.%s is jsonb', t, c))
FROM (VALUES ('machine_run', 'context'), ('machine_run', 'input'), ('machine_transition', 'payload'),
             ('machine_transition', 'detail'), ('machine_event_queue', 'payload'), ('task', 'spec')) AS x(t, c);
SELECT col_type_is('flowforge', 'machine_run', 'status', 'character varying(20)', 'machine_run.status is character varying(20)');
SELECT col_type_is('flowforge', 'machine_run', 'live', 'boolean', 'machine_run.live is boolean');
SELECT col_type_is('flowforge', 'machine_run', 'suspended', 'boolean', 'machine_run.suspended is boolean');
SELECT col_type_is('flowforge', 'machine_run', 'definition_id', 'uuid', 'machine_run.definition_id is uuid');
SELECT col_type_is('flowforge', 'machine_run', 'action_item_id', 'uuid', 'machine_run.action_item_id is uuid (a work item''s id)');
SELECT col_type_is('flowforge', 'machine_transition', 'cause', 'character varying(20)', 'machine_transition.cause is character varying(20)');
SELECT col_type_is('flowforge', 'machine_transition', 'outcome', 'character varying(20)', 'machine_transition.outcome is character varying(20)');
SELECT col_type_is('flowforge', 'machine_timer', 'position', 'integer', 'machine_timer.position is integer');
SELECT col_type_is('flowforge', 'machine_timer', 'delay', 'interval', 'machine_timer.delay is interval');
-- 0020: fan-out. Counts of elements are bigint (up to 1,000,000 by the check), the bound and the generation integer.
SELECT col_type_is('flowforge', 'checkpoint', c, ty, format('checkpoint.%s is %s', c, ty))
FROM (VALUES ('id', 'uuid'), ('organization_id', 'uuid'), ('run_id', 'uuid'), ('node_name', 'character varying(63)'),
             ('definition_id', 'uuid'), ('task_id', 'uuid'), ('engine_kind', 'character varying(20)'),
             ('parent_task_run_id', 'uuid'), ('parent_work_item_id', 'uuid'), ('iterator_type', 'character varying(10)'),
             ('generation', 'integer'), ('cursor', 'bigint'), ('idx', 'bigint'), ('total', 'bigint'),
             ('succeeded', 'bigint'), ('failed', 'bigint'), ('live', 'integer'), ('max_concurrency', 'integer'),
             ('tolerated_failures', 'bigint'), ('done', 'boolean'), ('outcome', 'character varying(20)'),
             ('child_input', 'jsonb'), ('output_by_reference', 'boolean'), ('error', 'text'),
             ('created_at', 'timestamp with time zone'), ('created_by', 'text'),
             ('updated_at', 'timestamp with time zone'), ('updated_by', 'text'),
             ('deleted_at', 'timestamp with time zone'), ('deleted_by', 'text')) AS x(c, ty);
SELECT col_type_is('flowforge', 'checkpoint_page', c, ty, format('checkpoint_page.%s is %s', c, ty))
FROM (VALUES ('organization_id', 'uuid'), ('checkpoint_id', 'uuid'), ('page', 'integer'), ('elements', 'jsonb')) AS x(c, ty);
SELECT col_type_is('flowforge', 'work_item', c, ty, format('work_item.%s is %s (a fan-out child''s)', c, ty))
FROM (VALUES ('checkpoint_id', 'uuid'), ('checkpoint_generation', 'integer'), ('item_index', 'integer')) AS x(c, ty);
SELECT col_type_is('flowforge', 'task_run', 'fans_out', 'boolean', 'task_run.fans_out is boolean');
SELECT col_type_is('flowforge', 'setting', 'max_fanout_items', 'integer', 'setting.max_fanout_items is integer');
SELECT col_type_is('flowforge', 'setting', c, 'interval', format('setting.%s is interval (0032)', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;
SELECT col_is_null('flowforge', 'setting', c, format('setting.%s is nullable: NULL keeps everything', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;
SELECT col_type_is('flowforge', 'trigger_delivery', 'delivery_id', 'character varying(200)',
                   'trigger_delivery.delivery_id is character varying(200), as trigger_firing.delivery_id');
-- 0022: triggers. A trigger's name is a task key's size, its target an event name's (a workflow name fits).
SELECT col_type_is('flowforge', 'scheduled_trigger', c, ty, format('scheduled_trigger.%s is %s', c, ty))
FROM (VALUES ('name', 'character varying(63)'), ('target', 'character varying(200)'), ('cron', 'text'),
             ('trigger_type', 'character varying(20)'), ('action', 'character varying(10)'), ('options', 'jsonb'),
             ('input', 'jsonb'), ('timezone', 'text'), ('feeder_state', 'jsonb'), ('enabled', 'boolean'),
             ('next_fire_at', 'timestamp with time zone'), ('last_fired_at', 'timestamp with time zone'),
             ('created_by', 'text'), ('updated_at', 'timestamp with time zone'), ('updated_by', 'text'),
             ('deleted_at', 'timestamp with time zone'), ('deleted_by', 'text')) AS x(c, ty);
SELECT col_type_is('flowforge', 'trigger_secret', c, ty, format('trigger_secret.%s is %s', c, ty))
FROM (VALUES ('trigger_id', 'uuid'), ('organization_id', 'uuid'), ('secret', 'bytea'),
             ('created_at', 'timestamp with time zone')) AS x(c, ty);
SELECT col_type_is('flowforge', 'trigger_firing', c, ty, format('trigger_firing.%s is %s', c, ty))
FROM (VALUES ('id', 'uuid'), ('organization_id', 'uuid'), ('trigger_id', 'uuid'), ('trigger_name', 'character varying(63)'),
             ('trigger_type', 'character varying(20)'), ('payload', 'jsonb'), ('action', 'character varying(10)'),
             ('definition_id', 'uuid'), ('event', 'character varying(200)'), ('run_id', 'uuid'),
             ('outcome', 'character varying(20)'), ('error', 'text'), ('fired_on', 'timestamp with time zone'),
             ('recorded_at', 'timestamp with time zone'), ('delivery_id', 'character varying(200)'),
             ('created_by', 'text')) AS x(c, ty);
SELECT col_type_is('flowforge', 'engine_run', 'triggered_by', 'character varying(63)',
                   'engine_run.triggered_by is character varying(63): a trigger''s name');
SELECT col_type_is('flowforge', 'engine_run', 'trigger_firing_id', 'uuid', 'engine_run.trigger_firing_id is uuid: a firing''s id');
-- 0030: ownership. Who a row belongs to is text like every other created_by (a login, or an API key's prefix).
SELECT col_type_is('flowforge', t, c, ty, format('%s.%s is %s', t, c, ty))
FROM (VALUES ('workflow', 'created_by', 'text'), ('workflow', 'updated_at', 'timestamp with time zone'),
             ('workflow', 'updated_by', 'text'), ('workflow', 'deleted_at', 'timestamp with time zone'),
             ('workflow', 'deleted_by', 'text'), ('workflow', 'superseded_at', 'timestamp with time zone'),
             ('workflow_run', 'created_by', 'text'), ('workflow_run', 'updated_at', 'timestamp with time zone'),
             ('workflow_run', 'updated_by', 'text'), ('workflow_run', 'deleted_at', 'timestamp with time zone'),
             ('workflow_run', 'deleted_by', 'text'), ('queue', 'created_by', 'text'), ('queue', 'updated_by', 'text'),
             ('engine_run', 'definition_name', 'character varying(63)')) AS x(t, c, ty);
-- Every entity a caller creates says who: NOT NULL, set by the functions from _principal(), never an argument.
SELECT col_not_null('flowforge', t, 'created_by', format('%s.created_by is NOT NULL', t))
FROM unnest(ARRAY['workflow', 'queue', 'engine_run', 'graph_run', 'machine_run', 'work_item', 'agent',
                  'affinity_binding', 'checkpoint', 'scheduled_trigger', 'trigger_firing']) AS t;
SELECT col_is_null('flowforge', t, c, format('%s.%s is nullable (%s)', t, c, why))
FROM (VALUES ('workflow_run', 'created_by', 'a NOT NULL would scan the table under lock; the directory''s is NOT NULL'),
             ('workflow', 'superseded_at', 'NULL on each name''s latest version'),
             ('engine_run', 'definition_name', 'NULL exactly when definition_id is')) AS x(t, c, why);

-- ---------------------------------------------------------------------------
-- Tenancy: organization_id NOT NULL on every tenant table
-- ---------------------------------------------------------------------------
SELECT col_not_null('flowforge', t, 'organization_id', format('%s.organization_id is NOT NULL', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_secret',
                  'trigger_firing', 'trigger_delivery']) AS t;
-- Columns whose NULL would break an invariant the functions rely on.
SELECT col_not_null('flowforge', 'task_run', 'fencing_token', 'task_run.fencing_token is NOT NULL');
SELECT col_not_null('flowforge', 'task_run', 'state', 'task_run.state is NOT NULL');
SELECT col_not_null('flowforge', 'workflow_run', 'state', 'workflow_run.state is NOT NULL');
SELECT col_not_null('flowforge', 'task_run', 'created_at', 'task_run.created_at is NOT NULL');
SELECT col_is_null('flowforge', 'task_run', 'lease_expires_at', 'task_run.lease_expires_at is nullable (no lease unless running)');
SELECT col_is_null('flowforge', 'task_run_event', 'task_run_id', 'task_run_event.task_run_id is nullable (run-level events)');
SELECT col_is_null('flowforge', 'task_run_event', 'work_item_id', 'task_run_event.work_item_id is nullable (only a work item''s events)');
SELECT col_not_null('flowforge', t, c, format('%s.%s is NOT NULL', t, c))
FROM (VALUES ('work_item', 'fencing_token'), ('work_item', 'status'), ('work_item', 'next_attempt_at'),
             ('work_item', 'engine_kind'), ('work_item', 'run_id'), ('work_item', 'payload'),
             ('engine_run', 'run_id'), ('engine_run', 'engine_kind'), ('graph_run', 'status'), ('graph_run', 'max_steps'),
             ('agent', 'status'), ('affinity_binding', 'generation'), ('engine', 'generation'), ('engine', 'heartbeat_at'),
             ('setting', 'agent_timeout'), ('setting', 'duty_lease')) AS x(t, c);
SELECT col_is_null('flowforge', 'work_item', 'lease_expires_at', 'work_item.lease_expires_at is nullable (no lease unless dispatched)');
SELECT col_is_null('flowforge', 'engine_run', 'ended_at', 'engine_run.ended_at is nullable (NULL while the run lives)');
SELECT col_not_null('flowforge', t, c, format('%s.%s is NOT NULL', t, c))
FROM (VALUES ('machine_run', 'run_id'), ('machine_run', 'definition_id'), ('machine_run', 'state'),
             ('machine_run', 'context'), ('machine_run', 'status'), ('machine_run', 'transitions'),
             ('machine_run', 'history_length'), ('machine_run', 'next_event_seq'), ('machine_run', 'input'),
             ('machine_run', 'started_at'), ('machine_transition', 'n'), ('machine_transition', 'cause'),
             ('machine_transition', 'outcome'), ('machine_transition', 'created_at'), ('machine_event_queue', 'event'),
             ('machine_event_queue', 'payload'), ('machine_event_queue', 'received_at'), ('machine_timer', 'entered'),
             ('machine_timer', 'target'), ('machine_timer', 'delay'), ('machine_timer', 'fire_at')) AS x(t, c);
SELECT col_is_null('flowforge', t, c, format('%s.%s is nullable (%s)', t, c, why))
FROM (VALUES ('machine_run', 'action_item_id', 'set only while an action runs'),
             ('machine_run', 'finished_at', 'NULL while the run lives'),
             ('machine_transition', 'event', 'only an event''s entry names one'),
             ('machine_transition', 'to_state', 'a refusal or a stop enters no state'),
             ('task', 'spec', 'only a machine''s states and fanning nodes carry one')) AS x(t, c, why);
-- 0020: a checkpoint's counts, bound and state are never unknown; its parent is one of two (the engine decides).
SELECT col_not_null('flowforge', t, c, format('%s.%s is NOT NULL', t, c))
FROM (VALUES ('checkpoint', 'run_id'), ('checkpoint', 'node_name'), ('checkpoint', 'definition_id'),
             ('checkpoint', 'task_id'), ('checkpoint', 'engine_kind'), ('checkpoint', 'iterator_type'),
             ('checkpoint', 'generation'), ('checkpoint', 'cursor'), ('checkpoint', 'idx'), ('checkpoint', 'total'),
             ('checkpoint', 'succeeded'), ('checkpoint', 'failed'), ('checkpoint', 'live'),
             ('checkpoint', 'max_concurrency'), ('checkpoint', 'done'), ('checkpoint', 'output_by_reference'),
             ('checkpoint', 'created_at'), ('checkpoint', 'created_by'), ('checkpoint_page', 'checkpoint_id'),
             ('checkpoint_page', 'page'), ('checkpoint_page', 'elements'), ('task_run', 'fans_out'),
             ('setting', 'max_fanout_items')) AS x(t, c);
SELECT col_is_null('flowforge', t, c, format('%s.%s is nullable (%s)', t, c, why))
FROM (VALUES ('checkpoint', 'parent_task_run_id', 'a DAG task''s fan-out only'),
             ('checkpoint', 'parent_work_item_id', 'a graph node''s fan-out only'),
             ('checkpoint', 'tolerated_failures', 'NULL for continue: every failure tolerated'),
             ('checkpoint', 'outcome', 'NULL until done'),
             ('checkpoint', 'child_input', 'what every child is given as input'),
             ('checkpoint', 'error', 'only a failed fan-out has one'),
             ('work_item', 'checkpoint_id', 'only a fan-out child has one'),
             ('work_item', 'checkpoint_generation', 'only a fan-out child has one'),
             ('work_item', 'item_index', 'only a fan-out child has one')) AS x(t, c, why);
-- 0022: a trigger always has a type, an action, a target, options and a zone; a firing always its trigger's name,
-- outcome and both times. What a firing could not know (no such trigger, a refusal before any action) is NULL.
SELECT col_not_null('flowforge', t, c, format('%s.%s is NOT NULL', t, c))
FROM (VALUES ('scheduled_trigger', 'name'), ('scheduled_trigger', 'target'), ('scheduled_trigger', 'trigger_type'),
             ('scheduled_trigger', 'action'), ('scheduled_trigger', 'options'), ('scheduled_trigger', 'input'),
             ('scheduled_trigger', 'timezone'), ('scheduled_trigger', 'enabled'), ('scheduled_trigger', 'created_by'),
             ('trigger_secret', 'trigger_id'), ('trigger_secret', 'secret'), ('trigger_secret', 'created_at'),
             ('trigger_firing', 'id'), ('trigger_firing', 'trigger_name'), ('trigger_firing', 'outcome'),
             ('trigger_firing', 'fired_on'), ('trigger_firing', 'recorded_at'), ('trigger_firing', 'created_by')) AS x(t, c);
SELECT col_is_null('flowforge', t, c, format('%s.%s is nullable (%s)', t, c, why))
FROM (VALUES ('scheduled_trigger', 'cron', 'a cron trigger''s only'),
             ('scheduled_trigger', 'next_fire_at', 'a cron trigger''s only'),
             ('scheduled_trigger', 'feeder_state', 'a feeder''s progress, once it has some'),
             ('scheduled_trigger', 'deleted_at', 'NULL while the trigger lives'),
             ('trigger_firing', 'trigger_id', 'a name that matched no trigger'),
             ('trigger_firing', 'trigger_type', 'a name that matched no trigger'),
             ('trigger_firing', 'payload', 'what arrived, if anything'),
             ('trigger_firing', 'action', 'a refusal before any action'),
             ('trigger_firing', 'definition_id', 'a start''s only'),
             ('trigger_firing', 'event', 'a signal''s only'),
             ('trigger_firing', 'run_id', 'empty on a refusal'),
             ('trigger_firing', 'error', 'only a refusal or a failure has one'),
             ('trigger_firing', 'delivery_id', 'a delivery that named none'),
             ('engine_run', 'triggered_by', 'a run no trigger caused'),
             ('engine_run', 'trigger_firing_id', 'a run no trigger caused')) AS x(t, c, why);

-- ---------------------------------------------------------------------------
-- Primary keys
-- ---------------------------------------------------------------------------
SELECT has_pk('flowforge', t, format('%s has a primary key', t))
FROM unnest(ARRAY['organization', 'membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency',
                  'scheduled_trigger', 'workflow_run', 'task_run', 'idempotency_key', 'outbox_message',
                  'task_run_event', 'queue', 'setting', 'api_key_usage', 'server_secret', 'engine_run', 'work_item',
                  'agent', 'affinity_binding', 'engine', 'graph_run', 'graph_step', 'graph_visit', 'graph_edge',
                  'machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen', 'machine_timer',
                  'checkpoint', 'checkpoint_page', 'trigger_secret', 'trigger_firing', 'trigger_delivery']) AS t;
-- Since 0034 every tenant table's key ends with organization_id (Citus: a key
-- is enforced within one shard; tests/sql/00_catalog/citus_readiness.sql).
SELECT col_is_pk('flowforge', 'task_dependency', ARRAY['task_id', 'depends_on_task_id', 'organization_id']::name[],
                 'task_dependency is keyed by the edge (task_id, depends_on_task_id) in its organization');
SELECT col_is_pk('flowforge', 'idempotency_key', ARRAY['organization_id', 'key']::name[],
                 'idempotency_key is keyed by (organization_id, key)');
SELECT col_is_pk('flowforge', 'task_run', ARRAY['id', 'organization_id']::name[], 'task_run is keyed by (id, organization_id)');
SELECT col_is_pk('flowforge', 'queue', ARRAY['organization_id', 'name']::name[], 'queue is keyed by (organization_id, name)');
SELECT col_is_pk('flowforge', 'api_key_usage', ARRAY['api_key_id', 'organization_id']::name[], 'api_key_usage is keyed by its key');
SELECT col_is_pk('flowforge', 'server_secret', 'singleton', 'server_secret is keyed by its singleton flag');
SELECT col_is_pk('flowforge', 'setting', 'singleton', 'setting is keyed by its singleton flag');
SELECT col_is_pk('flowforge', t, ARRAY['id', 'organization_id']::name[], format('%s is keyed by (id, organization_id)', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run']) AS t;
SELECT col_is_pk('flowforge', 'graph_step', ARRAY['run_id', 'step', 'organization_id']::name[],
                 'graph_step is keyed by (run_id, step, organization_id): one row per step');
SELECT col_is_pk('flowforge', 'graph_visit', ARRAY['run_id', 'node', 'organization_id']::name[],
                 'graph_visit is keyed by (run_id, node, organization_id): one counter per node');
SELECT col_is_pk('flowforge', 'graph_edge', ARRAY['from_task_id', 'position', 'organization_id']::name[],
                 'graph_edge is keyed by (from_task_id, position, organization_id): a node''s edges in the order they are tried');
SELECT col_is_pk('flowforge', t, ARRAY['id', 'organization_id']::name[], format('%s is keyed by (id, organization_id)', t))
FROM unnest(ARRAY['machine_run', 'machine_timer']) AS t;
SELECT col_is_pk('flowforge', 'machine_transition', ARRAY['run_id', 'n', 'organization_id']::name[],
                 'machine_transition is keyed by (run_id, n, organization_id): one entry per place in the history');
SELECT col_is_pk('flowforge', 'machine_event_queue', ARRAY['run_id', 'seq', 'organization_id']::name[],
                 'machine_event_queue is keyed by (run_id, seq, organization_id): the arrival order');
SELECT col_is_pk('flowforge', 'machine_event_seen', ARRAY['run_id', 'event_id', 'organization_id']::name[],
                 'machine_event_seen is keyed by (run_id, event_id, organization_id): one row per event id a run has seen');
SELECT col_is_pk('flowforge', 'checkpoint', ARRAY['id', 'organization_id']::name[], 'checkpoint is keyed by (id, organization_id)');
SELECT col_is_pk('flowforge', 'checkpoint_page', ARRAY['checkpoint_id', 'page', 'organization_id']::name[],
                 'checkpoint_page is keyed by (checkpoint_id, page, organization_id): a child reads one page by key');
SELECT col_is_pk('flowforge', 'trigger_secret', ARRAY['trigger_id', 'organization_id']::name[],
                 'trigger_secret is keyed by its trigger: one key per webhook');
-- 0032: the history is partitioned by time; a partitioned table's keys include its partition column, and
-- organization_id (Citus: every key within a tenant).
SELECT col_is_pk('flowforge', 'trigger_firing', ARRAY['organization_id', 'id', 'recorded_at']::name[],
                 'trigger_firing is keyed by (organization_id, id, recorded_at): a firing by id within its tenant, its month');
SELECT col_is_pk('flowforge', 'task_run_event', ARRAY['organization_id', 'created_at', 'id']::name[],
                 'task_run_event is keyed by (organization_id, created_at, id): random ids, appended in time order');
SELECT col_is_pk('flowforge', 'audit_log', ARRAY['organization_id', 'id', 'created_at']::name[],
                 'audit_log is keyed by (organization_id, id, created_at)');
SELECT col_is_pk('flowforge', 'trigger_delivery', ARRAY['organization_id', 'trigger_id', 'delivery_id']::name[],
                 'trigger_delivery is keyed by (organization_id, trigger_id, delivery_id): one firing per delivery');
SELECT results_eq(
    $$SELECT c.relname::text COLLATE "default", pg_get_partkeydef(c.oid)
      FROM pg_class c WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind = 'p' ORDER BY 1$$,
    $$VALUES ('audit_log', 'RANGE (created_at)'), ('task_run_event', 'RANGE (created_at)'),
             ('trigger_firing', 'RANGE (recorded_at)')$$,
    'the partitioned tables are exactly the three history tables, by range of their time (trigger_firing: ours, not the source''s)');
SELECT is((SELECT conname::text FROM pg_constraint WHERE conrelid = 'flowforge.trigger_delivery'::regclass AND contype = 'p'),
          'trigger_firing_delivery_uq', 'trigger_delivery''s key keeps the name of the constraint it carries on (0022)');

-- ---------------------------------------------------------------------------
-- Foreign keys: each one, then the full set with its delete rule
-- ---------------------------------------------------------------------------
SELECT fk_ok('flowforge', 'membership', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'api_key', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'audit_log', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'workflow', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'task', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'task', ARRAY['workflow_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'task_dependency', ARRAY['workflow_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'task_dependency', ARRAY['task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'task_dependency', ARRAY['depends_on_task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'scheduled_trigger', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'workflow_run', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'workflow_run', ARRAY['workflow_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'task_run', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'task_run', ARRAY['workflow_run_id', 'organization_id'], 'flowforge', 'workflow_run', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'task_run', ARRAY['task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'idempotency_key', 'organization_id', 'flowforge', 'organization', 'id');
-- An idempotency key names a run of any engine: its directory row (0018).
SELECT fk_ok('flowforge', 'idempotency_key', ARRAY['organization_id', 'workflow_run_id'], 'flowforge', 'engine_run',
             ARRAY['organization_id', 'run_id']);
SELECT fk_ok('flowforge', 'outbox_message', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'outbox_message', ARRAY['task_run_id', 'organization_id'], 'flowforge', 'task_run', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'outbox_message', ARRAY['workflow_run_id', 'organization_id'], 'flowforge', 'workflow_run', ARRAY['id', 'organization_id']);
SELECT hasnt_fk('flowforge', 'task_run_event', 'task_run_event has no foreign key (history outlives runs; no key-share lock per transition)');
SELECT fk_ok('flowforge', 'queue', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'api_key_usage', ARRAY['api_key_id', 'organization_id'], 'flowforge', 'api_key', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'api_key_usage', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', t, 'organization_id', 'flowforge', 'organization', 'id')
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'engine', 'graph_run', 'graph_edge']) AS t;
SELECT fk_ok('flowforge', 'engine_run', ARRAY['definition_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'graph_run', ARRAY['definition_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'work_item', ARRAY['parent_work_item_id', 'organization_id'], 'flowforge', 'work_item', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'work_item', ARRAY['task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'graph_step', ARRAY['organization_id', 'run_id'], 'flowforge', 'graph_run', ARRAY['organization_id', 'run_id']);
SELECT fk_ok('flowforge', 'graph_visit', ARRAY['organization_id', 'run_id'], 'flowforge', 'graph_run', ARRAY['organization_id', 'run_id']);
SELECT fk_ok('flowforge', 'graph_edge', ARRAY['workflow_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'graph_edge', ARRAY['from_task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'graph_edge', ARRAY['to_task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
-- A binding names its agent by name, within the organization (other tables store the name, never the id).
SELECT fk_ok('flowforge', 'affinity_binding', ARRAY['organization_id', 'agent_id'], 'flowforge', 'agent', ARRAY['organization_id', 'name']);
-- 0017: a machine run keeps its tenant and definition; its queue, seen ids and timers hang off it.
SELECT fk_ok('flowforge', 'machine_run', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'machine_run', ARRAY['definition_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', t, ARRAY['organization_id', 'run_id'], 'flowforge', 'machine_run', ARRAY['organization_id', 'run_id'])
FROM unnest(ARRAY['machine_event_queue', 'machine_event_seen', 'machine_timer']) AS t;
SELECT hasnt_fk('flowforge', 'machine_transition', 'machine_transition has no foreign key (history outlives runs, like task_run_event)');
-- 0020: a checkpoint keeps its tenant, definition and node; it goes with its run's directory row; pages and
-- children go with it.
SELECT fk_ok('flowforge', 'checkpoint', 'organization_id', 'flowforge', 'organization', 'id');
SELECT fk_ok('flowforge', 'checkpoint', ARRAY['definition_id', 'organization_id'], 'flowforge', 'workflow', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'checkpoint', ARRAY['task_id', 'organization_id'], 'flowforge', 'task', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'checkpoint', ARRAY['organization_id', 'run_id'], 'flowforge', 'engine_run', ARRAY['organization_id', 'run_id']);
SELECT fk_ok('flowforge', 'checkpoint_page', ARRAY['checkpoint_id', 'organization_id'], 'flowforge', 'checkpoint', ARRAY['id', 'organization_id']);
SELECT fk_ok('flowforge', 'work_item', ARRAY['checkpoint_id', 'organization_id'], 'flowforge', 'checkpoint', ARRAY['id', 'organization_id']);
-- 0022: a secret goes with its trigger's row; a firing names no row at all (it outlives its trigger and its run).
SELECT fk_ok('flowforge', 'trigger_secret', ARRAY['trigger_id', 'organization_id'], 'flowforge', 'scheduled_trigger', ARRAY['id', 'organization_id']);
SELECT hasnt_fk('flowforge', 'trigger_firing', 'trigger_firing has no foreign key (history outlives triggers and runs, like task_run_event)');
SELECT hasnt_fk('flowforge', 'trigger_delivery', 'trigger_delivery has no foreign key (it goes with its firing; a foreign key to a partitioned table would keep a month from being dropped)');

-- The exact set of foreign keys, with ON DELETE rule (c = CASCADE, r = RESTRICT)
-- and deferrability. task_run_event and machine_transition deliberately have no
-- FK: history outlives purges of the runs it describes. work_item.run_id
-- and engine_run.run_id name a run of any engine, so they reference no one engine's table.
-- task_run.flow_lane and work_item.flow_lane (0028) reference no flow_lane row: a key check on
-- every unit created would lock the lane row every creator of that key shares (lanes are never deleted).
SELECT results_eq(
    $$SELECT conrelid::regclass::text, conname::text COLLATE "default", confdeltype::text, condeferrable, condeferred
      FROM pg_constraint
      WHERE connamespace = 'flowforge'::regnamespace AND contype = 'f'
      ORDER BY 1, 2$$,
    $$VALUES ('flowforge.affinity_binding',  'affinity_binding_agent_fkey',         'c', false, false),
             ('flowforge.agent',             'agent_organization_fkey',             'c', false, false),
             ('flowforge.api_key',           'api_key_organization_fkey',           'c', false, false),
             ('flowforge.api_key_usage',     'api_key_usage_key_fkey',              'c', false, false),
             ('flowforge.api_key_usage',     'api_key_usage_organization_fkey',     'c', false, false),
             ('flowforge.audit_log',         'audit_log_organization_fkey',         'r', false, false),
             ('flowforge.checkpoint',        'checkpoint_definition_fkey',          'r', false, false),
             ('flowforge.checkpoint',        'checkpoint_organization_fkey',        'r', false, false),
             ('flowforge.checkpoint',        'checkpoint_run_fkey',                 'c', false, false),
             ('flowforge.checkpoint',        'checkpoint_task_fkey',                'r', false, false),
             ('flowforge.checkpoint_page',   'checkpoint_page_checkpoint_fkey',     'c', false, false),
             ('flowforge.engine',            'engine_organization_fkey',            'c', false, false),
             ('flowforge.engine_run',        'engine_run_definition_fkey',          'r', false, false),
             ('flowforge.engine_run',        'engine_run_organization_fkey',        'r', false, false),
             ('flowforge.flow_bucket',       'flow_bucket_organization_fkey',       'c', false, false),
             ('flowforge.flow_fair',         'flow_fair_organization_fkey',         'c', false, false),
             ('flowforge.flow_lane',         'flow_lane_organization_fkey',         'c', false, false),
             ('flowforge.flow_slot',         'flow_slot_organization_fkey',         'c', false, false),
             ('flowforge.graph_edge',        'graph_edge_from_fkey',                'c', false, false),
             ('flowforge.graph_edge',        'graph_edge_organization_fkey',        'r', false, false),
             ('flowforge.graph_edge',        'graph_edge_to_fkey',                  'c', false, false),
             ('flowforge.graph_edge',        'graph_edge_workflow_fkey',            'c', false, false),
             ('flowforge.graph_run',         'graph_run_definition_fkey',           'r', false, false),
             ('flowforge.graph_run',         'graph_run_organization_fkey',         'r', false, false),
             ('flowforge.graph_step',        'graph_step_run_fkey',                 'c', false, false),
             ('flowforge.graph_visit',       'graph_visit_run_fkey',                'c', false, false),
             ('flowforge.idempotency_key',   'idempotency_key_organization_fkey',   'c', false, false),
             ('flowforge.idempotency_key',   'idempotency_key_run_fkey',            'c', true,  true),
             ('flowforge.machine_event_queue', 'machine_event_queue_run_fkey',      'c', false, false),
             ('flowforge.machine_event_seen', 'machine_event_seen_run_fkey',        'c', false, false),
             ('flowforge.machine_run',       'machine_run_definition_fkey',         'r', false, false),
             ('flowforge.machine_run',       'machine_run_organization_fkey',       'r', false, false),
             ('flowforge.machine_timer',     'machine_timer_run_fkey',              'c', false, false),
             ('flowforge.membership',        'membership_organization_fkey',        'c', false, false),
             ('flowforge.outbox_message',    'outbox_message_organization_fkey',    'r', false, false),
             ('flowforge.outbox_message',    'outbox_message_task_run_fkey',        'c', false, false),
             ('flowforge.outbox_message',    'outbox_message_workflow_run_fkey',    'c', false, false),
             ('flowforge.queue',             'queue_organization_fkey',             'c', false, false),
             ('flowforge.scheduled_trigger', 'scheduled_trigger_organization_fkey', 'c', false, false),
             ('flowforge.task',              'task_organization_fkey',              'r', false, false),
             ('flowforge.task',              'task_workflow_fkey',                  'c', false, false),
             ('flowforge.task_dependency',   'task_dependency_depends_on_fkey',     'c', false, false),
             ('flowforge.task_dependency',   'task_dependency_organization_fkey',   'r', false, false),
             ('flowforge.task_dependency',   'task_dependency_task_fkey',           'c', false, false),
             ('flowforge.task_dependency',   'task_dependency_workflow_fkey',       'c', false, false),
             ('flowforge.task_run',          'task_run_organization_fkey',          'r', false, false),
             ('flowforge.task_run',          'task_run_task_fkey',                  'r', false, false),
             ('flowforge.task_run',          'task_run_workflow_run_fkey',          'c', false, false),
             ('flowforge.trigger_secret',    'trigger_secret_trigger_fkey',         'c', false, false),
             ('flowforge.work_item',         'work_item_checkpoint_fkey',           'c', false, false),
             ('flowforge.work_item',         'work_item_organization_fkey',         'r', false, false),
             ('flowforge.work_item',         'work_item_parent_fkey',               'c', false, false),
             ('flowforge.work_item',         'work_item_task_fkey',                 'r', false, false),
             ('flowforge.workflow',          'workflow_organization_fkey',          'r', false, false),
             ('flowforge.workflow_run',      'workflow_run_organization_fkey',      'r', false, false),
             ('flowforge.workflow_run',      'workflow_run_workflow_fkey',          'r', false, false)$$,
    'every foreign key of flowforge, with its ON DELETE rule and deferrability'
);

-- ---------------------------------------------------------------------------
-- Defaults
-- ---------------------------------------------------------------------------
SELECT col_default_is('flowforge', t, 'id', 'gen_random_uuid()', format('%s.id defaults to gen_random_uuid()', t))
FROM unnest(ARRAY['organization', 'membership', 'api_key', 'audit_log', 'workflow', 'task', 'scheduled_trigger',
                  'workflow_run', 'outbox_message']) AS t;
-- Task runs and history rows are keyed by time-ordered ids since 0037 (insert locality with a large history).
SELECT col_default_is('flowforge', t, 'id', 'flowforge.uuid7()', format('%s.id defaults to flowforge.uuid7()', t))
FROM unnest(ARRAY['task_run', 'task_run_event']) AS t;
SELECT col_default_is('flowforge', t, 'created_at', 'now()', format('%s.created_at defaults to now()', t))
FROM unnest(ARRAY['organization', 'membership', 'api_key', 'audit_log', 'workflow', 'task', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue']) AS t;
SELECT col_default_is('flowforge', 'membership', 'role', 'member'::varchar, 'membership.role defaults to member');
SELECT col_default_is('flowforge', 'api_key', 'role', 'member'::varchar, 'api_key.role defaults to member');
SELECT col_default_is('flowforge', 'workflow', 'kind', 'dag'::varchar, 'workflow.kind defaults to dag');
SELECT col_default_is('flowforge', 'task', 'queue', 'default'::varchar, 'task.queue defaults to default');
SELECT col_default_is('flowforge', 'task', 'priority', 0, 'task.priority defaults to 0');
SELECT col_default_is('flowforge', 'task', 'max_attempts', 3, 'task.max_attempts defaults to 3');
SELECT col_default_is('flowforge', 'task', 'backoff', '1 second'::interval, 'task.backoff defaults to 1 second');
SELECT col_default_is('flowforge', 'task', 'backoff_factor', 2::numeric, 'task.backoff_factor defaults to 2');
SELECT col_default_is('flowforge', 'task', 'max_backoff', '10 minutes'::interval, 'task.max_backoff defaults to 10 minutes');
SELECT col_hasnt_default('flowforge', 'task', 'timeout', 'task.timeout has no default (no timeout unless the spec says so)');
SELECT col_default_is('flowforge', 'workflow_run', 'state', 'pending'::varchar, 'workflow_run.state defaults to pending');
SELECT col_default_is('flowforge', 'workflow_run', 'tasks_failed', 0, 'workflow_run.tasks_failed defaults to 0');
SELECT col_default_is('flowforge', 'task_run', 'attempt', 1, 'task_run.attempt defaults to 1');
SELECT col_default_is('flowforge', 'task_run', 'fencing_token', 0::bigint, 'task_run.fencing_token defaults to 0');
SELECT col_default_is('flowforge', 'task_run', 'remaining_deps', 0, 'task_run.remaining_deps defaults to 0');
SELECT col_hasnt_default('flowforge', 'task_run', 'state', 'task_run.state has no default: the writer decides pending or ready');
SELECT col_default_is('flowforge', 'scheduled_trigger', 'enabled', true, 'scheduled_trigger.enabled defaults to true');
SELECT col_default_is('flowforge', 'queue', 'dispatch_lease', '5 minutes'::interval, 'queue.dispatch_lease defaults to 5 minutes');
SELECT col_hasnt_default('flowforge', 'queue', 'exchange', 'queue.exchange has no default: a queue is pull until given an exchange');
SELECT col_default_is('flowforge', 'setting', 'max_payload_bytes', 1048576, 'setting.max_payload_bytes defaults to 1 MiB');
SELECT col_default_is('flowforge', 'setting', 'max_json_depth', 64, 'setting.max_json_depth defaults to 64 levels');
SELECT col_default_is('flowforge', 'outbox_message', 'next_attempt_at', 'now()',
                      'outbox_message.next_attempt_at defaults to now(): a new message is available at once');
-- 0015: time-ordered ids, the settings of liveness, the substrate's defaults.
SELECT col_default_is('flowforge', t, 'id', 'flowforge.uuid7()', format('%s.id defaults to flowforge.uuid7() (time-ordered)', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run']) AS t;
SELECT col_default_is('flowforge', t, 'created_at', 'now()', format('%s.created_at defaults to now()', t))
FROM unnest(ARRAY['engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run']) AS t;
SELECT col_default_is('flowforge', 'setting', 'agent_timeout', '60 seconds'::interval,
                      'setting.agent_timeout defaults to 60 seconds (an agent with no declared interval is inactive after it)');
SELECT col_default_is('flowforge', 'setting', 'duty_lease', '30 seconds'::interval,
                      'setting.duty_lease defaults to 30 seconds (a daemon''s hold on an organization''s duties)');
SELECT col_default_is('flowforge', 'task', 'is_final', false, 'task.is_final defaults to false');
SELECT col_default_is('flowforge', 'task', 'affinity_policy', 'soft'::varchar, 'task.affinity_policy defaults to soft');
SELECT col_hasnt_default('flowforge', 'task', 'max_visits', 'task.max_visits has no default (unbounded unless the spec says so)');
SELECT col_default_is('flowforge', 'work_item', 'status', 'pending'::varchar, 'work_item.status defaults to pending');
SELECT col_default_is('flowforge', 'work_item', 'priority', 0, 'work_item.priority defaults to 0');
SELECT col_default_is('flowforge', 'work_item', 'fencing_token', 0::bigint, 'work_item.fencing_token defaults to 0 (never issued)');
SELECT col_default_is('flowforge', 'work_item', 'retry_count', 0, 'work_item.retry_count defaults to 0');
SELECT col_default_is('flowforge', 'work_item', 'max_retries', 2, 'work_item.max_retries defaults to 2 (3 attempts, like a task)');
SELECT col_default_is('flowforge', 'work_item', 'backoff', '1 second'::interval, 'work_item.backoff defaults to 1 second');
SELECT col_default_is('flowforge', 'work_item', 'backoff_factor', 2::numeric, 'work_item.backoff_factor defaults to 2');
SELECT col_default_is('flowforge', 'work_item', 'max_backoff', '10 minutes'::interval, 'work_item.max_backoff defaults to 10 minutes');
SELECT col_hasnt_default('flowforge', 'work_item', 'next_attempt_at', 'work_item.next_attempt_at has no default: the writer''s clock (flowforge.now()) decides');
SELECT col_default_is('flowforge', 'agent', 'status', 'active'::varchar, 'agent.status defaults to active');
SELECT col_default_is('flowforge', 'agent', 'agent_type', 'remote'::varchar, 'agent.agent_type defaults to remote');
SELECT col_default_is('flowforge', 'agent', 'metadata', '{}'::jsonb, 'agent.metadata defaults to {} (no labels)');
SELECT col_hasnt_default('flowforge', 'agent', 'heartbeat_interval', 'agent.heartbeat_interval has no default (setting.agent_timeout applies)');
SELECT col_default_is('flowforge', 'affinity_binding', 'generation', 1::bigint, 'affinity_binding.generation defaults to 1');
SELECT col_default_is('flowforge', 'engine', 'generation', 0::bigint, 'engine.generation defaults to 0');
SELECT col_hasnt_default('flowforge', 'engine', 'status', 'engine.status has no default: the writer decides serving or standby');
SELECT col_default_is('flowforge', 'graph_run', 'steps', 0::bigint, 'graph_run.steps defaults to 0');
SELECT col_default_is('flowforge', 'graph_run', 'state', '{}'::jsonb, 'graph_run.state defaults to {}');
SELECT col_hasnt_default('flowforge', 'graph_run', 'status', 'graph_run.status has no default');
-- 0017: time-ordered ids; counters start at zero (the first queued event is 1); times come from the writer's clock.
SELECT col_default_is('flowforge', t, 'id', 'flowforge.uuid7()', format('%s.id defaults to flowforge.uuid7() (time-ordered)', t))
FROM unnest(ARRAY['machine_run', 'machine_timer']) AS t;
SELECT col_default_is('flowforge', 'machine_run', 'created_at', 'now()', 'machine_run.created_at defaults to now()');
SELECT col_default_is('flowforge', 'machine_run', 'context', '{}'::jsonb, 'machine_run.context defaults to {}');
SELECT col_default_is('flowforge', 'machine_run', 'input', '{}'::jsonb, 'machine_run.input defaults to {}');
SELECT col_default_is('flowforge', 'machine_run', 'transitions', 0::bigint, 'machine_run.transitions defaults to 0');
SELECT col_default_is('flowforge', 'machine_run', 'history_length', 0::bigint, 'machine_run.history_length defaults to 0');
SELECT col_default_is('flowforge', 'machine_run', 'next_event_seq', 1::bigint, 'machine_run.next_event_seq defaults to 1');
SELECT col_default_is('flowforge', 'machine_event_queue', 'payload', '{}'::jsonb, 'machine_event_queue.payload defaults to {}');
SELECT col_hasnt_default('flowforge', t, c, format('%s.%s has no default: %s', t, c, why))
FROM (VALUES ('machine_run', 'status', 'the writer decides'),
             ('machine_run', 'started_at', 'the writer''s clock (flowforge.now()) decides'),
             ('machine_transition', 'created_at', 'the writer''s clock (flowforge.now()) decides'),
             ('machine_event_queue', 'received_at', 'the writer''s clock (flowforge.now()) decides'),
             ('machine_event_seen', 'seen_at', 'the writer''s clock (flowforge.now()) decides'),
             ('machine_timer', 'fire_at', 'the writer''s clock (flowforge.now()) decides'),
             ('task', 'spec', 'only a machine''s states and fanning nodes carry one')) AS x(t, c, why);
-- 0020: a checkpoint starts at generation 1 with nothing dispatched or settled; fan-out is off for a task run
-- unless start_run says so; 100,000 elements per node unless the operator changes it.
SELECT col_default_is('flowforge', 'checkpoint', 'id', 'flowforge.uuid7()', 'checkpoint.id defaults to flowforge.uuid7() (time-ordered)');
SELECT col_default_is('flowforge', 'checkpoint', 'created_at', 'now()', 'checkpoint.created_at defaults to now()');
SELECT col_default_is('flowforge', 'checkpoint', c, d, format('checkpoint.%s defaults to %s', c, d))
FROM (VALUES ('generation', '1'), ('cursor', '0'), ('idx', '0'), ('succeeded', '0'), ('failed', '0'), ('live', '0'),
             ('done', 'false'), ('output_by_reference', 'false')) AS x(c, d);
SELECT col_hasnt_default('flowforge', 'checkpoint', c, format('checkpoint.%s has no default: the fan-out decides', c))
FROM unnest(ARRAY['total', 'max_concurrency', 'iterator_type', 'engine_kind', 'tolerated_failures', 'outcome']) AS c;
SELECT col_hasnt_default('flowforge', 'work_item', c, format('work_item.%s has no default (only a fan-out child has one)', c))
FROM unnest(ARRAY['checkpoint_id', 'checkpoint_generation', 'item_index']) AS c;
SELECT col_default_is('flowforge', 'task_run', 'fans_out', false, 'task_run.fans_out defaults to false');
-- 0028: a queue is not paused, limited or keyed until told; a unit has no lane and holds no slot until flow control gives it one.
SELECT col_default_is('flowforge', 'queue', c, false, format('queue.%s defaults to false', c))
FROM unnest(ARRAY['paused', 'keyed']) AS c;
SELECT col_hasnt_default('flowforge', 'queue', c, format('queue.%s has no default: no limit', c))
FROM unnest(ARRAY['max_running', 'rate_limit', 'rate_per']) AS c;
SELECT col_hasnt_default('flowforge', t, c, format('%s.%s has no default', t, c))
FROM (VALUES ('task', 'flow'), ('task_run', 'flow_lane'), ('task_run', 'flow_token'), ('task_run', 'flow_queue_slot'),
             ('work_item', 'flow_lane'), ('work_item', 'flow_token'), ('work_item', 'flow_queue_slot')) AS x(t, c);
SELECT col_default_is('flowforge', 'flow_lane', 'id', 'flowforge.uuid7()', 'flow_lane.id defaults to flowforge.uuid7() (time-ordered)');
SELECT col_default_is('flowforge', 'flow_slot', 'running', 0, 'flow_slot.running defaults to 0');
SELECT col_default_is('flowforge', 'flow_fair', 'pass', 0::numeric, 'flow_fair.pass defaults to 0');
SELECT col_default_is('flowforge', 'setting', 'max_fanout_items', 100000, 'setting.max_fanout_items defaults to 100,000');
-- 0022: seed 000's rows were cron triggers that start their workflow, in UTC; a firing's times are the writer's.
SELECT col_default_is('flowforge', 'scheduled_trigger', 'trigger_type', 'cron'::varchar, 'scheduled_trigger.trigger_type defaults to cron');
SELECT col_default_is('flowforge', 'scheduled_trigger', 'action', 'start'::varchar, 'scheduled_trigger.action defaults to start');
SELECT col_default_is('flowforge', 'scheduled_trigger', 'options', '{}'::jsonb, 'scheduled_trigger.options defaults to {}');
SELECT col_default_is('flowforge', 'scheduled_trigger', 'timezone', 'UTC'::text, 'scheduled_trigger.timezone defaults to UTC');
SELECT col_hasnt_default('flowforge', 'scheduled_trigger', c, format('scheduled_trigger.%s has no default', c))
FROM unnest(ARRAY['target', 'cron', 'feeder_state', 'created_by', 'updated_at', 'deleted_at']) AS c;
SELECT col_default_is('flowforge', 'trigger_secret', 'created_at', 'now()', 'trigger_secret.created_at defaults to now()');
SELECT col_default_is('flowforge', 'trigger_firing', 'id', 'flowforge.uuid7()', 'trigger_firing.id defaults to flowforge.uuid7() (time-ordered)');
SELECT col_hasnt_default('flowforge', 'trigger_firing', c, format('trigger_firing.%s has no default: %s', c, why))
FROM (VALUES ('outcome', 'the firing decides'), ('fired_on', 'the source''s time'),
             ('recorded_at', 'the writer''s clock (flowforge.now()) decides'), ('created_by', 'the actor')) AS x(c, why);
-- The seed's live and suspended, derived so they can never disagree with the
-- status and the action they summarise; the only generated columns of the schema.
SELECT results_eq(
    $$SELECT a.attrelid::regclass::text, a.attname::text COLLATE "default", a.attgenerated::text COLLATE "default",
             pg_get_expr(d.adbin, d.adrelid) COLLATE "default"
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE c.relnamespace = 'flowforge'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> ''
      ORDER BY 1, 2$$,
    $$VALUES ('flowforge.machine_run', 'live', 's', '((status)::text = ''running''::text)'),
             ('flowforge.machine_run', 'suspended', 's', '(action_item_id IS NOT NULL)'),
             ('flowforge.queue', 'flow', 's', '(paused OR (max_running IS NOT NULL) OR (rate_limit IS NOT NULL) OR keyed)')$$,
    'machine_run.live (status = running) and .suspended (action_item_id IS NOT NULL), and queue.flow (paused, '
    'limited or keyed: claimed through flow control), are GENERATED ALWAYS ... STORED, and are the schema''s only '
    'generated columns'
);
SELECT is(
    (SELECT attidentity::text FROM pg_attribute
     WHERE attrelid = 'flowforge.task_run_event'::regclass AND attname = 'seq'),
    'a',
    'task_run_event.seq is GENERATED ALWAYS AS IDENTITY (total order of history within a node)'
);
SELECT is(
    (SELECT reloptions FROM pg_class WHERE oid = 'flowforge.task_run'::regclass),
    ARRAY['fillfactor=80'],
    'task_run leaves 20% free per page so hot state updates can be HOT'
);
SELECT is(
    (SELECT reloptions FROM pg_class WHERE oid = 'flowforge.work_item'::regclass),
    ARRAY['fillfactor=80'],
    'work_item leaves 20% free per page, like task_run'
);

-- ---------------------------------------------------------------------------
-- Views: 0008's monitoring views and 0026's inspection views (their columns
-- and rows are tested in tests/sql/80_reads/inspection/).
-- ---------------------------------------------------------------------------
SELECT views_are('flowforge', ARRAY[
    'outbox_backlog', 'run_overview',
    'why_not_ready', 'queue_depth', 'stuck_runs', 'worker_load', 'tenant_usage', 'index_usage'
], 'flowforge has exactly the views of 0008 and 0026');

-- ---------------------------------------------------------------------------
-- The built-in default organization
-- ---------------------------------------------------------------------------
SELECT results_eq(
    $$SELECT id, slug::text FROM flowforge.organization WHERE id = '00000000-0000-0000-0000-000000000001'$$,
    $$VALUES ('00000000-0000-0000-0000-000000000001'::uuid, 'default')$$,
    'the built-in organization exists with its fixed id and slug ''default'''
);
SELECT is(flowforge.current_organization(), '00000000-0000-0000-0000-000000000001'::uuid,
          'current_organization() names the built-in organization (for a superuser)');
SELECT results_eq($$SELECT singleton, max_payload_bytes, max_fanout_items FROM flowforge.setting$$, $$VALUES (true, 1048576, 100000)$$,
                  'the installation settings row exists, once');
SELECT is((SELECT count(*)::int FROM flowforge.server_secret WHERE octet_length(gateway_key) = 32), 1,
          'the server secret exists, once, 256 bits');
SELECT is((SELECT count(*)::int FROM flowforge.api_key k
           WHERE NOT EXISTS (SELECT 1 FROM flowforge.api_key_usage u WHERE u.api_key_id = k.id)), 0,
          'every API key has its usage row');
SELECT is(
    (SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c
     WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind = 'r'
       AND NOT (c.relrowsecurity AND c.relforcerowsecurity)),
    NULL,
    'row-level security is enabled and FORCEd on every flowforge table'
);

SELECT * FROM finish();
ROLLBACK;
