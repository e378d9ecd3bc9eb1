-- FlowForge 0028 rollback: 0026's views back, then the flow-control triggers,
-- tables and columns dropped (their rows with them).

CREATE OR REPLACE VIEW flowforge.why_not_ready WITH (security_invoker = true) AS
WITH clock AS (
    SELECT (SELECT s.agent_timeout FROM flowforge.setting s) AS agent_timeout
), units AS (
    -- Ready task runs of any run: idx_taskrun_state_age (partial on ready).
    SELECT 'task_run'::text AS unit_kind, tr.id AS unit_id, tr.organization_id, tr.workflow_run_id AS run_id,
           'dag'::text AS engine_kind, tr.task_key::text AS name, tr.task_key::text AS node, tr.queue::text AS queue,
           tr.state::text AS status, tr.task_id, tr.attempt, tr.priority, tr.ready_at AS available_at,
           tr.created_at, tr.started_at, NULL::text AS holder, tr.fencing_token, tr.affinity_key,
           tr.affinity_policy::text AS affinity_policy, tr.worker_params, tr.error, NULL::bigint AS event_seq
    FROM flowforge.task_run tr
    WHERE tr.state = 'ready'
    UNION ALL
    -- Pending task runs of the live runs.
    SELECT 'task_run', tr.id, tr.organization_id, tr.workflow_run_id, 'dag', tr.task_key, tr.task_key, tr.queue,
           tr.state, tr.task_id, tr.attempt, tr.priority, tr.ready_at, tr.created_at, tr.started_at, NULL,
           tr.fencing_token, tr.affinity_key, tr.affinity_policy, tr.worker_params, tr.error, NULL
    FROM flowforge.workflow_run r
    JOIN flowforge.task_run tr ON tr.workflow_run_id = r.id AND tr.state = 'pending'
    WHERE r.state IN ('pending', 'running')
    UNION ALL
    -- Running task runs no worker has: a fan-out's held unit, a push task in the outbox
    -- (idx_taskrun_lease_expiry, partial on running).
    SELECT 'task_run', tr.id, tr.organization_id, tr.workflow_run_id, 'dag', tr.task_key, tr.task_key, tr.queue,
           tr.state, tr.task_id, tr.attempt, tr.priority, tr.ready_at, tr.created_at, tr.started_at, tr.lease_owner,
           tr.fencing_token, tr.affinity_key, tr.affinity_policy, tr.worker_params, tr.error, NULL
    FROM flowforge.task_run tr
    WHERE tr.state = 'running' AND tr.lease_owner IN ('flowforge:fan-out', 'dispatch')
    UNION ALL
    -- Pending work items: work_item_status_priority_idx (partial on pending). A fan-out child shows as key[i].
    SELECT 'work_item', w.id, w.organization_id, w.run_id, w.engine_kind,
           w.task_name || coalesce('[' || w.item_index || ']', ''), w.task_name, w.queue, w.status, w.task_id,
           w.retry_count + 1, w.priority, w.next_attempt_at, w.created_at, w.dispatched_at, NULL,
           w.fencing_token, w.affinity_key, w.affinity_policy, w.worker_params, w.error, NULL
    FROM flowforge.work_item w
    WHERE w.status = 'pending'
    UNION ALL
    -- A graph visit's item held while its fan-out's children run (work_item_lease_idx, partial on dispatched).
    SELECT 'work_item', w.id, w.organization_id, w.run_id, w.engine_kind, w.task_name, w.task_name, w.queue,
           w.status, w.task_id, w.retry_count + 1, w.priority, w.next_attempt_at, w.created_at, w.dispatched_at,
           w.leased_by, w.fencing_token, w.affinity_key, w.affinity_policy, w.worker_params, w.error, NULL
    FROM flowforge.work_item w
    WHERE w.status = 'dispatched' AND w.leased_by = 'flowforge:fan-out'
    UNION ALL
    -- Events that arrived while their machine was suspended, in arrival order.
    SELECT 'machine_event', NULL::uuid, q.organization_id, q.run_id, 'statemachine', q.event, NULL, NULL, 'queued',
           NULL::uuid, NULL::integer, NULL::integer, q.received_at, q.received_at, NULL::timestamptz, NULL, NULL::bigint,
           NULL, NULL, NULL::jsonb, NULL, q.seq
    FROM flowforge.machine_event_queue q
)
SELECT u.organization_id, o.slug::text AS organization, u.unit_kind, u.unit_id, u.run_id, u.engine_kind, u.name,
       u.queue, u.status, r.reason,
       CASE r.reason
           WHEN 'run_cancelled' THEN format('its run was cancelled at %s: nothing will take this %s', run.ended_at,
                                            replace(u.unit_kind, '_', ' '))
           WHEN 'run_ended' THEN format('its run already %s at %s: nothing will take this %s', run.status,
                                        run.ended_at, replace(u.unit_kind, '_', ' '))
           WHEN 'waiting_on_dependencies' THEN format('waiting on %s', (
               SELECT string_agg(d.value ->> 'key' || ' (' || (d.value ->> 'state') || ')', ', ')
               FROM jsonb_array_elements(f.waiting_on) AS d))
           WHEN 'backoff' THEN format('in backoff after attempt %s failed%s; claimable from %s', u.attempt - 1,
                                      coalesce(': ' || left(u.error, 200), ''), u.available_at)
           WHEN 'fan_out_at_concurrency_limit' THEN format(
               'its map is at its concurrency limit: %s of %s children live, %s of %s elements settled, %s not yet dispatched',
               f.checkpoint ->> 'live', f.checkpoint ->> 'max_concurrency', f.checkpoint ->> 'idx',
               f.checkpoint ->> 'total', (f.checkpoint ->> 'total')::bigint - (f.checkpoint ->> 'cursor')::bigint)
           WHEN 'fan_out_children_running' THEN format(
               'waiting for its fan-out: %s children live, %s of %s elements settled', coalesce(f.checkpoint ->> 'live', '?'),
               coalesce(f.checkpoint ->> 'idx', '?'), coalesce(f.checkpoint ->> 'total', '?'))
           WHEN 'machine_suspended' THEN format(
               'queued (#%s) while its machine runs action %s in state %s (the action''s item is %s%s); applied when it ends',
               u.event_seq, coalesce(f.machine ->> 'action', '?'), coalesce(f.machine ->> 'state', '?'),
               coalesce(f.machine ->> 'action_status', 'gone'), coalesce(', held by ' || (f.machine ->> 'held_by'), ''))
           WHEN 'awaiting_broker' THEN format(
               'dispatched to exchange %s, waiting for the broker: its message is not published%s',
               f.outbox ->> 'exchange',
               CASE WHEN (f.outbox ->> 'publish_attempts')::int > 0
                    THEN format(' (refused %s, last: %s; next try %s)',
                                CASE WHEN f.outbox ->> 'publish_attempts' = '1' THEN 'once'
                                     ELSE (f.outbox ->> 'publish_attempts') || ' times' END,
                                f.outbox ->> 'last_error', f.outbox ->> 'next_attempt_at')
                    ELSE '' END)
           WHEN 'pinned_to_unavailable_agent' THEN format(
               'hard-pinned by affinity key %s to agent %s, which is %s: it waits until that agent is active again or '
               'its pins are released', u.affinity_key, f.pin ->> 'agent', f.pin ->> 'status')
           WHEN 'no_agent_with_labels' THEN format(
               'asks for labels %s, which no active registered agent has', u.worker_params)
           WHEN 'affinity_needs_agent' THEN format(
               'pinned by affinity key %s: only a registered agent may take it, and none is active', u.affinity_key)
           WHEN 'awaiting_dispatch' THEN format(
               'ready since %s on push queue %s: the daemon''s dispatch duty (tick) hands it to the outbox',
               u.available_at, u.queue)
           ELSE format('ready since %s, not claimed yet%s', u.available_at,
                       CASE WHEN f.pin ->> 'status' = 'active'
                            THEN format(' (pinned to agent %s, the only one that may take it)', f.pin ->> 'agent')
                            WHEN f.pin IS NOT NULL
                            THEN format(' (pinned to agent %s, which is %s: the next agent to claim it takes the pin)',
                                        f.pin ->> 'agent', f.pin ->> 'status')
                            ELSE '' END)
       END AS explanation,
       CASE WHEN r.reason IN ('run_cancelled', 'run_ended') THEN run.ended_at
            WHEN r.reason = 'waiting_on_dependencies' THEN u.created_at
            WHEN r.reason = 'backoff' THEN coalesce(u.started_at, u.created_at)
            WHEN r.reason IN ('fan_out_at_concurrency_limit', 'fan_out_children_running', 'awaiting_broker')
                 THEN u.started_at
            WHEN r.reason = 'machine_suspended' THEN u.created_at
            ELSE u.available_at END AS since,
       CASE WHEN r.reason = 'backoff' THEN u.available_at
            WHEN r.reason = 'awaiting_broker' THEN (f.outbox ->> 'next_attempt_at')::timestamptz END AS until,
       jsonb_strip_nulls(jsonb_build_object(
           'run_status', run.status, 'attempt', u.attempt, 'priority', u.priority, 'holder', u.holder,
           'waiting_on', f.waiting_on, 'checkpoint', f.checkpoint, 'outbox', f.outbox, 'machine', f.machine,
           'affinity', CASE WHEN u.affinity_key IS NOT NULL THEN jsonb_build_object(
                           'key', u.affinity_key, 'policy', u.affinity_policy, 'pinned_to', f.pin ->> 'agent',
                           'agent_status', f.pin ->> 'status') END,
           'worker_params', u.worker_params, 'error', left(u.error, 1000), 'seq', u.event_seq)) AS detail
FROM units u
CROSS JOIN clock c
LEFT JOIN flowforge.organization o ON o.id = u.organization_id
-- The run's status, from its engine's own row (one key lookup).
LEFT JOIN LATERAL (
    SELECT wr.state::text AS status, wr.finished_at AS ended_at FROM flowforge.workflow_run wr
    WHERE u.engine_kind = 'dag' AND wr.id = u.run_id
    UNION ALL
    SELECT g.status, g.finished_at FROM flowforge.graph_run g
    WHERE u.engine_kind = 'graph' AND g.organization_id = u.organization_id AND g.run_id = u.run_id
    UNION ALL
    SELECT m.status, m.finished_at FROM flowforge.machine_run m
    WHERE u.engine_kind = 'statemachine' AND m.organization_id = u.organization_id AND m.run_id = u.run_id
) run ON true
CROSS JOIN LATERAL (
    SELECT
        -- A pending task run's upstream tasks that have not succeeded (task_dependency_pkey, uniq_taskrun_per_run_task).
        CASE WHEN u.unit_kind = 'task_run' AND u.status = 'pending' THEN (
            SELECT coalesce(jsonb_agg(jsonb_build_object('key', up.task_key, 'state', up.state) ORDER BY up.task_key), '[]')
            FROM flowforge.task_dependency td
            JOIN flowforge.task_run up ON up.workflow_run_id = u.run_id AND up.task_id = td.depends_on_task_id
            WHERE td.task_id = u.task_id AND up.state <> 'succeeded') END AS waiting_on,
        -- A fanning unit's progress (checkpoint_run_node_uq).
        CASE WHEN u.holder = 'flowforge:fan-out' THEN (
            SELECT jsonb_build_object('node', cp.node_name, 'iterator', cp.iterator_type, 'generation', cp.generation,
                                      'cursor', cp.cursor, 'idx', cp.idx, 'total', cp.total, 'succeeded', cp.succeeded,
                                      'failed', cp.failed, 'live', cp.live, 'max_concurrency', cp.max_concurrency)
            FROM flowforge.checkpoint cp
            WHERE cp.organization_id = u.organization_id AND cp.run_id = u.run_id AND cp.node_name = u.node) END
            AS checkpoint,
        -- A dispatched push task's message of its generation, while unpublished (uniq_outbox_per_taskrun_generation).
        CASE WHEN u.unit_kind = 'task_run' AND u.holder = 'dispatch' THEN (
            SELECT jsonb_build_object('message_id', m.id, 'exchange', m.exchange, 'routing_key', m.routing_key,
                                      'publish_attempts', m.publish_attempts, 'last_error', m.last_error,
                                      'next_attempt_at', m.next_attempt_at, 'created_at', m.created_at)
            FROM flowforge.outbox_message m
            WHERE m.task_run_id = u.unit_id AND m.fencing_token_snapshot = u.fencing_token
              AND m.published_at IS NULL) END AS outbox,
        -- The machine a queued event or an action item belongs to, and its action (machine_run_runid_uq).
        CASE WHEN u.engine_kind = 'statemachine' THEN (
            SELECT jsonb_build_object('state', m.state, 'suspended', m.suspended, 'action_item_id', m.action_item_id,
                                      'action', a.task_name, 'action_status', a.status, 'held_by', a.leased_by)
            FROM flowforge.machine_run m
            LEFT JOIN flowforge.work_item a ON a.id = m.action_item_id
            WHERE m.organization_id = u.organization_id AND m.run_id = u.run_id) END AS machine,
        -- The agent an affinity key is pinned to, with its effective status (the rule of _agent_status,
        -- inline: the read role may not call internal functions; a twin test compares them).
        CASE WHEN u.affinity_key IS NOT NULL THEN (
            SELECT jsonb_build_object('agent', b.agent_id, 'status',
                       CASE WHEN a.status IS NULL OR a.status = 'inactive' OR a.last_heartbeat_at IS NULL
                                 OR a.last_heartbeat_at < flowforge.now() - coalesce(3 * a.heartbeat_interval, c.agent_timeout)
                            THEN 'inactive' ELSE a.status END)
            FROM flowforge.affinity_binding b
            LEFT JOIN flowforge.agent a ON a.organization_id = b.organization_id AND a.name = b.agent_id
            WHERE b.organization_id = u.organization_id AND b.affinity_key = u.affinity_key) END AS pin,
        -- Is there an active registered agent that could take it (labels contain its selectors)?
        CASE WHEN u.worker_params <> '{}' OR u.affinity_key IS NOT NULL THEN EXISTS (
            SELECT 1 FROM flowforge.agent a
            WHERE a.organization_id = u.organization_id AND a.deleted_at IS NULL
              AND (u.worker_params IS NULL OR a.metadata @> u.worker_params)
              AND a.status = 'active'
              AND a.last_heartbeat_at >= flowforge.now() - coalesce(3 * a.heartbeat_interval, c.agent_timeout)) END
            AS eligible_agent,
        -- Is its queue a push queue (idx_queue_push)?
        CASE WHEN u.unit_kind = 'task_run' AND u.status = 'ready' THEN EXISTS (
            SELECT 1 FROM flowforge.queue q
            WHERE q.organization_id = u.organization_id AND q.name = u.queue AND q.exchange IS NOT NULL) END AS push
    OFFSET 0  -- computed once per unit, however often the reason and the words below refer to them
) f
CROSS JOIN LATERAL (
    SELECT CASE
        WHEN run.status IS NOT NULL AND run.status NOT IN ('pending', 'running')
            THEN CASE WHEN run.status = 'cancelled' THEN 'run_cancelled' ELSE 'run_ended' END
        WHEN u.unit_kind = 'task_run' AND u.status = 'pending' THEN 'waiting_on_dependencies'
        -- FLOW CONTROL (issue 18, migrations 0024/0025: queue.paused, max_running, rate limits) —
        -- a paused queue's reason goes here, once that migration is chained before this one:
        --     WHEN <the unit's queue row>.paused THEN 'queue_paused'
        -- (and a queue or key at its concurrency or rate limit after it).
        WHEN u.status IN ('ready', 'pending') AND u.available_at > flowforge.now() THEN 'backoff'
        WHEN u.holder = 'flowforge:fan-out' AND (f.checkpoint ->> 'live')::int >= (f.checkpoint ->> 'max_concurrency')::int
             AND (f.checkpoint ->> 'cursor')::bigint < (f.checkpoint ->> 'total')::bigint
            THEN 'fan_out_at_concurrency_limit'
        WHEN u.holder = 'flowforge:fan-out' THEN 'fan_out_children_running'
        WHEN u.unit_kind = 'machine_event' THEN 'machine_suspended'
        WHEN u.holder = 'dispatch' THEN 'awaiting_broker'
        WHEN u.affinity_policy = 'hard' AND f.pin ->> 'status' IN ('draining', 'inactive')
            THEN 'pinned_to_unavailable_agent'
        WHEN u.worker_params <> '{}' AND NOT f.eligible_agent THEN 'no_agent_with_labels'
        WHEN u.affinity_key IS NOT NULL AND (f.pin IS NULL OR f.pin ->> 'status' <> 'active') AND NOT f.eligible_agent
            THEN 'affinity_needs_agent'
        WHEN f.push THEN 'awaiting_dispatch'
        ELSE 'ready'
    END AS reason
) r
-- A push task whose message was published is with its consumer: dispatched, not waiting.
WHERE NOT (u.holder = 'dispatch' AND u.status = 'running' AND f.outbox IS NULL);
COMMENT ON VIEW flowforge.why_not_ready IS
  'Why is this work not running? Every task run, work item or queued machine event that waits — pending, ready, '
  'held by its fan-out, dispatched but unpublished, queued behind a suspended machine — with the first reason that '
  'holds: run_cancelled, run_ended, waiting_on_dependencies (keys and states in detail.waiting_on), backoff (until), '
  'fan_out_at_concurrency_limit, fan_out_children_running, machine_suspended (which action), awaiting_broker (the '
  'outbox), pinned_to_unavailable_agent, no_agent_with_labels, affinity_needs_agent, awaiting_dispatch, ready (since); '
  'queue_paused is reserved for flow control. explanation says it in words, detail in data.';

-- queue_depth lost columns: dropped and created again (with its owner and grant).
DROP VIEW flowforge.queue_depth;
CREATE VIEW flowforge.queue_depth WITH (security_invoker = true) AS
WITH units AS (
    -- Each state through the partial index that holds only it (a state IN (...) would not use them).
    SELECT tr.organization_id, 'task_run'::text AS unit_kind, tr.queue::text AS queue, 'ready'::text AS status,
           tr.ready_at AS at, NULL::text AS holder
    FROM flowforge.task_run tr WHERE tr.state = 'ready'                      -- idx_taskrun_state_age
    UNION ALL
    SELECT tr.organization_id, 'task_run', tr.queue, 'running', NULL, tr.lease_owner
    FROM flowforge.task_run tr WHERE tr.state = 'running'                    -- idx_taskrun_lease_expiry
    UNION ALL
    SELECT w.organization_id, 'work_item', w.queue, 'ready', w.next_attempt_at, NULL
    FROM flowforge.work_item w WHERE w.status = 'pending'                    -- work_item_status_priority_idx
    UNION ALL
    SELECT w.organization_id, 'work_item', w.queue, 'running', NULL, w.leased_by
    FROM flowforge.work_item w WHERE w.status = 'dispatched'                 -- work_item_lease_idx
), live AS (
    SELECT u.organization_id, u.unit_kind, u.queue,
           count(*) FILTER (WHERE u.status = 'ready' AND u.at <= flowforge.now()) AS ready,
           count(*) FILTER (WHERE u.status = 'ready' AND u.at > flowforge.now()) AS scheduled,
           count(*) FILTER (WHERE u.status = 'running' AND u.holder IS DISTINCT FROM 'flowforge:fan-out') AS running,
           min(u.at) FILTER (WHERE u.status = 'ready' AND u.at <= flowforge.now()) AS oldest_ready_at,
           min(u.at) FILTER (WHERE u.status = 'ready' AND u.at > flowforge.now()) AS next_scheduled_at
    FROM units u
    GROUP BY u.organization_id, u.unit_kind, u.queue
), claims AS (
    -- Each claim's queue by its unit's primary key (a lookup per claim of the minute, never a join of the table).
    SELECT e.organization_id, CASE WHEN e.work_item_id IS NULL THEN 'task_run' ELSE 'work_item' END AS unit_kind,
           CASE WHEN e.work_item_id IS NULL
                THEN (SELECT tr.queue::text FROM flowforge.task_run tr WHERE tr.id = e.task_run_id)
                ELSE (SELECT w.queue::text FROM flowforge.work_item w WHERE w.id = e.work_item_id) END AS queue,
           count(*) AS claims
    FROM flowforge.task_run_event e
    WHERE e.kind = 'claimed' AND e.created_at > flowforge.now() - interval '1 minute' AND e.created_at <= flowforge.now()
    GROUP BY 1, 2, 3
)
SELECT k.organization_id, o.slug::text AS organization, k.unit_kind, k.queue,
       CASE WHEN k.unit_kind = 'work_item' THEN 'pull'
            WHEN q.exchange IS NOT NULL THEN 'push' ELSE 'pull' END AS delivery,
       -- FLOW CONTROL (issue 18, 0024/0025): the queue's paused flag and limits go here.
       coalesce(l.ready, 0) AS ready, coalesce(l.running, 0) AS running, coalesce(l.scheduled, 0) AS scheduled,
       l.oldest_ready_at, flowforge.now() - l.oldest_ready_at AS oldest_ready_age, l.next_scheduled_at,
       coalesce(cl.claims, 0) AS claims_last_minute
FROM (SELECT organization_id, unit_kind, queue FROM live
      UNION
      SELECT organization_id, unit_kind, queue FROM claims WHERE queue IS NOT NULL) k
LEFT JOIN live l ON (l.organization_id, l.unit_kind, l.queue) = (k.organization_id, k.unit_kind, k.queue)
LEFT JOIN claims cl ON (cl.organization_id, cl.unit_kind, cl.queue) = (k.organization_id, k.unit_kind, k.queue)
LEFT JOIN flowforge.organization o ON o.id = k.organization_id
LEFT JOIN flowforge.queue q ON k.unit_kind = 'task_run' AND q.organization_id = k.organization_id AND q.name = k.queue;
COMMENT ON VIEW flowforge.queue_depth IS
  'How deep is each queue? Per organization, queue and kind of unit (task_run: DAG tasks, claim(); work_item: graph '
  'visits, machine actions, fan-out children, claim_work()): ready now, running (or dispatched), scheduled later '
  '(a backoff or a retry), the oldest ready one and its age, and claims in the last minute (claimed events, through '
  'idx_event_throughput). A queue with nothing live and no recent claim has no row.';
ALTER VIEW flowforge.queue_depth OWNER TO flowforge_owner;
GRANT SELECT ON flowforge.queue_depth TO flowforge_readonly;

DROP TRIGGER work_item_flow_release_deleted ON flowforge.work_item;
DROP TRIGGER work_item_flow_release ON flowforge.work_item;
DROP TRIGGER task_run_flow_release_deleted ON flowforge.task_run;
DROP TRIGGER task_run_flow_release ON flowforge.task_run;
DROP FUNCTION flowforge._flow_release();

DROP TABLE flowforge.flow_fair;
DROP TABLE flowforge.flow_bucket;
DROP TABLE flowforge.flow_slot;
DROP TABLE flowforge.flow_lane;

ALTER TABLE flowforge.work_item DROP CONSTRAINT work_item_flow_queue_slot_has_token, DROP CONSTRAINT work_item_flow_token_valid,
    DROP COLUMN flow_queue_slot, DROP COLUMN flow_token, DROP COLUMN flow_lane;
ALTER TABLE flowforge.task_run DROP CONSTRAINT taskrun_flow_queue_slot_has_token, DROP CONSTRAINT taskrun_flow_token_valid,
    DROP COLUMN flow_queue_slot, DROP COLUMN flow_token, DROP COLUMN flow_lane;
ALTER TABLE flowforge.task DROP CONSTRAINT task_flow_is_object, DROP COLUMN flow;
DROP INDEX flowforge.queue_flow_idx;
ALTER TABLE flowforge.queue DROP CONSTRAINT queue_rate_valid, DROP CONSTRAINT queue_max_running_valid,
    DROP COLUMN flow, DROP COLUMN keyed, DROP COLUMN rate_per, DROP COLUMN rate_limit, DROP COLUMN max_running,
    DROP COLUMN paused;
