-- The worker protocol: claim, heartbeat, complete, fail.
--
--   claim(queues, worker, lease, batch) -> the tasks taken, each with a fencing token
--   heartbeat(task_run_id, fencing_token, lease) -> new lease expiry
--   complete(task_run_id, fencing_token, output)
--   fail(task_run_id, fencing_token, error, retryable)
--
-- Every write after claim names the fencing token it was given; each is one
-- conditional UPDATE on (id, fencing_token, state = 'running'), and a miss is
-- explained by _refuse_task_write (FF001 / FF004 / FF005).
--
-- These know fencing tokens, leases and retries; what a task's success or
-- failure means for its run goes through the engine hooks (25_engine_hooks.sql),
-- except complete's settle: task_run is the DAG's unit, and complete's one
-- statement settles the run as the DAG's hook would (twin-tested).
-- claim and complete build their event rows and claim its input inline, as
-- measured fast paths (docs/execution-model.md); the twin tests keep them in
-- step with _append_events, _task_input and complete_many.

-- The retry policy: whether a failed attempt goes again, and after how long.
-- fail() and the reaper both decide with these two, so "retry or fail for
-- good" is one rule (tests/sql/10_substrate/task_protocol/fail_matches_reaper.sql).

-- Inlined by the planner (plain SQL, no SET clause): free in an UPDATE's SET list.
CREATE OR REPLACE FUNCTION flowforge._retries_left(p_retryable boolean, p_attempt integer, p_max_attempts integer)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT p_retryable IS NOT FALSE AND p_attempt < p_max_attempts $$;
COMMENT ON FUNCTION flowforge._retries_left(boolean, integer, integer) IS
  'Internal: true when a failed attempt p_attempt of p_max_attempts goes again (a NULL retryable counts as true).';

-- Backoff before attempt n + 1: backoff * factor^(n - 1), capped at max_backoff.
CREATE OR REPLACE FUNCTION flowforge._backoff(p_backoff interval, p_factor numeric, p_max interval, p_attempt integer)
RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT least(extract(epoch FROM p_backoff)::float8 * power(p_factor::float8, least(p_attempt - 1, 60)),
                 extract(epoch FROM p_max)::float8) * interval '1 second'
$$;
COMMENT ON FUNCTION flowforge._backoff(interval, numeric, interval, integer) IS
  'Internal: the wait before retrying after attempt p_attempt failed: backoff * factor^(attempt-1), at most max.';

-- Lock the run a task run belongs to, honouring the lock order. Returns the
-- run id, or NULL when the task run does not exist in this organization.
CREATE OR REPLACE FUNCTION flowforge._lock_run_of(p_task_run_id uuid) RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_org constant uuid := flowforge.current_organization();
    v_run_id uuid;
BEGIN
    SELECT r.id INTO v_run_id
    FROM flowforge.workflow_run r
    WHERE r.id = (SELECT tr.workflow_run_id FROM flowforge.task_run tr
                  WHERE tr.id = p_task_run_id AND tr.organization_id = v_org)
      AND r.organization_id = v_org
    FOR NO KEY UPDATE OF r;
    RETURN v_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._lock_run_of(uuid) IS
  'Internal: locks (FOR NO KEY UPDATE) the workflow_run of a task run of the caller''s organization and returns its id; '
  'NULL when there is no such task run.';

CREATE OR REPLACE FUNCTION flowforge.claim(queues text[], worker text, lease interval DEFAULT '30 seconds',
                                           batch integer DEFAULT 1, task_names text[] DEFAULT NULL)
RETURNS TABLE (task_run_id uuid, workflow_run_id uuid, task_key text, attempt integer,
               fencing_token bigint, input jsonb, lease_expires_at timestamptz)
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
    v_holders uuid[];         -- flow control: the units whose claim takes slots, and of them
    v_queue_holders uuid[];   -- those that take a slot of their queue's max_running
BEGIN
    IF claim.queues IS NULL OR cardinality(claim.queues) = 0 OR array_position(claim.queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'claim needs at least one queue name and no NULLs'
            USING ERRCODE = 'FF003', HINT = 'Pass queues => ARRAY[''default''].';
    END IF;
    IF claim.worker IS NULL OR length(claim.worker) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'worker must be a name of 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'Use something that identifies the process, such as host:pid.';
    END IF;
    IF claim.batch IS NULL OR claim.batch NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 1000, got %', coalesce(claim.batch::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Claim at most as many tasks as you have free capacity for.';
    END IF;
    IF claim.task_names IS NOT NULL
       AND (cardinality(claim.task_names) NOT BETWEEN 1 AND 1000 OR array_position(claim.task_names, NULL) IS NOT NULL) THEN
        RAISE EXCEPTION 'task_names must be NULL (any task) or 1 to 1000 task names without NULLs'
            USING ERRCODE = 'FF003', HINT = 'Pass the task names this worker has handlers for.';
    END IF;
    PERFORM flowforge._check_lease(claim.lease);
    -- One statement before the pick, where there were up to three (benchmarks/profile_statements.py:
    -- 8 us of a claim): the claimer as an agent, by the rule _claiming_agent had, inline (a worker
    -- that never registered is active with no labels; a registered one gets nothing while draining
    -- or inactive), and whether a queue it names has flow control.
    WITH a AS (
        UPDATE flowforge.agent a SET last_claim_at = v_now
        WHERE a.organization_id = v_org AND a.name = claim.worker
        RETURNING flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                          (SELECT s.agent_timeout FROM flowforge.setting s), v_now) AS status,
                  a.metadata AS labels
    )
    SELECT a.status IS NOT NULL AS registered, coalesce(a.status, 'active') AS status,
           coalesce(a.labels, '{}'::jsonb) AS labels,
           EXISTS (SELECT 1 FROM flowforge.queue q
                   WHERE q.organization_id = v_org AND q.name = ANY (claim.queues) AND q.flow) AS flow
    INTO v_agent
    FROM (SELECT) AS one LEFT JOIN a ON true;
    IF v_agent.status <> 'active' THEN
        RETURN;
    END IF;

    -- Pick first, into an array, so the LIMIT runs exactly once (a LIMIT inside
    -- an IN-subquery of the UPDATE may be re-executed and take more rows).
    -- Lower priority first, then longest ready. Selectors (worker_params) must
    -- be contained in the agent's labels; work pinned to another agent that
    -- keeps it is not even considered.
    IF v_agent.flow THEN
        -- Flow control (22_flow_control.sql): a queue paused, limited or keyed. Its pick
        -- also pins and counts; queues without it take the statements below, unchanged.
        SELECT p.ids, p.holders, p.queue_holders INTO v_ids, v_holders, v_queue_holders
        FROM flowforge._flow_pick('task_run', v_org, claim.queues, claim.batch, v_now, claim.worker,
                                  v_agent.registered, v_agent.labels, claim.task_names, NULL) p;
    ELSIF claim.task_names IS NOT NULL THEN
        -- Only what the caller can run: one ordered scan of idx_taskrun_ready_by_name per
        -- (queue, name), then the best of them. Tasks nobody handles stay ready.
        SELECT array_agg(p.id), bool_or(p.affinity_key IS NOT NULL) INTO v_ids, v_pin FROM (
            SELECT c.id, c.affinity_key
            FROM (SELECT DISTINCT u.name FROM unnest(claim.queues) AS u(name)) AS q(name)
            CROSS JOIN (SELECT DISTINCT n.name FROM unnest(claim.task_names) AS n(name)) AS k(name)
            CROSS JOIN LATERAL (
                SELECT tr.id, tr.priority, tr.ready_at, tr.affinity_key FROM flowforge.task_run tr
                WHERE tr.organization_id = v_org AND tr.state = 'ready' AND tr.queue = q.name
                  AND tr.task_key = k.name AND tr.ready_at <= v_now
                  AND (tr.worker_params IS NULL OR v_agent.labels @> tr.worker_params)
                  AND (tr.affinity_key IS NULL
                       OR (v_agent.registered AND NOT flowforge._pinned_elsewhere(v_org, tr.affinity_key,
                                                                                   tr.affinity_policy, claim.worker, v_now)))
                ORDER BY tr.priority, tr.ready_at
                LIMIT claim.batch
                FOR UPDATE SKIP LOCKED) c
            ORDER BY c.priority, c.ready_at
            LIMIT claim.batch) p;
    ELSIF cardinality(claim.queues) = 1 THEN
        -- Equality on queue lets idx_taskrun_state_age return rows in claim order.
        SELECT array_agg(p.id), bool_or(p.affinity_key IS NOT NULL) INTO v_ids, v_pin FROM (
            SELECT tr.id, tr.affinity_key FROM flowforge.task_run tr
            WHERE tr.organization_id = v_org AND tr.state = 'ready' AND tr.queue = claim.queues[1]
              AND tr.ready_at <= v_now
              AND (tr.worker_params IS NULL OR v_agent.labels @> tr.worker_params)
              AND (tr.affinity_key IS NULL
                   OR (v_agent.registered AND NOT flowforge._pinned_elsewhere(v_org, tr.affinity_key,
                                                                               tr.affinity_policy, claim.worker, v_now)))
            ORDER BY tr.priority, tr.ready_at
            LIMIT claim.batch
            FOR UPDATE SKIP LOCKED) p;
    ELSE
        -- One ordered index scan per queue, then the best of them overall.
        SELECT array_agg(p.id), bool_or(p.affinity_key IS NOT NULL) INTO v_ids, v_pin FROM (
            -- DISTINCT: a queue named twice must not yield its tasks twice and under-fill the batch.
            SELECT c.id, c.affinity_key FROM (SELECT DISTINCT u.name FROM unnest(claim.queues) AS u(name)) AS q(name)
            CROSS JOIN LATERAL (
                SELECT tr.id, tr.priority, tr.ready_at, tr.affinity_key FROM flowforge.task_run tr
                WHERE tr.organization_id = v_org AND tr.state = 'ready' AND tr.queue = q.name
                  AND tr.ready_at <= v_now
                  AND (tr.worker_params IS NULL OR v_agent.labels @> tr.worker_params)
                  AND (tr.affinity_key IS NULL
                       OR (v_agent.registered AND NOT flowforge._pinned_elsewhere(v_org, tr.affinity_key,
                                                                                   tr.affinity_policy, claim.worker, v_now)))
                ORDER BY tr.priority, tr.ready_at
                LIMIT claim.batch
                FOR UPDATE SKIP LOCKED) c
            ORDER BY c.priority, c.ready_at
            LIMIT claim.batch) p;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    -- Pin what is unpinned (one insert wins a race; the loser skips the task). Only when
    -- the pick took keyed work: most claims take none and pay no statement for it.
    IF v_pin THEN
        FOR v_pinned IN
            SELECT tr.id, tr.affinity_key, tr.affinity_policy FROM flowforge.task_run tr
            WHERE tr.organization_id = v_org AND tr.id = ANY (v_ids) AND tr.affinity_key IS NOT NULL
        LOOP
            IF NOT flowforge._affinity_take(v_org, v_pinned.affinity_key, v_pinned.affinity_policy, claim.worker, v_now) THEN
                v_ids := array_remove(v_ids, v_pinned.id);
            END IF;
        END LOOP;
        IF cardinality(v_ids) = 0 THEN
            RETURN;
        END IF;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE flowforge.task_run tr
        SET state = 'running',
            fencing_token = tr.fencing_token + 1,
            lease_owner = claim.worker,
            lease_expires_at = v_now + CASE WHEN tr.timeout < claim.lease THEN tr.timeout ELSE claim.lease END,
            started_at = v_now,
            -- Flow control: this generation holds the slots its pick took (the release trigger gives them back).
            flow_token = CASE WHEN tr.id = ANY (v_holders) THEN tr.fencing_token + 1 END,
            flow_queue_slot = CASE WHEN tr.id = ANY (v_holders) THEN tr.id = ANY (v_queue_holders) END
        WHERE tr.organization_id = v_org AND tr.id = ANY (v_ids)  -- locked by the pick above: still ready
        RETURNING tr.id, tr.organization_id, tr.workflow_run_id, tr.task_id, tr.task_key, tr.attempt,
                  tr.fencing_token, tr.lease_expires_at
    ), events AS (
        -- Fast path: the event rows inline (see _append_events).
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        SELECT c.organization_id, c.workflow_run_id, c.id, 'claimed', 'ready', 'running', c.fencing_token, c.attempt,
               jsonb_build_object('worker', claim.worker), v_now
        FROM claimed c
    )
    SELECT c.id, c.workflow_run_id, c.task_key::text, c.attempt::integer, c.fencing_token::bigint,
           -- The same shape as flowforge._task_input (used by push dispatch), inline:
           -- a function call per claimed row costs more than the two lookups
           -- (claim_input_matches_task_input.sql keeps the two in step).
           jsonb_build_object(
               'run', (SELECT r.input FROM flowforge.workflow_run r
                       WHERE r.id = c.workflow_run_id AND r.organization_id = c.organization_id),
               'deps', coalesce((SELECT jsonb_object_agg(up.task_key, up.output)
                                 FROM flowforge.task_dependency td
                                 JOIN flowforge.task_run up
                                   ON up.workflow_run_id = c.workflow_run_id AND up.task_id = td.depends_on_task_id
                                  AND up.organization_id = c.organization_id
                                 WHERE td.task_id = c.task_id AND td.organization_id = c.organization_id), '{}'::jsonb)),
           c.lease_expires_at
    FROM claimed c;
END;
$$;
COMMENT ON FUNCTION flowforge.claim(text[], text, interval, integer, text[]) IS
  'claim(queues text[], worker text, lease interval default ''30 seconds'', batch int default 1, task_names text[] '
  'default null) -> setof (task_run_id, workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at). '
  'Takes up to batch ready tasks of the given queues in the caller''s organization whose ready_at has come — lowest '
  'priority number first, then longest ready — with FOR UPDATE SKIP LOCKED, so concurrent workers never take the same task. '
  'With task_names, only tasks of those names (the handlers the caller has): a task nobody handles stays ready and '
  'visible. A worker registered as an agent (worker = its name) gets nothing while draining or inactive, only tasks '
  'whose worker_params its labels contain, and only tasks whose affinity key is unpinned (it pins it), pinned to it, '
  'or (soft) pinned to an agent that went away. Each becomes running with a new fencing token and a lease (capped by the task''s timeout); event '
  '"claimed". input is {"run": <run input>, "deps": {<dependency key>: <its output>}}. Flow control: nothing from a '
  'paused queue, never more running than a queue''s max_running or a concurrency key''s max, never more than a rate '
  'allows, fairness keys interleaved (docs/execution-model.md); a task held back stays ready. Returns no rows when '
  'nothing is ready. Errors: FF003 bad arguments; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.claim(text[],text,interval,integer,text[])', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.heartbeat(task_run_id uuid, fencing_token bigint, lease interval DEFAULT '30 seconds')
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
    PERFORM flowforge._check_lease(heartbeat.lease);
    -- A push consumer's first heartbeat takes the task over from the dispatcher.
    UPDATE flowforge.task_run tr
    SET lease_expires_at = CASE WHEN tr.started_at + tr.timeout < v_now + heartbeat.lease
                                THEN tr.started_at + tr.timeout ELSE v_now + heartbeat.lease END,
        lease_owner = CASE WHEN tr.lease_owner = 'dispatch' THEN 'push-consumer' ELSE tr.lease_owner END
    WHERE tr.id = heartbeat.task_run_id
      AND tr.fencing_token = heartbeat.fencing_token
      AND tr.state = 'running'
      AND tr.lease_owner IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
      AND tr.organization_id = v_org
      AND (tr.timeout IS NULL OR tr.started_at + tr.timeout > v_now)
    RETURNING tr.lease_expires_at INTO v_expires;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(heartbeat.task_run_id, heartbeat.fencing_token, 'heartbeat');
    END IF;
    RETURN v_expires;
END;
$$;
COMMENT ON FUNCTION flowforge.heartbeat(uuid, bigint, interval) IS
  'heartbeat(task_run_id uuid, fencing_token bigint, lease interval default ''30 seconds'') -> timestamptz. Extends the '
  'lease of a running task held under this fencing token to now + lease (never past started_at + timeout) and returns '
  'the new expiry; for a pushed task the first heartbeat takes it over from the dispatcher (lease_owner dispatch -> '
  'push-consumer). Records no event (it is not a transition). Errors: FF001 no such task run; FF004 stale token, lease '
  'reaped, run cancelled, timeout exceeded or a fanning task — stop and drop the result; FF005 not running; FF003 bad lease; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.heartbeat(uuid,bigint,interval)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.complete(task_run_id uuid, fencing_token bigint, output jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_task record;
BEGIN
    PERFORM flowforge._check_size(complete.output, 'task output');
    -- One statement for a task's success (docs/execution-model.md, "complete's one statement"):
    -- the run's counters first, which is the lock order (run, then task), then the task and its
    -- event. The run's end, when this was its last task, is a second statement below, run once per
    -- run: as CTEs here its UPDATE and INSERT were set up on every completion (1.6 % of a fan-out
    -- task, benchmarks/RESULTS.md, stop 32). This is the DAG's settle inline
    -- (_dag_task_succeeded's, twin-tested: complete_matches_settle_hook.sql). A task run that
    -- is not running under this token raises below (_refuse_task_write), which undoes the
    -- counters with the rest. A running task only exists in a running run.
    WITH run AS (
        UPDATE flowforge.workflow_run r
        SET tasks_remaining = r.tasks_remaining - 1,
            state = CASE WHEN r.tasks_remaining = 1
                         THEN CASE WHEN r.tasks_failed > 0 THEN 'failed' ELSE 'succeeded' END
                         ELSE r.state END,
            finished_at = CASE WHEN r.tasks_remaining = 1 THEN v_now END
        WHERE r.id = (SELECT tr.workflow_run_id FROM flowforge.task_run tr
                      WHERE tr.id = complete.task_run_id AND tr.organization_id = v_org)
          AND r.organization_id = v_org AND r.state = 'running'
        RETURNING r.id, r.state, r.tasks_failed
    ), done AS (
        UPDATE flowforge.task_run tr
        SET state = 'succeeded', output = complete.output, finished_at = v_now, lease_expires_at = NULL, error = NULL
        FROM run
        WHERE tr.id = complete.task_run_id
          AND tr.workflow_run_id = run.id
          AND tr.fencing_token = complete.fencing_token
          AND tr.state = 'running'
          AND tr.lease_owner IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
          AND tr.organization_id = v_org
        RETURNING tr.workflow_run_id, tr.task_id, tr.attempt, run.state AS run_state, run.tasks_failed
    ), event AS (
        -- Fast path: the event row inline (see _append_events).
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        SELECT v_org, d.workflow_run_id, complete.task_run_id, 'completed', 'running', 'succeeded',
               complete.fencing_token, d.attempt, NULL::jsonb, v_now
        FROM done d
    )
    SELECT d.workflow_run_id, d.task_id, d.run_state, d.tasks_failed,
           EXISTS (SELECT 1 FROM flowforge.task_dependency td
                   WHERE td.depends_on_task_id = d.task_id AND td.organization_id = v_org) AS has_dependents
    INTO v_task FROM done d;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(complete.task_run_id, complete.fencing_token, 'complete');
    END IF;
    IF v_task.run_state <> 'running' THEN
        -- The run's end: its event after the task's, and the directory's first-write-wins end
        -- (as in _record_run_ended).
        WITH ended AS (
            UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest(v_now, e.created_at))
            WHERE e.organization_id = v_org AND e.run_id = v_task.workflow_run_id
        )
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        VALUES (v_org, v_task.workflow_run_id, NULL, 'run_' || v_task.run_state, 'running', v_task.run_state, NULL, NULL,
                jsonb_build_object('tasks_failed', v_task.tasks_failed), v_now);
    END IF;
    -- The rest of the DAG's success hook: dependents waiting only on this task become ready.
    -- A leaf (most tasks of small runs) pays no call.
    IF v_task.has_dependents THEN
        PERFORM flowforge._release_dependents(v_org, v_task.workflow_run_id, v_task.task_id, v_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.complete(uuid, bigint, jsonb) IS
  'complete(task_run_id uuid, fencing_token bigint, output jsonb default null). The holder of a running task reports '
  'success: the task succeeds with output; dependents whose dependencies have all succeeded become ready in the same '
  'transaction (NOTIFY); the run succeeds when this was its last unfinished task. Events: completed, released, '
  'run_succeeded/run_failed. Errors: FF001 no such task run; FF004 stale token (reaped, re-claimed, cancelled) or a fanning task (its children report) — '
  'drop the result; FF005 the task is not running (already completed or failed); FF009 output over the size limit; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.complete(uuid,bigint,jsonb)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.fail(task_run_id uuid, fencing_token bigint, error text, retryable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_task record;
BEGIN
    PERFORM flowforge._check_text_size(fail.error, 'error text');
    IF flowforge._lock_run_of(fail.task_run_id) IS NULL THEN
        PERFORM flowforge._refuse_task_write(fail.task_run_id, fail.fencing_token, 'fail');
    END IF;
    UPDATE flowforge.task_run tr
    SET state = CASE WHEN flowforge._retries_left(fail.retryable, tr.attempt, tr.max_attempts) THEN 'ready' ELSE 'failed' END,
        attempt = CASE WHEN flowforge._retries_left(fail.retryable, tr.attempt, tr.max_attempts) THEN tr.attempt + 1 ELSE tr.attempt END,
        ready_at = CASE WHEN flowforge._retries_left(fail.retryable, tr.attempt, tr.max_attempts)
                        THEN v_now + flowforge._backoff(t.backoff, t.backoff_factor, t.max_backoff, tr.attempt)
                        ELSE tr.ready_at END,
        finished_at = CASE WHEN flowforge._retries_left(fail.retryable, tr.attempt, tr.max_attempts) THEN NULL ELSE v_now END,
        lease_expires_at = NULL,
        error = fail.error
    FROM flowforge.task t
    WHERE tr.id = fail.task_run_id
      AND tr.fencing_token = fail.fencing_token
      AND tr.state = 'running'
      AND tr.lease_owner IS DISTINCT FROM flowforge._fanout_holder()  -- a fan-out's own unit: its children report
      AND tr.organization_id = v_org
      AND t.id = tr.task_id AND t.organization_id = v_org
    RETURNING tr.organization_id, tr.workflow_run_id, tr.task_id, tr.state, tr.attempt, tr.ready_at INTO v_task;
    IF NOT FOUND THEN
        PERFORM flowforge._refuse_task_write(fail.task_run_id, fail.fencing_token, 'fail');
    END IF;
    PERFORM flowforge._append_events(v_task.organization_id, v_task.workflow_run_id,
        CASE WHEN v_task.state = 'ready' THEN 'retry_scheduled' ELSE 'failed' END,
        ARRAY[fail.task_run_id], ARRAY['running'], ARRAY[v_task.state::text], ARRAY[fail.fencing_token],
        ARRAY[v_task.attempt],
        ARRAY[jsonb_build_object('error', left(fail.error, 1000), 'retryable', coalesce(fail.retryable, true))
              || CASE WHEN v_task.state = 'ready' THEN jsonb_build_object('ready_at', v_task.ready_at) ELSE '{}' END],
        v_now);
    IF v_task.state = 'failed' THEN
        PERFORM flowforge._on_task_failed_for_good('dag', v_org, v_task.workflow_run_id, fail.task_run_id,
                                                   v_task.task_id, v_now);
    ELSE
        PERFORM flowforge._on_task_requeued('dag', v_org, v_task.workflow_run_id, fail.task_run_id, v_task.task_id,
                                            v_now);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.fail(uuid, bigint, text, boolean) IS
  'fail(task_run_id uuid, fencing_token bigint, error text, retryable boolean default true). The holder of a running '
  'task reports failure. With retryable and attempts left: back to ready with attempt + 1 after backoff * '
  'backoff_factor^(attempt-1), capped at max_backoff (event retry_scheduled). Otherwise failed (event failed): every '
  'transitive dependent is skipped, independent branches continue, and the run fails once nothing is left to do. '
  'Errors: FF001 no such task run; FF004 stale token or a fanning task — drop the result; FF005 the task is not running; FF009 error '
  'text over the size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.fail(uuid,bigint,text,boolean)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');
