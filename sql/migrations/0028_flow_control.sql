-- FlowForge 0028: flow control (issue 18) — concurrency limits per queue and per
-- key, rate limits, paused queues, fair claiming across keys, for both queues
-- (task_run and work_item). The rules are in sql/functions/10_substrate/22_flow_control.sql
-- and docs/execution-model.md ("Flow control"); the tables hold counted rows
-- the claim locks, never a window of rows it counts:
--
--   queue        paused, max_running, rate_limit/rate_per (configure_queue, pause_queue),
--                keyed (a definition's unit on this queue declares flow control) and
--                flow, generated: "claims of this queue take the flow-control path"
--   task         flow: the flow control a unit of the definition declares (NULL: none)
--   task_run,    flow_lane: the unit's lane (its evaluated keys), set when it is created;
--   work_item    flow_token: the fencing token of the claim that took its slots (its key's, when
--                its lane has a concurrency key); flow_queue_slot: that claim took a slot of
--                the queue's max_running too
--   flow_lane    one row per distinct evaluated flow control: the concurrency key and
--                its max, the rate-limit key and its rate, the fairness key and weight
--   flow_slot    running counters: one row per queue (kept while it has max_running) and per
--                concurrency key value
--   flow_bucket  token buckets: one row per queue rate and per rate-limit key value
--   flow_fair    a fairness key's pass (virtual time) in a queue
--
-- The slots a claim took are given back exactly once by a trigger on the
-- unit's row leaving running (task_run) or dispatched (work_item): complete,
-- complete_many, fail, the reapers, cancel, a fan-out's end and every engine
-- path alike, because all of them change that one column. The trigger fires
-- only when the unit's flow_token is its current fencing token, so a unit
-- claimed without flow control costs the evaluation of its WHEN clause.
--
-- why_not_ready names the limit that holds a unit back (the place 0026 marked
-- for queue_paused), and queue_depth shows the limits, running counts per key,
-- tokens left and held-back counts; both are replaced here with the same
-- columns (queue_depth gains its flow columns at the end).
-- The lane indexes follow in 0029, built CONCURRENTLY.
-- depends: 0027_inspection_indexes

ALTER TABLE flowforge.queue
    ADD COLUMN paused boolean NOT NULL DEFAULT false,
    ADD COLUMN max_running integer,
    ADD COLUMN rate_limit integer,
    ADD COLUMN rate_per interval,
    ADD COLUMN keyed boolean NOT NULL DEFAULT false,
    ADD COLUMN flow boolean GENERATED ALWAYS AS (paused OR max_running IS NOT NULL OR rate_limit IS NOT NULL OR keyed) STORED,
    ADD CONSTRAINT queue_max_running_valid CHECK (max_running IS NULL OR max_running BETWEEN 1 AND 100000),
    ADD CONSTRAINT queue_rate_valid CHECK (
        (rate_limit IS NULL) = (rate_per IS NULL)
        AND (rate_limit IS NULL OR (rate_limit BETWEEN 1 AND 1000000
                                    AND rate_per BETWEEN interval '1 millisecond' AND interval '1 day')));
-- The claim's one question on its fast path: "does any of these queues take the flow-control path?"
-- Empty while nobody uses flow control.
CREATE INDEX queue_flow_idx ON flowforge.queue (organization_id, name) WHERE flow;
COMMENT ON INDEX flowforge.queue_flow_idx IS
  'claim / claim_work: does any of the claimed queues take the flow-control path (paused, limited or keyed)? '
  'Empty while nobody uses flow control';

ALTER TABLE flowforge.task
    ADD COLUMN flow jsonb,
    ADD CONSTRAINT task_flow_is_object CHECK (flow IS NULL OR jsonb_typeof(flow) = 'object');

ALTER TABLE flowforge.task_run
    ADD COLUMN flow_lane uuid,
    ADD COLUMN flow_token bigint,
    ADD COLUMN flow_queue_slot boolean,
    ADD CONSTRAINT taskrun_flow_token_valid CHECK (flow_token IS NULL OR flow_token BETWEEN 1 AND fencing_token),
    ADD CONSTRAINT taskrun_flow_queue_slot_has_token CHECK (NOT flow_queue_slot OR flow_token IS NOT NULL);
ALTER TABLE flowforge.work_item
    ADD COLUMN flow_lane uuid,
    ADD COLUMN flow_token bigint,
    ADD COLUMN flow_queue_slot boolean,
    ADD CONSTRAINT work_item_flow_token_valid CHECK (flow_token IS NULL OR flow_token BETWEEN 1 AND fencing_token),
    ADD CONSTRAINT work_item_flow_queue_slot_has_token CHECK (NOT flow_queue_slot OR flow_token IS NOT NULL);

CREATE TABLE flowforge.flow_lane (
    organization_id  uuid         NOT NULL,
    id               uuid         NOT NULL DEFAULT flowforge.uuid7(),
    identity         text         NOT NULL,
    conc_name        text,
    conc_value       jsonb,
    conc_max         integer,
    rate_name        text,
    rate_value       jsonb,
    rate_limit       integer,
    rate_per         interval,
    fair_value       jsonb        NOT NULL DEFAULT 'null',
    fair_weight      numeric      NOT NULL DEFAULT 1,
    created_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT flow_lane_pkey PRIMARY KEY (organization_id, id),
    CONSTRAINT flow_lane_identity_uq UNIQUE (organization_id, identity),
    CONSTRAINT flow_lane_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT flow_lane_concurrency_complete CHECK (
        (conc_name IS NULL) = (conc_value IS NULL) AND (conc_name IS NULL) = (conc_max IS NULL)
        AND (conc_max IS NULL OR conc_max BETWEEN 1 AND 10000)),
    CONSTRAINT flow_lane_rate_complete CHECK (
        (rate_name IS NULL) = (rate_value IS NULL) AND (rate_name IS NULL) = (rate_limit IS NULL)
        AND (rate_name IS NULL) = (rate_per IS NULL)
        AND (rate_limit IS NULL OR (rate_limit BETWEEN 1 AND 1000000
                                    AND rate_per BETWEEN interval '1 millisecond' AND interval '1 day'))),
    CONSTRAINT flow_lane_weight_valid CHECK (fair_weight BETWEEN 0.001 AND 1000)
);
COMMENT ON INDEX flowforge.flow_lane_pkey IS
  'a unit''s lane by id: the claim''s gates for each lane with ready work, the release of a key slot';
COMMENT ON INDEX flowforge.flow_lane_identity_uq IS
  'one lane per distinct evaluated flow control: a unit''s lane found (or made) when the unit is created';

CREATE TABLE flowforge.flow_slot (
    organization_id  uuid         NOT NULL,
    scope            varchar(10)  NOT NULL,
    name             text         NOT NULL,
    value            jsonb        NOT NULL DEFAULT 'null',
    running          integer      NOT NULL DEFAULT 0,
    updated_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT flow_slot_pkey PRIMARY KEY (organization_id, scope, name, value),
    CONSTRAINT flow_slot_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT flow_slot_scope_valid CHECK (scope IN ('queue', 'key')),
    CONSTRAINT flow_slot_running_non_negative CHECK (running >= 0)
);
COMMENT ON INDEX flowforge.flow_slot_pkey IS
  'a queue''s or a key value''s running counter: locked by the claim that takes a slot and by the release '
  '(complete, fail, reap, cancel) that gives it back; queue_depth''s running per key';

CREATE TABLE flowforge.flow_bucket (
    organization_id  uuid         NOT NULL,
    scope            varchar(10)  NOT NULL,
    name             text         NOT NULL,
    value            jsonb        NOT NULL DEFAULT 'null',
    rate_limit       integer      NOT NULL,
    rate_per         interval     NOT NULL,
    level            bigint       NOT NULL,
    refilled_at      timestamptz  NOT NULL,
    CONSTRAINT flow_bucket_pkey PRIMARY KEY (organization_id, scope, name, value, rate_limit, rate_per),
    CONSTRAINT flow_bucket_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT flow_bucket_scope_valid CHECK (scope IN ('queue', 'key')),
    CONSTRAINT flow_bucket_rate_valid CHECK (rate_limit BETWEEN 1 AND 1000000
                                             AND rate_per BETWEEN interval '1 millisecond' AND interval '1 day'),
    -- level counts token-microseconds: a token is (rate_per in µs) of it; the bucket holds at most rate_limit tokens.
    CONSTRAINT flow_bucket_level_within_capacity CHECK (
        level BETWEEN 0 AND rate_limit::bigint * (extract(epoch FROM rate_per) * 1000000)::bigint)
);
COMMENT ON INDEX flowforge.flow_bucket_pkey IS
  'a queue''s or a rate-limit key value''s token bucket at one rate: locked and refilled by the claim that takes a '
  'token; queue_depth''s tokens left';

CREATE TABLE flowforge.flow_fair (
    organization_id  uuid         NOT NULL,
    queue            varchar(63)  NOT NULL,
    value            jsonb        NOT NULL,
    pass             numeric      NOT NULL DEFAULT 0,
    updated_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT flow_fair_pkey PRIMARY KEY (organization_id, queue, value),
    CONSTRAINT flow_fair_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT flow_fair_pass_non_negative CHECK (pass >= 0)
);
COMMENT ON INDEX flowforge.flow_fair_pkey IS
  'a fairness key''s pass in a queue: read for every key with ready work by the claim, advanced for those it served';

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair'] LOOP
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

-- Bootstrap: the triggers below need their function. The post-migrate
-- re-apply of sql/functions/ replaces it (10_substrate/22_flow_control.sql).
DO $$
BEGIN
    IF to_regprocedure('flowforge._flow_release()') IS NULL THEN
        CREATE FUNCTION flowforge._flow_release() RETURNS trigger
        LANGUAGE plpgsql
        AS $f$ BEGIN RETURN NULL; END; $f$;
    END IF;
END;
$$;

-- A unit that leaves running (task_run) or dispatched (work_item), or is
-- deleted while it is, gives back the slots its claim took: only when its
-- flow_token is the current fencing token, that is, when this generation's
-- claim took them (a later claim without flow control leaves the token behind).
CREATE TRIGGER task_run_flow_release
    AFTER UPDATE OF state ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.state = 'running' AND NEW.state <> 'running')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER task_run_flow_release_deleted
    AFTER DELETE ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.state = 'running')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER work_item_flow_release
    AFTER UPDATE OF status ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.status = 'dispatched' AND NEW.status <> 'dispatched')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER work_item_flow_release_deleted
    AFTER DELETE ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.status = 'dispatched')
    EXECUTE FUNCTION flowforge._flow_release();

-- ---------------------------------------------------------------------------
-- why_not_ready and queue_depth (0026), with flow control: the same columns, queue_depth's new ones at
-- the end. 0026's text otherwise, so its comments on what each part reads still hold.
CREATE OR REPLACE VIEW flowforge.why_not_ready WITH (security_invoker = true) AS
WITH clock AS (
    SELECT (SELECT s.agent_timeout FROM flowforge.setting s) AS agent_timeout
), units AS (
    -- Ready task runs of any run: idx_taskrun_state_age (partial on ready).
    SELECT 'task_run'::text AS unit_kind, tr.id AS unit_id, tr.organization_id, tr.workflow_run_id AS run_id,
           'dag'::text AS engine_kind, tr.task_key::text AS name, tr.task_key::text AS node, tr.queue::text AS queue,
           tr.state::text AS status, tr.task_id, tr.attempt, tr.priority, tr.ready_at AS available_at,
           tr.created_at, tr.started_at, NULL::text AS holder, tr.fencing_token, tr.affinity_key,
           tr.affinity_policy::text AS affinity_policy, tr.worker_params, tr.error, NULL::bigint AS event_seq,
           tr.flow_lane
    FROM flowforge.task_run tr
    WHERE tr.state = 'ready'
    UNION ALL
    -- Pending task runs of the live runs.
    SELECT 'task_run', tr.id, tr.organization_id, tr.workflow_run_id, 'dag', tr.task_key, tr.task_key, tr.queue,
           tr.state, tr.task_id, tr.attempt, tr.priority, tr.ready_at, tr.created_at, tr.started_at, NULL,
           tr.fencing_token, tr.affinity_key, tr.affinity_policy, tr.worker_params, tr.error, NULL, tr.flow_lane
    FROM flowforge.workflow_run r
    JOIN flowforge.task_run tr ON tr.workflow_run_id = r.id AND tr.state = 'pending'
    WHERE r.state IN ('pending', 'running')
    UNION ALL
    -- Running task runs no worker has: a fan-out's held unit, a push task in the outbox
    -- (idx_taskrun_lease_expiry, partial on running).
    SELECT 'task_run', tr.id, tr.organization_id, tr.workflow_run_id, 'dag', tr.task_key, tr.task_key, tr.queue,
           tr.state, tr.task_id, tr.attempt, tr.priority, tr.ready_at, tr.created_at, tr.started_at, tr.lease_owner,
           tr.fencing_token, tr.affinity_key, tr.affinity_policy, tr.worker_params, tr.error, NULL, tr.flow_lane
    FROM flowforge.task_run tr
    WHERE tr.state = 'running' AND tr.lease_owner IN ('flowforge:fan-out', 'dispatch')
    UNION ALL
    -- Pending work items: work_item_status_priority_idx (partial on pending). A fan-out child shows as key[i].
    SELECT 'work_item', w.id, w.organization_id, w.run_id, w.engine_kind,
           w.task_name || coalesce('[' || w.item_index || ']', ''), w.task_name, w.queue, w.status, w.task_id,
           w.retry_count + 1, w.priority, w.next_attempt_at, w.created_at, w.dispatched_at, NULL,
           w.fencing_token, w.affinity_key, w.affinity_policy, w.worker_params, w.error, NULL, w.flow_lane
    FROM flowforge.work_item w
    WHERE w.status = 'pending'
    UNION ALL
    -- A graph visit's item held while its fan-out's children run (work_item_lease_idx, partial on dispatched).
    SELECT 'work_item', w.id, w.organization_id, w.run_id, w.engine_kind, w.task_name, w.task_name, w.queue,
           w.status, w.task_id, w.retry_count + 1, w.priority, w.next_attempt_at, w.created_at, w.dispatched_at,
           w.leased_by, w.fencing_token, w.affinity_key, w.affinity_policy, w.worker_params, w.error, NULL, w.flow_lane
    FROM flowforge.work_item w
    WHERE w.status = 'dispatched' AND w.leased_by = 'flowforge:fan-out'
    UNION ALL
    -- Events that arrived while their machine was suspended, in arrival order.
    SELECT 'machine_event', NULL::uuid, q.organization_id, q.run_id, 'statemachine', q.event, NULL, NULL, 'queued',
           NULL::uuid, NULL::integer, NULL::integer, q.received_at, q.received_at, NULL::timestamptz, NULL, NULL::bigint,
           NULL, NULL, NULL::jsonb, NULL, q.seq, NULL::uuid
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
           WHEN 'queue_paused' THEN format(
               'its queue %s is paused: nothing is claimed from it until resume_queue', u.queue)
           WHEN 'queue_at_concurrency_limit' THEN format(
               'its queue %s is at its concurrency limit: %s running, max_running %s; it goes when one of them ends',
               u.queue, f.flow #>> '{queue,running}', f.flow #>> '{queue,max_running}')
           WHEN 'queue_rate_limited' THEN format(
               'its queue %s is at its rate limit of %s per %s: no token left; the next one at %s',
               u.queue, f.flow #>> '{queue,rate,limit}', f.flow #>> '{queue,rate,per}',
               f.flow #>> '{queue,rate,next_token_at}')
           WHEN 'key_at_concurrency_limit' THEN format(
               'concurrency key %s = %s is at its limit: %s running, max %s; it goes when one of them ends',
               f.flow #>> '{concurrency,key}', f.flow #> '{concurrency,value}', f.flow #>> '{concurrency,running}',
               f.flow #>> '{concurrency,max}')
           WHEN 'key_rate_limited' THEN format(
               'rate limit %s%s is used up (%s per %s): the next token at %s',
               f.flow #>> '{rate_limit,key}',
               CASE WHEN f.flow #> '{rate_limit,value}' <> 'null' THEN ' = ' || (f.flow #> '{rate_limit,value}')::text
                    ELSE '' END,
               f.flow #>> '{rate_limit,limit}', f.flow #>> '{rate_limit,per}', f.flow #>> '{rate_limit,next_token_at}')
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
            WHEN r.reason = 'awaiting_broker' THEN (f.outbox ->> 'next_attempt_at')::timestamptz
            WHEN r.reason = 'queue_rate_limited' THEN (f.flow #>> '{queue,rate,next_token_at}')::timestamptz
            WHEN r.reason = 'key_rate_limited' THEN (f.flow #>> '{rate_limit,next_token_at}')::timestamptz END AS until,
       jsonb_strip_nulls(jsonb_build_object(
           'run_status', run.status, 'attempt', u.attempt, 'priority', u.priority, 'holder', u.holder,
           'waiting_on', f.waiting_on, 'checkpoint', f.checkpoint, 'outbox', f.outbox, 'machine', f.machine,
           'affinity', CASE WHEN u.affinity_key IS NOT NULL THEN jsonb_build_object(
                           'key', u.affinity_key, 'policy', u.affinity_policy, 'pinned_to', f.pin ->> 'agent',
                           'agent_status', f.pin ->> 'status') END,
           'worker_params', u.worker_params, 'error', left(u.error, 1000), 'seq', u.event_seq, 'flow', f.flow)) AS detail
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
        -- Flow control (0028): the queue's flags and limits and the unit's lane, with the counters and
        -- buckets as they stand (the token arithmetic of _flow_refill, inline: the read role may not call
        -- internal functions; a twin test compares them). For a unit a claim could take now.
        CASE WHEN (u.unit_kind = 'task_run' AND u.status = 'ready') OR (u.unit_kind = 'work_item' AND u.status = 'pending')
        THEN (
            SELECT nullif(jsonb_strip_nulls(jsonb_build_object(
                'queue', CASE WHEN q.flow THEN jsonb_build_object(
                    'paused', q.paused, 'max_running', q.max_running,
                    'running', CASE WHEN q.max_running IS NOT NULL THEN coalesce(qs.running, 0) END,
                    'rate', CASE WHEN q.rate_limit IS NOT NULL THEN jsonb_build_object(
                        'limit', q.rate_limit, 'per', q.rate_per, 'tokens', qt.tokens,
                        'next_token_at', CASE WHEN qt.tokens < 1 THEN flowforge.now() + qt.wait END) END) END,
                'concurrency', CASE WHEN l.conc_name IS NOT NULL THEN jsonb_build_object(
                    'key', l.conc_name, 'value', l.conc_value, 'max', l.conc_max, 'running', coalesce(ks.running, 0)) END,
                'rate_limit', CASE WHEN l.rate_name IS NOT NULL THEN jsonb_build_object(
                    'key', l.rate_name, 'value', l.rate_value, 'limit', l.rate_limit, 'per', l.rate_per, 'tokens', kt.tokens,
                    'next_token_at', CASE WHEN kt.tokens < 1 THEN flowforge.now() + kt.wait END) END,
                'fairness', CASE WHEN l.id IS NOT NULL AND l.fair_value <> 'null' THEN jsonb_build_object(
                    'value', l.fair_value, 'weight', l.fair_weight) END)), '{}')
            FROM (SELECT 1) one
            LEFT JOIN flowforge.queue q ON q.organization_id = u.organization_id AND q.name = u.queue
            LEFT JOIN flowforge.flow_slot qs ON q.flow AND qs.organization_id = u.organization_id AND qs.scope = 'queue'
                                            AND qs.name = u.queue AND qs.value = 'null'
            LEFT JOIN flowforge.flow_bucket qb ON q.rate_limit IS NOT NULL AND qb.organization_id = u.organization_id
                                              AND qb.scope = 'queue' AND qb.name = u.queue AND qb.value = 'null'
                                              AND qb.rate_limit = q.rate_limit AND qb.rate_per = q.rate_per
            LEFT JOIN flowforge.flow_lane l ON u.flow_lane IS NOT NULL AND l.organization_id = u.organization_id
                                           AND l.id = u.flow_lane
            LEFT JOIN flowforge.flow_slot ks ON l.conc_name IS NOT NULL AND ks.organization_id = u.organization_id
                                            AND ks.scope = 'key' AND ks.name = l.conc_name AND ks.value = l.conc_value
            LEFT JOIN flowforge.flow_bucket kb ON l.rate_name IS NOT NULL AND kb.organization_id = u.organization_id
                                              AND kb.scope = 'key' AND kb.name = l.rate_name AND kb.value = l.rate_value
                                              AND kb.rate_limit = l.rate_limit AND kb.rate_per = l.rate_per
            -- tokens now (a bucket never used is full), and how long until the next whole one
            LEFT JOIN LATERAL (
                SELECT trim_scale(round(x.level / x.per_us, 6)) AS tokens,
                       ceil((x.per_us - x.level % x.per_us) / q.rate_limit) * interval '1 microsecond' AS wait
                FROM (SELECT extract(epoch FROM q.rate_per) * 1000000 AS per_us,
                             CASE WHEN qb.level IS NULL THEN q.rate_limit * extract(epoch FROM q.rate_per) * 1000000
                                  ELSE least(q.rate_limit * extract(epoch FROM q.rate_per) * 1000000,
                                             qb.level + q.rate_limit * least(extract(epoch FROM q.rate_per) * 1000000,
                                                 greatest(0, extract(epoch FROM flowforge.now() - qb.refilled_at) * 1000000)))
                             END AS level
                      WHERE q.rate_limit IS NOT NULL) x) qt ON true
            LEFT JOIN LATERAL (
                SELECT trim_scale(round(x.level / x.per_us, 6)) AS tokens,
                       ceil((x.per_us - x.level % x.per_us) / l.rate_limit) * interval '1 microsecond' AS wait
                FROM (SELECT extract(epoch FROM l.rate_per) * 1000000 AS per_us,
                             CASE WHEN kb.level IS NULL THEN l.rate_limit * extract(epoch FROM l.rate_per) * 1000000
                                  ELSE least(l.rate_limit * extract(epoch FROM l.rate_per) * 1000000,
                                             kb.level + l.rate_limit * least(extract(epoch FROM l.rate_per) * 1000000,
                                                 greatest(0, extract(epoch FROM flowforge.now() - kb.refilled_at) * 1000000)))
                             END AS level
                      WHERE l.rate_name IS NOT NULL) x) kt ON true) END AS flow,
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
        -- Flow control (0028): a paused queue first (nothing is claimed from it, due or not), then,
        -- for due work, the limit that holds it back: its queue's, then its key's.
        WHEN (f.flow #>> '{queue,paused}')::boolean THEN 'queue_paused'
        WHEN u.status IN ('ready', 'pending') AND u.available_at > flowforge.now() THEN 'backoff'
        WHEN (f.flow #>> '{queue,running}')::integer >= (f.flow #>> '{queue,max_running}')::integer
            THEN 'queue_at_concurrency_limit'
        WHEN (f.flow #>> '{queue,rate,tokens}')::numeric < 1 THEN 'queue_rate_limited'
        WHEN (f.flow #>> '{concurrency,running}')::integer >= (f.flow #>> '{concurrency,max}')::integer
            THEN 'key_at_concurrency_limit'
        WHEN (f.flow #>> '{rate_limit,tokens}')::numeric < 1 THEN 'key_rate_limited'
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
  'flow control''s queue_paused (before backoff), queue_at_concurrency_limit, queue_rate_limited, '
  'key_at_concurrency_limit and key_rate_limited (until: the next token), with the limits and counters in '
  'detail.flow. explanation says it in words, detail in data.';

CREATE OR REPLACE VIEW flowforge.queue_depth WITH (security_invoker = true) AS
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
), lanes AS (
    -- Flow control (0028): ready (pending), due units per lane, through the lane indexes (0029).
    SELECT tr.organization_id, 'task_run'::text AS unit_kind, tr.queue::text AS queue, tr.flow_lane, count(*) AS n
    FROM flowforge.task_run tr
    WHERE tr.state = 'ready' AND tr.flow_lane IS NOT NULL AND tr.ready_at <= flowforge.now()
    GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT w.organization_id, 'work_item', w.queue, w.flow_lane, count(*)
    FROM flowforge.work_item w
    WHERE w.status = 'pending' AND w.flow_lane IS NOT NULL AND w.next_attempt_at <= flowforge.now()
    GROUP BY 1, 2, 3, 4
), keyed AS (
    -- Per queue and kind: each concurrency key and rate-limit key its ready work names, with its
    -- counter or bucket as it stands (the token arithmetic of _flow_refill, inline) and how much
    -- of that work the key holds back now.
    SELECT g.organization_id, g.unit_kind, g.queue,
           jsonb_agg(jsonb_build_object('key', g.conc_name, 'value', g.conc_value, 'max', g.conc_max,
                                        'running', g.running, 'ready', g.n,
                                        'held_back', greatest(0, g.n - greatest(0, g.conc_max - g.running)))
                     ORDER BY g.conc_name, g.conc_value) FILTER (WHERE g.kind = 'concurrency') AS keys,
           jsonb_agg(jsonb_build_object('key', g.conc_name, 'value', g.conc_value, 'limit', g.conc_max,
                                        'per', g.per, 'tokens', g.tokens, 'ready', g.n,
                                        'held_back', greatest(0, g.n - floor(g.tokens)))
                     ORDER BY g.conc_name, g.conc_value) FILTER (WHERE g.kind = 'rate') AS rate_keys,
           coalesce(sum(greatest(0, g.n - greatest(0, g.conc_max - g.running))) FILTER (WHERE g.kind = 'concurrency'), 0)
               AS held_by_keys,
           coalesce(sum(greatest(0, g.n - floor(g.tokens))) FILTER (WHERE g.kind = 'rate'), 0) AS held_by_rate_keys
    FROM (
        SELECT ln.organization_id, ln.unit_kind, ln.queue, 'concurrency'::text AS kind, l.conc_name, l.conc_value,
               l.conc_max, coalesce(max(s.running), 0) AS running, sum(ln.n) AS n, NULL::interval AS per,
               NULL::numeric AS tokens
        FROM lanes ln
        JOIN flowforge.flow_lane l ON l.organization_id = ln.organization_id AND l.id = ln.flow_lane
        LEFT JOIN flowforge.flow_slot s ON s.organization_id = l.organization_id AND s.scope = 'key'
                                       AND s.name = l.conc_name AND s.value = l.conc_value
        WHERE l.conc_name IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        UNION ALL
        SELECT ln.organization_id, ln.unit_kind, ln.queue, 'rate', l.rate_name, l.rate_value, l.rate_limit, NULL,
               sum(ln.n), l.rate_per,
               -- tokens now; a bucket never used is full
               trim_scale(round(CASE WHEN max(b.level) IS NULL THEN l.rate_limit::numeric
                    ELSE least(l.rate_limit * extract(epoch FROM l.rate_per) * 1000000,
                               max(b.level) + l.rate_limit * least(extract(epoch FROM l.rate_per) * 1000000,
                                   greatest(0, extract(epoch FROM flowforge.now() - max(b.refilled_at)) * 1000000)))
                         / (extract(epoch FROM l.rate_per) * 1000000) END, 6))
        FROM lanes ln
        JOIN flowforge.flow_lane l ON l.organization_id = ln.organization_id AND l.id = ln.flow_lane
        LEFT JOIN flowforge.flow_bucket b ON b.organization_id = l.organization_id AND b.scope = 'key'
                                         AND b.name = l.rate_name AND b.value = l.rate_value
                                         AND b.rate_limit = l.rate_limit AND b.rate_per = l.rate_per
        WHERE l.rate_name IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5, 6, 7, l.rate_per) g
    GROUP BY g.organization_id, g.unit_kind, g.queue
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
       coalesce(l.ready, 0) AS ready, coalesce(l.running, 0) AS running, coalesce(l.scheduled, 0) AS scheduled,
       l.oldest_ready_at, flowforge.now() - l.oldest_ready_at AS oldest_ready_age, l.next_scheduled_at,
       coalesce(cl.claims, 0) AS claims_last_minute,
       -- Flow control (0028): the queue's switches and limits, the running counter max_running keeps
       -- (both kinds of unit), tokens left, and what each rule holds back now (a unit may be held by
       -- more than one; keys: per key, see flow.keys / flow.rate_keys).
       coalesce(q.paused, false) AS paused, q.max_running,
       CASE WHEN q.rate_limit IS NOT NULL THEN jsonb_build_object('limit', q.rate_limit, 'per', q.rate_per,
                                                                  'tokens', qt.tokens) END AS rate,
       CASE WHEN q.flow THEN jsonb_strip_nulls(jsonb_build_object(
           'running', CASE WHEN q.max_running IS NOT NULL THEN coalesce(qs.running, 0) END,
           'keys', kd.keys, 'rate_keys', kd.rate_keys,
           'held_back', jsonb_build_object(
               'queue_paused', CASE WHEN q.paused THEN coalesce(l.ready, 0) ELSE 0 END,
               'queue_concurrency', CASE WHEN q.max_running IS NOT NULL
                                         THEN greatest(0, coalesce(l.ready, 0) - greatest(0, q.max_running - coalesce(qs.running, 0)))
                                         ELSE 0 END,
               'queue_rate', CASE WHEN q.rate_limit IS NOT NULL
                                  THEN greatest(0, coalesce(l.ready, 0) - floor(qt.tokens)) ELSE 0 END,
               'key_concurrency', coalesce(kd.held_by_keys, 0),
               'key_rate', coalesce(kd.held_by_rate_keys, 0)))) END AS flow
FROM (SELECT organization_id, unit_kind, queue FROM live
      UNION
      SELECT organization_id, unit_kind, queue FROM claims WHERE queue IS NOT NULL) k
LEFT JOIN live l ON (l.organization_id, l.unit_kind, l.queue) = (k.organization_id, k.unit_kind, k.queue)
LEFT JOIN claims cl ON (cl.organization_id, cl.unit_kind, cl.queue) = (k.organization_id, k.unit_kind, k.queue)
LEFT JOIN flowforge.organization o ON o.id = k.organization_id
LEFT JOIN flowforge.queue q ON q.organization_id = k.organization_id AND q.name = k.queue
LEFT JOIN keyed kd ON (kd.organization_id, kd.unit_kind, kd.queue) = (k.organization_id, k.unit_kind, k.queue)
LEFT JOIN flowforge.flow_slot qs ON q.max_running IS NOT NULL AND qs.organization_id = k.organization_id AND qs.scope = 'queue'
                                AND qs.name = k.queue AND qs.value = 'null'
LEFT JOIN flowforge.flow_bucket qb ON q.rate_limit IS NOT NULL AND qb.organization_id = k.organization_id
                                  AND qb.scope = 'queue' AND qb.name = k.queue AND qb.value = 'null'
                                  AND qb.rate_limit = q.rate_limit AND qb.rate_per = q.rate_per
LEFT JOIN LATERAL (
    SELECT trim_scale(round(CASE WHEN qb.level IS NULL THEN q.rate_limit::numeric
                ELSE least(q.rate_limit * extract(epoch FROM q.rate_per) * 1000000,
                           qb.level + q.rate_limit * least(extract(epoch FROM q.rate_per) * 1000000,
                               greatest(0, extract(epoch FROM flowforge.now() - qb.refilled_at) * 1000000)))
                     / (extract(epoch FROM q.rate_per) * 1000000) END, 6)) AS tokens
    WHERE q.rate_limit IS NOT NULL) qt ON true;
COMMENT ON VIEW flowforge.queue_depth IS
  'How deep is each queue? Per organization, queue and kind of unit (task_run: DAG tasks, claim(); work_item: graph '
  'visits, machine actions, fan-out children, claim_work()): ready now, running (or dispatched), scheduled later '
  '(a backoff or a retry), the oldest ready one and its age, and claims in the last minute (claimed events, through '
  'idx_event_throughput). Flow control: paused, max_running, rate (with the tokens left now) and flow — the running '
  'counter of the queue, each concurrency key (max, running, ready, held back) and rate-limit key (tokens, ready, '
  'held back) its ready work names, and how many ready units each rule holds back now. A queue with nothing live and '
  'no recent claim has no row.';
