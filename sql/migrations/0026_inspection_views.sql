-- FlowForge 0026: inspection — the DBA's questions, one SELECT each (issue 19).
--
--   why_not_ready  every task run, work item or queued machine event that waits, and why
--   queue_depth    per organization and queue, both queues: ready, scheduled, running, age, claims
--   stuck_runs     the seed's stuck-run sweep, for every engine, with what each waits on
--   worker_load    per worker or agent: what it holds, since when, until when, its heartbeat
--   tenant_usage   per organization: runs by engine and state, work finished lately, history size
--   index_usage    every flowforge index: idx_scan, size, and the query it serves
--
-- Views, security_invoker like 0008's (the reader's own rights and row-level
-- security apply), owned by flowforge_owner, readable by flowforge_readonly
-- (the DBA read role) and superusers. They live in a migration, not in
-- sql/functions/, because a rollback must drop them before the tables they
-- read. Each reads the live rows through the partial indexes that hold them
-- and never counts history row by row; 0027 adds the indexes the recent
-- windows (claims per minute, work finished per hour and day) and the graph
-- and machine sweeps need. Every index gets the query it serves as its
-- comment (index_usage shows it; the catalog tests require one on every index).
-- The clock is flowforge.now(), the one clock (tests steer it).
-- depends: 0025_agent_live_idx

-- Bootstrap: the views read the clock, and on a fresh install the function
-- files are applied after the migrations. The post-migrate re-apply of
-- sql/functions/ replaces it with the same text (00_core/00_meta.sql).
DO $$
BEGIN
    IF to_regprocedure('flowforge.now()') IS NULL THEN
        CREATE FUNCTION flowforge.now() RETURNS timestamptz
        LANGUAGE sql STABLE PARALLEL SAFE
        AS $f$ SELECT pg_catalog.now() $f$;
    END IF;
END;
$$;

-- The query each index serves (docs/data-model.md's index tables), kept on the
-- index itself so index_usage can show it beside idx_scan and the size:
-- the seed's rule — an index whose query nobody can name should not exist —
-- as a catalog invariant (tests/sql/00_catalog/indexes.sql: every flowforge
-- index has a comment, so a new index without one fails the suite).

-- organization, membership, api_key, api_key_usage, audit_log
COMMENT ON INDEX flowforge.organization_pkey IS
  'an organization by id: every tenant foreign key, identity (its slug), the inspection views'' names';
COMMENT ON INDEX flowforge.uniq_organization_slug IS
  'an organization by slug (create_organization, add_member, create_api_key, onboard_login); one tenant per handle';
COMMENT ON INDEX flowforge.membership_pkey IS 'a membership by id (row identity; lookups go by member)';
COMMENT ON INDEX flowforge.uniq_membership_org_member IS
  'an organization''s members, and one role per (organization, login) (add_member''s upsert, remove_member)';
COMMENT ON INDEX flowforge.idx_membership_member IS
  'identity: a login role''s organization, on every API call (current_organization)';
COMMENT ON INDEX flowforge.api_key_pkey IS 'an API key by id: revoke_api_key, api_key_usage''s foreign key';
COMMENT ON INDEX flowforge.uniq_api_key_prefix IS 'authenticate finds a key by its public prefix';
COMMENT ON INDEX flowforge.api_key_usage_pkey IS 'a key''s usage row: authenticate''s last_used_at, at most once a minute';
COMMENT ON INDEX flowforge.audit_log_pkey IS 'an audit row by id (row identity of append-only history; reads go by organization)';
COMMENT ON INDEX flowforge.idx_audit_org_created IS 'an organization''s recent audit trail, newest first';
COMMENT ON INDEX flowforge.idx_audit_org_entity IS 'who did what to one entity (a run, a key), newest first (0009)';

-- definitions
COMMENT ON INDEX flowforge.workflow_pkey IS
  'a definition by id: a run''s workflow (get_run, list_runs, run_overview), the RESTRICT checks of runs and tasks';
COMMENT ON INDEX flowforge.uniq_workflow_name_version IS
  'the latest version of a name (ORDER BY version DESC LIMIT 1, a backward scan): define_workflow, start_run';
COMMENT ON INDEX flowforge.task_pkey IS
  'a task (node, state) by id: a task run''s or item''s definition (retry budget, backoff in the reaper), graph edges'' targets';
COMMENT ON INDEX flowforge.uniq_task_workflow_key IS
  'a version''s tasks (start_run), a machine''s state spec by key (every event), the cascade from workflow';
COMMENT ON INDEX flowforge.task_dependency_pkey IS
  'a task''s upstream edges: claim input, retry_run, why_not_ready''s waiting-on list';
COMMENT ON INDEX flowforge.idx_taskdep_depends_on IS 'a task''s dependents: release on success, skip on failure';
COMMENT ON INDEX flowforge.idx_taskdep_workflow IS 'the cascade when a workflow version is deleted';
COMMENT ON INDEX flowforge.graph_edge_pkey IS 'a node''s edges in order (every graph step)';
COMMENT ON INDEX flowforge.idx_graph_edge_workflow IS 'the cascade when a workflow version is deleted';

-- triggers
COMMENT ON INDEX flowforge.scheduled_trigger_pkey IS 'a trigger by id: firing it, trigger_secret''s key';
COMMENT ON INDEX flowforge.scheduled_trigger_live_name_uq IS
  'a live trigger by name (every call naming one), the name key over live triggers (0023)';
COMMENT ON INDEX flowforge.idx_trigger_due IS 'the cron duty: due triggers, oldest first, proportional to enabled triggers';
COMMENT ON INDEX flowforge.trigger_secret_pkey IS 'a webhook trigger''s HMAC key (receive_webhook)';
COMMENT ON INDEX flowforge.trigger_firing_pkey IS 'a firing by id (row identity of append-only history; reads go by organization, trigger or run)';
COMMENT ON INDEX flowforge.trigger_firing_tenant_fired IS 'what has fired here lately: list_firings(), newest first';
COMMENT ON INDEX flowforge.trigger_firing_tenant_trigger IS
  'everything one trigger has done: list_firings(trigger_name), newest first';
COMMENT ON INDEX flowforge.trigger_firing_run IS 'the reverse walk: which firing started or moved a run';
COMMENT ON INDEX flowforge.trigger_firing_caused_nothing IS
  'the seed''s second tracing query: the firings that caused nothing (refused, failed), newest first';
COMMENT ON INDEX flowforge.trigger_firing_delivery_uq IS
  'is this delivery (webhook id, cron slot, file, commit) already fired? fire_trigger, feeder_unfired; one firing per delivery';

-- DAG runs
COMMENT ON INDEX flowforge.workflow_run_pkey IS
  'a DAG run by id: its lock (every transition, cancel_run, retry_run, the reaper), get_run';
COMMENT ON INDEX flowforge.idx_wfrun_wf_recent IS
  'WHERE workflow_id = ? ORDER BY created_at DESC LIMIT 50: the last runs of a workflow version';
COMMENT ON INDEX flowforge.idx_wfrun_state_age IS
  'WHERE state = ''running'' AND created_at < now() - threshold: the stuck-run sweep (stuck_runs), and live runs '
  '(why_not_ready''s pending tasks)';
COMMENT ON INDEX flowforge.idx_wfrun_org_recent IS 'an organization''s newest DAG runs (flowforge run list)';
COMMENT ON INDEX flowforge.task_run_pkey IS
  'a task run by id: every worker write (heartbeat, complete, fail), the claim''s update, the reaper''s re-check';
COMMENT ON INDEX flowforge.idx_taskrun_state_age IS
  'the claim (and push dispatch): ready tasks of one organization and queue, lowest priority number first, then '
  'longest ready';
COMMENT ON INDEX flowforge.idx_taskrun_ready_by_name IS
  'claim(task_names => ...): ready tasks of the names a worker has handlers for, in claim order (0009, 0016)';
COMMENT ON INDEX flowforge.idx_taskrun_run_state IS
  'the task runs of a run, by state: run progress, cancel_run / retry_run, push dispatch of one run, run_events';
COMMENT ON INDEX flowforge.idx_taskrun_lease_expiry IS
  'the reaper: WHERE state = ''running'' AND lease_expires_at < now() ORDER BY lease_expires_at; worker_load';
COMMENT ON INDEX flowforge.idx_taskrun_task IS 'the RESTRICT check when a task is deleted, and "runs of this task"';
COMMENT ON INDEX flowforge.idx_taskrun_fanout_ready IS
  'the ready fanning tasks of a run (_tasks_ready''s probe: nearly always empty)';
COMMENT ON INDEX flowforge.uniq_taskrun_per_run_task IS
  'releasing dependents: the task run of task X in run Y; one row per step of a run';
COMMENT ON INDEX flowforge.idempotency_key_pkey IS 'start_run''s key claim: one run per (organization, key)';
COMMENT ON INDEX flowforge.idx_idempotency_run IS 'the cascade when a run is deleted';
COMMENT ON INDEX flowforge.outbox_message_pkey IS 'mark_published / defer_outbox by message id';
COMMENT ON INDEX flowforge.idx_outbox_pending IS
  'take_outbox: WHERE published_at IS NULL AND next_attempt_at <= now() ORDER BY next_attempt_at; outbox_backlog';
COMMENT ON INDEX flowforge.uniq_outbox_per_taskrun_generation IS
  'one dispatch per (task run, fencing token) generation, the cascade from task_run, why_not_ready''s unpublished dispatch';
COMMENT ON INDEX flowforge.idx_outbox_run IS 'the cascade when a run is deleted';
COMMENT ON INDEX flowforge.queue_pkey IS
  'a queue''s settings by (organization, name): configure_queue, queue_settings, the dispatch''s join';
COMMENT ON INDEX flowforge.idx_queue_push IS
  '"is this queue push?" on every readiness; empty for pull-only installs';
COMMENT ON INDEX flowforge.setting_pkey IS 'the one row of installation-wide limits';
COMMENT ON INDEX flowforge.server_secret_pkey IS 'the one gateway signing key';

-- history
COMMENT ON INDEX flowforge.task_run_event_pkey IS
  'an event by id (row identity of append-only history; reads go by run, task run or work item)';
COMMENT ON INDEX flowforge.idx_event_taskrun_created IS 'a task run''s events in order (run_events, per task run)';
COMMENT ON INDEX flowforge.idx_event_run_level IS 'a run''s own events: started, cancelled, finished, retried (run_events)';
COMMENT ON INDEX flowforge.idx_event_work_item IS 'a work item''s own history (run_events of graph, machine and fan-out runs)';

-- the substrate
COMMENT ON INDEX flowforge.engine_run_pkey IS 'a directory row by id (row identity; lookups go by run id)';
COMMENT ON INDEX flowforge.engine_run_tenant_run_uq IS
  'resolve a run id (every verb, get_run), the directory upsert, the lock of a work-item engine''s run';
COMMENT ON INDEX flowforge.engine_run_tenant_created IS
  'list_runs: an organization''s runs of every engine, newest first';
COMMENT ON INDEX flowforge.engine_run_definition_recent IS
  'list_runs(workflow): the newest runs of each version of a workflow, of any engine';
COMMENT ON INDEX flowforge.engine_run_run_idx IS
  'a run id without its organization (the operator''s read path), resolve_run_id''s prefix range';
COMMENT ON INDEX flowforge.engine_run_triggered_by IS
  'the seed''s first tracing query: the runs a trigger caused, newest first';
COMMENT ON INDEX flowforge.graph_run_pkey IS 'a graph run''s row by id (row identity; lookups go by run id)';
COMMENT ON INDEX flowforge.graph_run_runid_uq IS 'a graph run by id (every step, get_run)';
COMMENT ON INDEX flowforge.graph_step_pkey IS 'the walk in order (get_run), the current step (stuck_runs)';
COMMENT ON INDEX flowforge.graph_visit_pkey IS 'a node''s visit count (every step), run_counts';
COMMENT ON INDEX flowforge.work_item_pkey IS
  'a work item by id: heartbeat_work / complete_work / fail_work, claim_work''s update, a machine''s action item';
COMMENT ON INDEX flowforge.work_item_status_priority_idx IS
  'claim_work: pending items of one queue, lower priority first, then the longest ready (the seed''s claim index)';
COMMENT ON INDEX flowforge.work_item_ready_by_name_idx IS 'claim_work(task_names => ...): pending items of the names a worker handles';
COMMENT ON INDEX flowforge.work_item_lease_idx IS 'the item reaper (the seed''s expiry sweep); worker_load';
COMMENT ON INDEX flowforge.work_item_run_idx IS 'a run''s items: cancel, get_run (the seed''s run walk), stuck_runs';
COMMENT ON INDEX flowforge.work_item_parent_idx IS 'a fan-out parent''s children (the seed''s parent walk), and the cascade';
COMMENT ON INDEX flowforge.work_item_task_idx IS 'the RESTRICT check when a definition''s task is deleted';
COMMENT ON INDEX flowforge.work_item_checkpoint_item_idx IS 'a fan-out''s children by element: cancel, failed indexes';
COMMENT ON INDEX flowforge.work_item_checkpoint_live_uq IS 'the one-live-child rule: one pending or dispatched child per element';
COMMENT ON INDEX flowforge.work_item_checkpoint_done_uq IS
  '"did this element succeed?" on resume; the output collected in element order; fan_out_output pages';
COMMENT ON INDEX flowforge.agent_pkey IS 'an agent by id (row identity; other tables store its name)';
COMMENT ON INDEX flowforge.agent_name_key IS 'an agent by name: every claim of a named worker, heartbeats, worker_load';
COMMENT ON INDEX flowforge.affinity_binding_pkey IS 'a binding by id (row identity; lookups go by key or agent)';
COMMENT ON INDEX flowforge.affinity_binding_key_uq IS 'the pin of a key: every claim of pinned work; one agent per key';
COMMENT ON INDEX flowforge.affinity_binding_agent_idx IS
  'an agent''s pins: release when it goes inactive, list_agents, worker_load, the FK cascade';
COMMENT ON INDEX flowforge.engine_pkey IS 'a daemon''s lease row by id (row identity; lookups go by engine id)';
COMMENT ON INDEX flowforge.engine_tenant_engine_uq IS 'a daemon''s row for an organization (renewal, heartbeat)';
COMMENT ON INDEX flowforge.engine_one_serving_per_org IS
  'who serves an organization now (taking over); never two serving daemons per organization';
COMMENT ON INDEX flowforge.engine_engine_idx IS 'a daemon''s own rows (renew, give back), live daemons by heartbeat';

-- the state-machine engine
COMMENT ON INDEX flowforge.machine_run_pkey IS 'the run''s own row when a state is entered (the old state, read back)';
COMMENT ON INDEX flowforge.machine_run_runid_uq IS
  'a machine by id: every event, action end, timer, get_run, list_runs';
COMMENT ON INDEX flowforge.machine_transition_pkey IS
  'the history in order, the most recent entries (get_run), a machine''s last move (stuck_runs)';
COMMENT ON INDEX flowforge.machine_event_queue_pkey IS 'the oldest queued event (each resume step), the queue in order';
COMMENT ON INDEX flowforge.machine_event_seen_pkey IS '"seen this event id?": one key lookup per event with an id';
COMMENT ON INDEX flowforge.machine_timer_pkey IS 'the timer duty re-reads each due timer by id under its run''s lock';
COMMENT ON INDEX flowforge.machine_timer_due_idx IS 'the timer duty: due timers, oldest first';
COMMENT ON INDEX flowforge.machine_timer_one_per_entry IS
  'a run''s timers: deleted when it leaves a state, get_run, stuck_runs; one timer per (entry, position)';

-- fan-out
COMMENT ON INDEX flowforge.checkpoint_pkey IS
  'a checkpoint by id: a child''s fan-out at every child''s end, the foreign keys of its pages and children';
COMMENT ON INDEX flowforge.checkpoint_run_node_uq IS
  'a node''s checkpoint: fan-out start, resume, get_run, fan_out_output, why_not_ready''s held units';
COMMENT ON INDEX flowforge.checkpoint_page_pkey IS 'the page of the next element (every child created)';

-- ---------------------------------------------------------------------------
-- why_not_ready: one row per unit of work that waits — a task run that is
-- pending or ready, a work item that is pending, a unit held while its
-- fan-out's children run, a push task whose message the broker has not taken,
-- an event queued behind a suspended machine — with the first reason that
-- holds (in this order) in words (explanation) and data (detail):
--   run_cancelled / run_ended       its run is over (no function leaves a unit so; report it)
--   waiting_on_dependencies         a pending task: its upstream tasks that have not succeeded, by key with state
--   (queue_paused                   reserved for flow control: see the marked place below)
--   backoff                         a retry waiting for its time (until)
--   fan_out_at_concurrency_limit    a fanning unit whose map has max_concurrency children live, elements left
--   fan_out_children_running        a fanning unit waiting for its live children
--   machine_suspended               an event queued while its machine runs an action (which, its item's state)
--   awaiting_broker                 a push task dispatched, its outbox message not yet published
--   pinned_to_unavailable_agent     hard affinity to an agent that is draining or inactive
--   no_agent_with_labels            selectors (worker_params) no active registered agent's labels contain
--   affinity_needs_agent            pinned work, unbound, and no active registered agent to pin it
--   awaiting_dispatch               ready on a push queue: the daemon's dispatch duty takes it
--   ready                           ready since `since`, nobody has claimed it (which names the workers
--                                   handle is not recorded, so not knowable here)
-- Pending task runs are read through the live runs (idx_wfrun_state_age, then
-- idx_taskrun_run_state): no function leaves one in an ended run. Ready task
-- runs, pending and held work items, and running task runs come from the
-- partial indexes that hold only them.
CREATE VIEW flowforge.why_not_ready WITH (security_invoker = true) AS
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

-- ---------------------------------------------------------------------------
-- queue_depth: per organization, queue and kind of unit (task_run: a DAG
-- task's attempts, claimed with claim(); work_item: graph visits, machine
-- actions, fan-out children, claimed with claim_work()). Ready and running
-- counts read only the rows the partial claim and lease indexes hold; claims
-- in the last minute are the 'claimed' events of that minute, through
-- idx_event_throughput (0027), each joined to its unit for the queue.
-- A fan-out's held unit is neither ready nor running here (why_not_ready
-- shows it): its children are.
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

-- ---------------------------------------------------------------------------
-- stuck_runs: the seed's stuck-run sweep (running longer than a threshold),
-- for every engine. The threshold is 1 hour, the seed's; a session may set
-- another (SET flowforge.stuck_after = '10 minutes' — it changes only what
-- this view shows the session that set it). DAG runs through
-- idx_wfrun_state_age, graph and machine runs through 0027's partial
-- indexes on their live rows. A DAG or a graph run is stuck once it has run
-- longer than the threshold; a machine is meant to rest between events, so
-- it is stuck when it has not moved (its last history entry: resting in one
-- state, or suspended on its action) for longer than the threshold.
CREATE VIEW flowforge.stuck_runs WITH (security_invoker = true) AS
WITH clock AS (
    SELECT coalesce(nullif(current_setting('flowforge.stuck_after', true), '')::interval, interval '1 hour') AS threshold
), stuck AS (
    SELECT r.organization_id, r.id AS run_id, 'dag'::text AS engine_kind, r.workflow_id AS definition_id,
           r.state::text AS status, r.created_at AS since,
           concat_ws(', ',
               CASE WHEN t.running > 0 THEN format('%s running (held by %s; the oldest since %s, the nearest lease until %s)',
                                                   t.running, t.holders, t.oldest_running_since, t.nearest_lease_expiry) END,
               CASE WHEN t.ready > 0 THEN format('%s ready (the oldest since %s)', t.ready, t.oldest_ready_at) END,
               CASE WHEN t.pending > 0 THEN format('%s pending on their upstream tasks', t.pending) END,
               CASE WHEN i.live > 0 THEN format('%s fan-out children live', i.live) END) AS waiting_on,
           jsonb_build_object('running', t.running, 'ready', t.ready, 'pending', t.pending,
                              'fan_out_children_live', i.live, 'running_tasks', t.running_keys,
                              'ready_tasks', t.ready_keys, 'pending_tasks', t.pending_keys,
                              'tasks_total', r.tasks_total, 'tasks_remaining', r.tasks_remaining,
                              'tasks_failed', r.tasks_failed) AS detail
    FROM flowforge.workflow_run r
    CROSS JOIN clock c
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE x.state = 'running') AS running,
               count(*) FILTER (WHERE x.state = 'ready') AS ready,
               count(*) FILTER (WHERE x.state = 'pending') AS pending,
               string_agg(DISTINCT x.lease_owner, ', ') FILTER (WHERE x.state = 'running') AS holders,
               min(x.started_at) FILTER (WHERE x.state = 'running') AS oldest_running_since,
               min(x.lease_expires_at) FILTER (WHERE x.state = 'running') AS nearest_lease_expiry,
               min(x.ready_at) FILTER (WHERE x.state = 'ready') AS oldest_ready_at,
               (array_agg(x.task_key::text ORDER BY x.task_key) FILTER (WHERE x.state = 'running'))[1:10] AS running_keys,
               (array_agg(x.task_key::text ORDER BY x.task_key) FILTER (WHERE x.state = 'ready'))[1:10] AS ready_keys,
               (array_agg(x.task_key::text ORDER BY x.task_key) FILTER (WHERE x.state = 'pending'))[1:10] AS pending_keys
        FROM flowforge.task_run x
        WHERE x.workflow_run_id = r.id AND x.state IN ('pending', 'ready', 'running')) t
    CROSS JOIN LATERAL (
        SELECT count(*) AS live FROM flowforge.work_item w
        WHERE w.organization_id = r.organization_id AND w.run_id = r.id AND w.status IN ('pending', 'dispatched')) i
    WHERE r.state = 'running' AND r.created_at < flowforge.now() - c.threshold
    UNION ALL
    SELECT g.organization_id, g.run_id, 'graph', g.definition_id, g.status::text, g.created_at,
           format('node %s (step %s, entered %s): %s', g.task, g.steps, s.entered_at,
                  CASE WHEN w.id IS NULL THEN 'no outstanding work item'
                       WHEN w.status = 'dispatched' AND w.leased_by = 'flowforge:fan-out'
                            THEN format('held by its fan-out, %s children live', k.live)
                       WHEN w.status = 'dispatched' THEN format('its item is dispatched to %s, lease until %s',
                                                                w.leased_by, w.lease_expires_at)
                       WHEN w.next_attempt_at > flowforge.now() THEN format('its item is pending, in backoff until %s',
                                                                  w.next_attempt_at)
                       ELSE format('its item is pending since %s, not claimed', w.next_attempt_at) END),
           jsonb_strip_nulls(jsonb_build_object('node', g.task, 'step', g.steps, 'max_steps', g.max_steps,
                                                'entered_at', s.entered_at, 'work_item_id', w.id,
                                                'item_status', w.status, 'held_by', w.leased_by,
                                                'lease_expires_at', w.lease_expires_at,
                                                'next_attempt_at', w.next_attempt_at,
                                                'attempt', w.retry_count + 1, 'fan_out_children_live', k.live))
    FROM flowforge.graph_run g
    CROSS JOIN clock c
    LEFT JOIN flowforge.graph_step s ON s.run_id = g.run_id AND s.step = g.steps
    LEFT JOIN LATERAL (
        SELECT x.* FROM flowforge.work_item x
        WHERE x.organization_id = g.organization_id AND x.run_id = g.run_id AND x.status IN ('pending', 'dispatched')
          AND x.checkpoint_id IS NULL
        ORDER BY x.created_at DESC, x.id DESC LIMIT 1) w ON true
    LEFT JOIN LATERAL (
        SELECT count(*) AS live FROM flowforge.work_item x
        WHERE w.status = 'dispatched' AND w.leased_by = 'flowforge:fan-out'
          AND x.organization_id = g.organization_id AND x.run_id = g.run_id
          AND x.status IN ('pending', 'dispatched') AND x.checkpoint_id IS NOT NULL) k ON true
    WHERE g.status = 'running' AND g.created_at < flowforge.now() - c.threshold
    UNION ALL
    SELECT m.organization_id, m.run_id, 'statemachine', m.definition_id, m.status::text, mv.since,
           CASE WHEN m.action_item_id IS NOT NULL
                THEN format('suspended on action %s in state %s: its item is %s%s%s', a.task_name, m.state, a.status,
                            CASE WHEN a.status = 'dispatched' THEN format(' to %s, lease until %s', a.leased_by,
                                                                          a.lease_expires_at)
                                 WHEN a.next_attempt_at > flowforge.now() THEN format(', in backoff until %s', a.next_attempt_at)
                                 ELSE '' END,
                            CASE WHEN q.queued = 1 THEN '; 1 event queued'
                                 WHEN q.queued > 1 THEN format('; %s events queued', q.queued) ELSE '' END)
                ELSE format('resting in state %s, waiting for an event%s%s', m.state,
                            coalesce(' (' || ev.accepted || ')', ''),
                            coalesce(format(' or its timer to %s at %s', tm.target, tm.fire_at), '')) END,
           jsonb_strip_nulls(jsonb_build_object('state', m.state, 'suspended', m.suspended,
                                                'action', a.task_name, 'action_item_id', m.action_item_id,
                                                'item_status', a.status, 'held_by', a.leased_by,
                                                'lease_expires_at', a.lease_expires_at, 'queued_events', q.queued,
                                                'accepts', ev.accepted, 'timer_target', tm.target,
                                                'timer_fire_at', tm.fire_at, 'transitions', m.transitions))
    FROM flowforge.machine_run m
    CROSS JOIN clock c
    -- Its last move: the newest history entry (machine_transition_pkey).
    CROSS JOIN LATERAL (
        SELECT coalesce((SELECT h.created_at FROM flowforge.machine_transition h
                         WHERE h.run_id = m.run_id AND h.n = m.history_length), m.started_at) AS since) mv
    LEFT JOIN flowforge.work_item a ON a.id = m.action_item_id
    LEFT JOIN flowforge.task st ON st.workflow_id = m.definition_id AND st.key = m.state
    LEFT JOIN LATERAL (
        SELECT string_agg(e.key, ', ' ORDER BY e.key) AS accepted
        FROM jsonb_object_keys(CASE WHEN jsonb_typeof(st.spec -> 'on') = 'object' THEN st.spec -> 'on' END) AS e(key)) ev ON true
    LEFT JOIN LATERAL (
        SELECT t.target, t.fire_at FROM flowforge.machine_timer t WHERE t.run_id = m.run_id
        ORDER BY t.fire_at, t.position LIMIT 1) tm ON true
    LEFT JOIN LATERAL (
        SELECT count(*) AS queued FROM flowforge.machine_event_queue x WHERE x.run_id = m.run_id) q ON true
    WHERE m.status = 'running' AND m.created_at < flowforge.now() - c.threshold AND mv.since < flowforge.now() - c.threshold
)
SELECT s.organization_id, o.slug::text AS organization, s.run_id, s.engine_kind, w.name::text AS workflow, w.version,
       s.status, s.since, flowforge.now() - s.since AS stuck_for, c.threshold, s.waiting_on, s.detail
FROM stuck s
CROSS JOIN clock c
LEFT JOIN flowforge.organization o ON o.id = s.organization_id
LEFT JOIN flowforge.workflow w ON w.id = s.definition_id;
COMMENT ON VIEW flowforge.stuck_runs IS
  'Which runs are stuck, and on what? The seed''s stuck-run sweep for every engine: DAG and graph runs running longer '
  'than the threshold (1 hour, or the session''s flowforge.stuck_after), machines that have not moved (resting in one '
  'state, or suspended on an action) for that long — with what each waits on in words (waiting_on) and data (detail): '
  'the tasks running, ready and pending, the node and its item, the action or the events and timer it waits for.';

-- ---------------------------------------------------------------------------
-- worker_load: one row per holder of work (a task run's lease_owner, a work
-- item's leased_by) and per registered agent, holding or not. What is held is
-- read through the partial lease indexes (running / dispatched rows only).
-- kind: agent (registered), worker (claims without registering), dispatch
-- (push tasks in the broker's hands until their consumer reports), fan-out
-- (units held while their children run: their lease never expires).
CREATE VIEW flowforge.worker_load WITH (security_invoker = true) AS
WITH clock AS (
    SELECT (SELECT s.agent_timeout FROM flowforge.setting s) AS agent_timeout
), held AS (
    SELECT tr.organization_id, tr.lease_owner::text AS worker, 'task_runs'::text AS unit_kind, tr.queue::text AS queue,
           count(*) AS n, min(tr.started_at) AS oldest, min(tr.lease_expires_at) AS nearest
    FROM flowforge.task_run tr
    WHERE tr.state = 'running'
    GROUP BY tr.organization_id, tr.lease_owner, tr.queue
    UNION ALL
    SELECT w.organization_id, w.leased_by, 'work_items', w.queue, count(*), min(w.dispatched_at),
           min(w.lease_expires_at)
    FROM flowforge.work_item w
    WHERE w.status = 'dispatched'
    GROUP BY w.organization_id, w.leased_by, w.queue
), by_queue AS (
    SELECT h.organization_id, h.worker, h.queue, jsonb_object_agg(h.unit_kind, h.n) AS counts
    FROM held h GROUP BY h.organization_id, h.worker, h.queue
), holders AS (
    SELECT h.organization_id, h.worker,
           coalesce(sum(h.n) FILTER (WHERE h.unit_kind = 'task_runs'), 0)::bigint AS task_runs,
           coalesce(sum(h.n) FILTER (WHERE h.unit_kind = 'work_items'), 0)::bigint AS work_items,
           min(h.oldest) AS oldest_held_since, min(h.nearest) AS nearest_lease_expiry,
           (SELECT jsonb_object_agg(q.queue, q.counts) FROM by_queue q
            WHERE q.organization_id = h.organization_id AND q.worker = h.worker) AS by_queue
    FROM held h GROUP BY h.organization_id, h.worker
), agents AS (
    SELECT a.organization_id, a.name::text AS worker, a.status::text AS declared_status,
           -- _agent_status's rule, inline (the read role may not call internal functions; a twin test compares).
           CASE WHEN a.status = 'inactive' OR a.last_heartbeat_at IS NULL
                     OR a.last_heartbeat_at < flowforge.now() - coalesce(3 * a.heartbeat_interval, c.agent_timeout)
                THEN 'inactive' ELSE a.status::text END AS status,
           a.last_heartbeat_at, a.heartbeat_interval, a.last_claim_at, a.agent_type::text AS agent_type,
           a.agent_version::text AS agent_version, a.metadata AS labels,
           (SELECT count(*) FROM flowforge.affinity_binding b
            WHERE b.organization_id = a.organization_id AND b.agent_id = a.name) AS pins
    FROM flowforge.agent a CROSS JOIN clock c
    WHERE a.deleted_at IS NULL
)
SELECT coalesce(h.organization_id, a.organization_id) AS organization_id, o.slug::text AS organization,
       coalesce(h.worker, a.worker) AS worker,
       CASE WHEN a.worker IS NOT NULL THEN 'agent'
            WHEN h.worker = 'dispatch' THEN 'dispatch'
            WHEN h.worker = 'flowforge:fan-out' THEN 'fan-out'
            ELSE 'worker' END AS kind,
       -- "drained": draining and holding nothing any more, safe to stop (list_agents' word).
       CASE WHEN a.status = 'draining' AND coalesce(h.task_runs, 0) + coalesce(h.work_items, 0) = 0 THEN 'drained'
            ELSE a.status END AS status,
       a.declared_status,
       coalesce(h.task_runs, 0) AS task_runs, coalesce(h.work_items, 0) AS work_items,
       coalesce(h.by_queue, '{}') AS by_queue, h.oldest_held_since, h.nearest_lease_expiry,
       a.last_heartbeat_at, flowforge.now() - a.last_heartbeat_at AS heartbeat_age, a.heartbeat_interval, a.last_claim_at,
       coalesce(a.pins, 0) AS pins, a.agent_type, a.agent_version, a.labels
FROM holders h
FULL JOIN agents a ON a.organization_id = h.organization_id AND a.worker = h.worker
CROSS JOIN clock c
LEFT JOIN flowforge.organization o ON o.id = coalesce(h.organization_id, a.organization_id);
COMMENT ON VIEW flowforge.worker_load IS
  'Who holds what? Per worker (a task run''s lease_owner, a work item''s leased_by) and per registered agent: its kind '
  '(agent, worker, dispatch, fan-out), effective status (inactive once its heartbeat is three intervals old, drained '
  'when draining with nothing held), task runs and work items held (by_queue: per queue), the oldest held since, the '
  'nearest lease expiry, its last heartbeat and claim, and its affinity pins.';

-- ---------------------------------------------------------------------------
-- tenant_usage: per organization. Runs by engine and state are exact (one
-- pass over each engine's run table: runs, not history). Work finished in the
-- last hour and day counts the events of that window through
-- idx_event_throughput (0027): completed, failed, and a reaped attempt that
-- failed for good — proportional to the window, never to the history. The
-- history (task_run_event, machine_transition, trigger_firing, audit_log) is
-- never counted row by row: each table is read through a block sample
-- (TABLESAMPLE SYSTEM) sized from pg_class.reltuples for about 50,000 rows —
-- the whole table while it is smaller, when the figures are exact
-- (history_exact) — and an organization's bytes are its share of the rows
-- times pg_total_relation_size. Estimates move a little between reads; ANALYZE
-- keeps reltuples current.
CREATE VIEW flowforge.tenant_usage WITH (security_invoker = true) AS
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
COMMENT ON VIEW flowforge.tenant_usage IS
  'What does each organization use? Runs by engine and state (exact), live runs, task runs and work items that '
  'succeeded or failed for good in the last hour and day (events of the window, through idx_event_throughput), and '
  'its history (task_run_event, machine_transition, trigger_firing, audit_log): rows and bytes estimated from a block '
  'sample of about 50,000 rows per table scaled by pg_class, exact while a table is smaller (history_exact).';

-- ---------------------------------------------------------------------------
-- index_usage: the seed's index review. idx_scan counts since the statistics
-- were last reset (counted_since; NULL: since they were created). An index
-- that enforces nothing (not unique) and was never scanned is unused — the
-- evidence for dropping it, once the counters have seen a representative
-- period. serves is the index's comment: the query it exists for.
CREATE VIEW flowforge.index_usage WITH (security_invoker = true) AS
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
COMMENT ON VIEW flowforge.index_usage IS
  'Is each index used, and what is it for? Every flowforge index with idx_scan, tuples read and fetched (since '
  'counted_since), its size, unique / primary / partial / valid, unused (never scanned and enforcing nothing: the '
  'evidence for dropping it), serves (its comment: the query it exists for, from docs/data-model.md) and its definition.';

ALTER VIEW flowforge.why_not_ready OWNER TO flowforge_owner;
ALTER VIEW flowforge.queue_depth OWNER TO flowforge_owner;
ALTER VIEW flowforge.stuck_runs OWNER TO flowforge_owner;
ALTER VIEW flowforge.worker_load OWNER TO flowforge_owner;
ALTER VIEW flowforge.tenant_usage OWNER TO flowforge_owner;
ALTER VIEW flowforge.index_usage OWNER TO flowforge_owner;
GRANT SELECT ON flowforge.why_not_ready, flowforge.queue_depth, flowforge.stuck_runs, flowforge.worker_load,
                flowforge.tenant_usage, flowforge.index_usage TO flowforge_readonly;
