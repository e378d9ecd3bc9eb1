-- The work-item queue (seed 002's work_item): the queue every engine claims
-- from, except a DAG task's own attempt (a task_run, claimed with claim()).
--
--   claim_work(queues, agent, lease, batch, engine_kinds, task_names) -> the items taken
--   heartbeat_work(work_item_id, fencing_token, lease) -> new lease expiry
--   complete_work(work_item_id, fencing_token, output)
--   fail_work(work_item_id, fencing_token, error, retryable)
--
-- The same rules as the task protocol: lower priority first, then oldest
-- ready, FOR UPDATE SKIP LOCKED; a fencing token bumped on every claim and
-- named by every later write; the lease reaped by tick(); retries with
-- backoff; one event per transition; NOTIFY flowforge_ready when work becomes
-- ready. What an item's fate means for its run goes through the engine hooks,
-- with the run's directory row locked first (lock order: the run, then its
-- items).

-- A new unit of work for a run, from its definition node (a task row). The
-- node is passed by id, not as a row: an argument of the table's row type
-- would make the table undroppable by a migration's rollback. A fan-out
-- child names its checkpoint, generation and element.
CREATE OR REPLACE FUNCTION flowforge._enqueue_work(p_org uuid, p_engine text, p_run_id uuid, p_task_id uuid,
                                                   p_task_name text, p_payload jsonb, p_affinity_key text,
                                                   p_now timestamptz, p_parent_work_item_id uuid DEFAULT NULL,
                                                   p_checkpoint_id uuid DEFAULT NULL,
                                                   p_checkpoint_generation integer DEFAULT NULL,
                                                   p_item_index integer DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_id uuid;
BEGIN
    INSERT INTO flowforge.work_item (organization_id, engine_kind, parent_work_item_id, run_id, task_id, task_name,
                                     queue, worker_params, payload, status, priority, next_attempt_at, max_retries,
                                     backoff, backoff_factor, max_backoff, timeout, affinity_key, affinity_policy,
                                     checkpoint_id, checkpoint_generation, item_index, flow_lane, created_at, created_by)
    SELECT p_org, p_engine, p_parent_work_item_id, p_run_id, t.id, p_task_name, t.queue, t.worker_params, p_payload,
           'pending', t.priority, p_now, t.max_attempts - 1, t.backoff, t.backoff_factor, t.max_backoff, t.timeout,
           p_affinity_key, CASE WHEN p_affinity_key IS NOT NULL THEN t.affinity_policy END, p_checkpoint_id,
           p_checkpoint_generation, p_item_index,
           -- Flow control's keys, evaluated against the payload (a fanning node's own item
           -- is held by the engine: its children carry them).
           CASE WHEN t.flow IS NOT NULL AND (p_checkpoint_id IS NOT NULL OR NOT coalesce(t.spec ? 'map', false))
                THEN flowforge._flow_lane(p_org, t.flow, p_payload, p_now) END,
           p_now, flowforge._principal()
    FROM flowforge.task t WHERE t.id = p_task_id AND t.organization_id = p_org
    RETURNING id INTO STRICT v_id;
    PERFORM flowforge._append_events(p_org, p_run_id, 'created', ARRAY[NULL::uuid], ARRAY[NULL::text], ARRAY['pending'],
                                     ARRAY[0::bigint], ARRAY[1],
                                     ARRAY[CASE WHEN p_item_index IS NOT NULL THEN jsonb_build_object('index', p_item_index) END],
                                     p_now, ARRAY[v_id]);
    PERFORM flowforge._notify_ready();
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge._enqueue_work(uuid, text, uuid, uuid, text, jsonb, text, timestamptz, uuid, uuid, integer, integer) IS
  'Internal: a pending work item named p_task_name of engine p_engine for run p_run_id, carrying node p_task_id''s '
  'queue, priority, retry policy, timeout, selectors and (with p_affinity_key) affinity — for a fan-out child, its '
  'checkpoint, generation and element index; event created, NOTIFY flowforge_ready. Returns its id.';

-- Who reacts to a work item's fate: its engine, or — for a fan-out child — its fan-out.
CREATE OR REPLACE FUNCTION flowforge._unit_kind(p_engine text, p_checkpoint_id uuid) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN p_checkpoint_id IS NULL THEN p_engine ELSE 'fanout' END $$;
COMMENT ON FUNCTION flowforge._unit_kind(text, uuid) IS
  'Internal: the hook kind of a work item — its engine kind, or fanout for a fan-out child (it has a checkpoint).';

CREATE OR REPLACE FUNCTION flowforge.claim_work(queues text[], agent text, lease interval DEFAULT '30 seconds',
                                                batch integer DEFAULT 1, engine_kinds text[] DEFAULT NULL,
                                                task_names text[] DEFAULT NULL)
RETURNS TABLE (work_item_id uuid, run_id uuid, engine_kind text, task_name text, attempt integer,
               fencing_token bigint, payload jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_agent record;
    v_ids uuid[];
    v_pinned record;
    v_pin boolean;            -- the pick took work with an affinity key (the flow pick pins its own)
    v_holders uuid[];         -- flow control: the items whose claim takes slots, and of them
    v_queue_holders uuid[];   -- those that take a slot of their queue's max_running
BEGIN
    IF claim_work.queues IS NULL OR cardinality(claim_work.queues) = 0 OR array_position(claim_work.queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'claim_work needs at least one queue name and no NULLs'
            USING ERRCODE = 'FF003', HINT = 'Pass queues => ARRAY[''default''].';
    END IF;
    IF claim_work.agent IS NULL OR length(claim_work.agent) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'agent must be a name of 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'The agent''s registered name, or something that identifies the process.';
    END IF;
    IF claim_work.batch IS NULL OR claim_work.batch NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 1000, got %', coalesce(claim_work.batch::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Claim at most as many items as you have free capacity for.';
    END IF;
    IF claim_work.engine_kinds IS NOT NULL
       AND (cardinality(claim_work.engine_kinds) = 0 OR array_position(claim_work.engine_kinds, NULL) IS NOT NULL
            OR NOT claim_work.engine_kinds <@ ARRAY['dag', 'graph', 'statemachine']) THEN
        RAISE EXCEPTION 'engine_kinds must be NULL (any) or a list of dag, graph, statemachine'
            USING ERRCODE = 'FF003', HINT = 'The engines this agent serves.';
    END IF;
    IF claim_work.task_names IS NOT NULL
       AND (cardinality(claim_work.task_names) NOT BETWEEN 1 AND 1000 OR array_position(claim_work.task_names, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'task_names must be NULL (any task) or 1 to 1000 task names without NULLs'
            USING ERRCODE = 'FF003', HINT = 'Pass the task names this worker has handlers for.';
    END IF;
    PERFORM flowforge._check_lease(claim_work.lease);
    -- One statement before the pick, as in claim(): the claimer as an agent (the rule
    -- _claiming_agent had, inline) and whether a queue it names has flow control.
    WITH a AS (
        UPDATE flowforge.agent a SET last_claim_at = v_now
        WHERE a.organization_id = v_org AND a.name = claim_work.agent
        RETURNING flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                          (SELECT s.agent_timeout FROM flowforge.setting s), v_now) AS status,
                  a.metadata AS labels
    )
    SELECT a.status IS NOT NULL AS registered, coalesce(a.status, 'active') AS status,
           coalesce(a.labels, '{}'::jsonb) AS labels,
           EXISTS (SELECT 1 FROM flowforge.queue q
                   WHERE q.organization_id = v_org AND q.name = ANY (claim_work.queues) AND q.flow) AS flow
    INTO v_agent
    FROM (SELECT) AS one LEFT JOIN a ON true;
    IF v_agent.status <> 'active' THEN
        RETURN;  -- draining or inactive: given nothing
    END IF;

    -- Pick first, into an array (the LIMIT runs once): lower priority first, then
    -- ready longest; one ordered index scan per queue (and per name), merged.
    IF v_agent.flow THEN
        -- Flow control (22_flow_control.sql), as in claim(): its pick also pins and counts.
        SELECT p.ids, p.holders, p.queue_holders INTO v_ids, v_holders, v_queue_holders
        FROM flowforge._flow_pick('work_item', v_org, claim_work.queues, claim_work.batch, v_now, claim_work.agent,
                                  v_agent.registered, v_agent.labels, claim_work.task_names, claim_work.engine_kinds) p;
    ELSIF claim_work.task_names IS NOT NULL THEN
        -- Only what the caller can run: one ordered scan of work_item_ready_by_name_idx per
        -- (queue, name). Its own statement, as in claim(): a "name IS NULL OR task_name = name"
        -- filter cannot be an index condition, so the generic plan would walk
        -- work_item_status_priority_idx past every pending item of other names on the queue.
        SELECT array_agg(p.id), bool_or(p.affinity_key IS NOT NULL) INTO v_ids, v_pin FROM (
            SELECT c.id, c.affinity_key
            FROM (SELECT DISTINCT u.name FROM unnest(claim_work.queues) AS u(name)) AS q(name)
            CROSS JOIN (SELECT DISTINCT n.name FROM unnest(claim_work.task_names) AS n(name)) AS k(name)
            CROSS JOIN LATERAL (
                SELECT w.id, w.priority, w.next_attempt_at, w.affinity_key FROM flowforge.work_item w
                WHERE w.organization_id = v_org AND w.status = 'pending' AND w.queue = q.name
                  AND w.task_name = k.name AND w.next_attempt_at <= v_now
                  AND (claim_work.engine_kinds IS NULL OR w.engine_kind = ANY (claim_work.engine_kinds))
                  AND (w.worker_params IS NULL OR v_agent.labels @> w.worker_params)
                  AND (w.affinity_key IS NULL
                       OR (v_agent.registered AND NOT flowforge._pinned_elsewhere(v_org, w.affinity_key, w.affinity_policy,
                                                                                   claim_work.agent, v_now)))
                ORDER BY w.priority, w.next_attempt_at
                LIMIT claim_work.batch
                FOR UPDATE SKIP LOCKED) c
            ORDER BY c.priority, c.next_attempt_at
            LIMIT claim_work.batch) p;
    ELSE
        SELECT array_agg(p.id), bool_or(p.affinity_key IS NOT NULL) INTO v_ids, v_pin FROM (
            SELECT c.id, c.affinity_key
            FROM (SELECT DISTINCT u.name FROM unnest(claim_work.queues) AS u(name)) AS q(name)
            CROSS JOIN LATERAL (
                SELECT w.id, w.priority, w.next_attempt_at, w.affinity_key FROM flowforge.work_item w
                WHERE w.organization_id = v_org AND w.status = 'pending' AND w.queue = q.name
                  AND w.next_attempt_at <= v_now
                  AND (claim_work.engine_kinds IS NULL OR w.engine_kind = ANY (claim_work.engine_kinds))
                  AND (w.worker_params IS NULL OR v_agent.labels @> w.worker_params)
                  AND (w.affinity_key IS NULL
                       OR (v_agent.registered AND NOT flowforge._pinned_elsewhere(v_org, w.affinity_key, w.affinity_policy,
                                                                                   claim_work.agent, v_now)))
                ORDER BY w.priority, w.next_attempt_at
                LIMIT claim_work.batch
                FOR UPDATE SKIP LOCKED) c
            ORDER BY c.priority, c.next_attempt_at
            LIMIT claim_work.batch) p;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    -- Pin what is unpinned, only when the pick took keyed work (the flow pick pins its own).
    IF v_pin THEN
        FOR v_pinned IN
            SELECT w.id, w.affinity_key, w.affinity_policy FROM flowforge.work_item w
            WHERE w.organization_id = v_org AND w.id = ANY (v_ids) AND w.affinity_key IS NOT NULL
        LOOP
            IF NOT flowforge._affinity_take(v_org, v_pinned.affinity_key, v_pinned.affinity_policy, claim_work.agent, v_now) THEN
                v_ids := array_remove(v_ids, v_pinned.id);
            END IF;
        END LOOP;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE flowforge.work_item w
        SET status = 'dispatched', fencing_token = w.fencing_token + 1, agent_id = claim_work.agent,
            leased_by = claim_work.agent, dispatched_at = v_now,
            lease_expires_at = v_now + CASE WHEN w.timeout < claim_work.lease THEN w.timeout ELSE claim_work.lease END,
            -- Flow control: this generation holds the slots its pick took (the release trigger gives them back).
            flow_token = CASE WHEN w.id = ANY (v_holders) THEN w.fencing_token + 1 END,
            flow_queue_slot = CASE WHEN w.id = ANY (v_holders) THEN w.id = ANY (v_queue_holders) END
        WHERE w.organization_id = v_org AND w.id = ANY (v_ids)  -- locked by the pick above: still pending
        RETURNING w.id, w.organization_id, w.run_id, w.engine_kind, w.task_name, w.retry_count, w.fencing_token,
                  w.payload, w.lease_expires_at
    ), events AS (
        -- Fast path, as in claim(): the event rows inline (see _append_events).
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, work_item_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        SELECT c.organization_id, c.run_id, c.id, 'claimed', 'pending', 'dispatched', c.fencing_token,
               c.retry_count + 1, jsonb_build_object('agent', claim_work.agent), v_now
        FROM claimed c
    )
    SELECT c.id, c.run_id, c.engine_kind::text, c.task_name::text, c.retry_count + 1, c.fencing_token, c.payload,
           c.lease_expires_at
    FROM claimed c;
END;
$$;
COMMENT ON FUNCTION flowforge.claim_work(text[], text, interval, integer, text[], text[]) IS
  'claim_work(queues text[], agent text, lease interval default ''30 seconds'', batch int default 1, engine_kinds '
  'text[] default null, task_names text[] default null) -> setof (work_item_id, run_id, engine_kind, task_name, '
  'attempt, fencing_token, payload, lease_expires_at). Takes up to batch pending work items of the given queues in '
  'the caller''s organization whose next_attempt_at has come — lower priority first, then the longest ready — with FOR '
  'UPDATE SKIP LOCKED, only of engine_kinds (when given) and task_names (when given). A registered agent that is '
  'draining or inactive gets nothing; items ask for labels (worker_params, matched by containment against the '
  'agent''s labels) and may be pinned by affinity (an unregistered worker takes no pinned item). Each becomes '
  'dispatched to the agent with a new fencing token and a lease (capped by the item''s timeout); event claimed. '
  'Flow control as in claim(): paused queues, max_running, concurrency and rate-limit keys, fairness keys; an item '
  'held back stays pending. Errors: FF003 bad arguments; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.claim_work(text[],text,interval,integer,text[],text[])', 'flowforge_owner',
    '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.heartbeat_work(work_item_id uuid, fencing_token bigint,
                                                    lease interval DEFAULT '30 seconds')
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_expires timestamptz;
BEGIN
    PERFORM flowforge._check_lease(heartbeat_work.lease);
    UPDATE flowforge.work_item w
    SET lease_expires_at = CASE WHEN w.dispatched_at + w.timeout < v_now + heartbeat_work.lease
                                THEN w.dispatched_at + w.timeout ELSE v_now + heartbeat_work.lease END
    WHERE w.id = heartbeat_work.work_item_id
      AND w.fencing_token = heartbeat_work.fencing_token
      AND w.status = 'dispatched'
      AND w.leased_by IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
      AND w.organization_id = v_org
      AND (w.timeout IS NULL OR w.dispatched_at + w.timeout > v_now)
    RETURNING w.lease_expires_at INTO v_expires;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_item_write(heartbeat_work.work_item_id, heartbeat_work.fencing_token, 'heartbeat_work');
    END IF;
    RETURN v_expires;
END;
$$;
COMMENT ON FUNCTION flowforge.heartbeat_work(uuid, bigint, interval) IS
  'heartbeat_work(work_item_id uuid, fencing_token bigint, lease interval default ''30 seconds'') -> timestamptz. '
  'Extends the lease of a dispatched work item held under this fencing token to now + lease (never past '
  'dispatched_at + timeout) and returns the new expiry. Records no event. Errors: FF001 no such work item; FF004 '
  'stale token, lease reaped, run cancelled, timeout exceeded or a fanning item — stop and drop the result; FF005 not dispatched; '
  'FF003 bad lease; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.heartbeat_work(uuid,bigint,interval)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.complete_work(work_item_id uuid, fencing_token bigint, output jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_item record;
BEGIN
    PERFORM flowforge._check_size(complete_work.output, 'work item output');
    -- Lock order: the run's directory row first, then the item.
    IF flowforge._lock_run(v_org, (SELECT w.run_id FROM flowforge.work_item w
                                   WHERE w.id = complete_work.work_item_id AND w.organization_id = v_org)) IS NULL THEN
        PERFORM flowforge._refuse_item_write(complete_work.work_item_id, complete_work.fencing_token, 'complete_work');
    END IF;
    WITH done AS (
        UPDATE flowforge.work_item w
        SET status = 'completed', output = complete_work.output, completed_at = greatest(v_now, w.dispatched_at),
            lease_expires_at = NULL, error = NULL
        WHERE w.id = complete_work.work_item_id
          AND w.fencing_token = complete_work.fencing_token
          AND w.status = 'dispatched'
          AND w.leased_by IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
          AND w.organization_id = v_org
        RETURNING w.run_id, flowforge._unit_kind(w.engine_kind, w.checkpoint_id) AS engine_kind, w.task_id, w.retry_count
    ), event AS (
        -- Fast path, measured (the graph step): the event row inline (see _append_events).
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, work_item_id, kind, from_state, to_state,
                                              fencing_token, attempt, created_at)
        SELECT v_org, d.run_id, complete_work.work_item_id, 'completed', 'dispatched', 'completed',
               complete_work.fencing_token, d.retry_count + 1, v_now
        FROM done d
    )
    SELECT d.run_id, d.engine_kind, d.task_id INTO v_item FROM done d;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_item_write(complete_work.work_item_id, complete_work.fencing_token, 'complete_work');
    END IF;
    PERFORM flowforge._on_task_succeeded(v_item.engine_kind, v_org, v_item.run_id, complete_work.work_item_id,
                                         v_item.task_id, v_now);
END;
$$;
COMMENT ON FUNCTION flowforge.complete_work(uuid, bigint, jsonb) IS
  'complete_work(work_item_id uuid, fencing_token bigint, output jsonb default null). The holder of a dispatched work '
  'item reports success: the item completes with output, and its engine reacts in the same transaction (a graph '
  'merges the output into the run''s data and takes its next edge). Event completed. Errors: FF001 no such work '
  'item; FF004 stale token or a fanning item — drop the result; FF005 not dispatched (already completed, failed or retried); FF009 '
  'output over the limits; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.complete_work(uuid,bigint,jsonb)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.fail_work(work_item_id uuid, fencing_token bigint, error text,
                                               retryable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_item record;
BEGIN
    PERFORM flowforge._check_text_size(fail_work.error, 'error text');
    IF flowforge._lock_run(v_org, (SELECT w.run_id FROM flowforge.work_item w
                                   WHERE w.id = fail_work.work_item_id AND w.organization_id = v_org)) IS NULL THEN
        PERFORM flowforge._refuse_item_write(fail_work.work_item_id, fail_work.fencing_token, 'fail_work');
    END IF;
    -- One retry rule for every unit of work: _retries_left + _backoff, as fail() and the reapers.
    UPDATE flowforge.work_item w
    SET status = CASE WHEN flowforge._retries_left(fail_work.retryable, w.retry_count + 1, w.max_retries + 1)
                      THEN 'pending' ELSE 'failed' END,
        retry_count = CASE WHEN flowforge._retries_left(fail_work.retryable, w.retry_count + 1, w.max_retries + 1)
                           THEN w.retry_count + 1 ELSE w.retry_count END,
        next_attempt_at = CASE WHEN flowforge._retries_left(fail_work.retryable, w.retry_count + 1, w.max_retries + 1)
                               THEN v_now + flowforge._backoff(w.backoff, w.backoff_factor, w.max_backoff, w.retry_count + 1)
                               ELSE w.next_attempt_at END,
        completed_at = CASE WHEN flowforge._retries_left(fail_work.retryable, w.retry_count + 1, w.max_retries + 1)
                            THEN NULL ELSE greatest(v_now, w.dispatched_at) END,
        lease_expires_at = NULL,
        error = fail_work.error
    WHERE w.id = fail_work.work_item_id
      AND w.fencing_token = fail_work.fencing_token
      AND w.status = 'dispatched'
      AND w.leased_by IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
      AND w.organization_id = v_org
    RETURNING w.run_id, flowforge._unit_kind(w.engine_kind, w.checkpoint_id) AS engine_kind, w.task_id, w.status,
              w.retry_count, w.next_attempt_at INTO v_item;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_item_write(fail_work.work_item_id, fail_work.fencing_token, 'fail_work');
    END IF;
    PERFORM flowforge._append_events(v_org, v_item.run_id,
        CASE WHEN v_item.status = 'pending' THEN 'retry_scheduled' ELSE 'failed' END,
        ARRAY[NULL::uuid], ARRAY['dispatched'], ARRAY[v_item.status::text], ARRAY[fail_work.fencing_token],
        ARRAY[v_item.retry_count + 1],
        ARRAY[jsonb_build_object('error', left(fail_work.error, 1000), 'retryable', coalesce(fail_work.retryable, true))
              || CASE WHEN v_item.status = 'pending' THEN jsonb_build_object('next_attempt_at', v_item.next_attempt_at)
                      ELSE '{}' END],
        v_now, ARRAY[fail_work.work_item_id]);
    IF v_item.status = 'failed' THEN
        PERFORM flowforge._on_task_failed_for_good(v_item.engine_kind, v_org, v_item.run_id, fail_work.work_item_id,
                                                   v_item.task_id, v_now);
    ELSE
        PERFORM flowforge._on_task_requeued(v_item.engine_kind, v_org, v_item.run_id, fail_work.work_item_id,
                                            v_item.task_id, v_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.fail_work(uuid, bigint, text, boolean) IS
  'fail_work(work_item_id uuid, fencing_token bigint, error text, retryable boolean default true). The holder of a '
  'dispatched work item reports failure. With retryable and retries left: back to pending with retry_count + 1 and '
  'next_attempt_at after backoff * backoff_factor^(attempt-1), capped at max_backoff (event retry_scheduled). '
  'Otherwise failed (event failed), and its engine reacts in the same transaction (a graph run fails with the error). '
  'Errors: FF001 no such work item; FF004 stale token or a fanning item — drop the result; FF005 not dispatched; FF009 error text over '
  'the size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.fail_work(uuid,bigint,text,boolean)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');
