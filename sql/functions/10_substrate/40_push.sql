-- Push delivery: queues that hand their tasks to RabbitMQ through the
-- transactional outbox.
--
--   configure_queue(name, exchange, routing_key, dispatch_lease, max_running, rate)
--   take_outbox(batch, lease) -> messages to publish, each taken under a short lease
--   mark_published(ids) -> how many were stamped
--   defer_outbox(ids, error) -> the broker refused them: try again later
--
-- When a task of a push queue becomes ready, the same transaction claims it
-- for dispatch (running, lease_owner 'dispatch', fencing token bumped) and
-- writes one outbox_message for that (task_run, fencing_token) generation.
-- uniq_outbox_per_taskrun_generation makes a second row for the same
-- generation impossible; a conflicting insert is skipped.
--
-- Routing: unless the queue names a routing key, a message is routed by
-- <database>.<organization slug>.<queue>, and a consumer binds the AMQP queue
-- flowforge.<database>.<organization slug>.<queue> (queue_settings says both),
-- so two databases or two organizations sharing a broker and an exchange never
-- receive each other's messages.

-- The default routing of an organization's push queue: unique per database
-- and organization, so messages of two FlowForge databases (or tenants) on
-- one broker never cross.
CREATE OR REPLACE FUNCTION flowforge._push_route(p_org uuid, p_queue text) RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT current_database() || '.' || (SELECT o.slug FROM flowforge.organization o WHERE o.id = p_org) || '.' || p_queue
$$;
COMMENT ON FUNCTION flowforge._push_route(uuid, text) IS
  'Internal: <database>.<organization slug>.<queue> — the default routing key of a push queue and the suffix of '
  'the AMQP queue its consumers bind (flowforge.<route>).';

CREATE OR REPLACE FUNCTION flowforge._dispatch_rows(p_org uuid, p_ids uuid[], p_now timestamptz,
                                                    p_holders uuid[] DEFAULT NULL, p_queue_holders uuid[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_written integer;
BEGIN
    WITH dispatched AS (
        UPDATE flowforge.task_run tr
        SET state = 'running',
            fencing_token = tr.fencing_token + 1,
            lease_owner = 'dispatch',
            lease_expires_at = p_now + CASE WHEN tr.timeout < q.dispatch_lease THEN tr.timeout ELSE q.dispatch_lease END,
            started_at = p_now,
            -- Picked by _flow_pick (a push queue under flow control): this generation holds its slots.
            flow_token = CASE WHEN tr.id = ANY (p_holders) THEN tr.fencing_token + 1 END,
            flow_queue_slot = CASE WHEN tr.id = ANY (p_holders) THEN tr.id = ANY (p_queue_holders) END
        FROM flowforge.queue q
        WHERE tr.id = ANY (p_ids) AND tr.organization_id = p_org AND tr.state = 'ready'
          AND q.organization_id = p_org AND q.name = tr.queue AND q.exchange IS NOT NULL
        -- The default route (a STABLE function) is worked out below, not in RETURNING: Citus allows
        -- only immutable functions there (docs/scale.md).
        RETURNING tr.id, tr.organization_id, tr.workflow_run_id, tr.task_id, tr.task_key, tr.attempt,
                  tr.fencing_token, tr.queue, q.exchange, q.routing_key
    ), routed AS (
        SELECT d.id, d.organization_id, d.workflow_run_id, d.task_id, d.task_key, d.attempt, d.fencing_token,
               d.exchange, coalesce(d.routing_key, flowforge._push_route(d.organization_id, d.queue)) AS routing_key
        FROM dispatched d
    ), written AS (
        INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange, routing_key, payload,
                                              fencing_token_snapshot, attempt_snapshot, next_attempt_at, created_at)
        SELECT d.organization_id, d.id, d.workflow_run_id, d.exchange, d.routing_key,
               jsonb_build_object('task_run_id', d.id, 'fencing_token', d.fencing_token, 'attempt', d.attempt,
                                  'workflow_run_id', d.workflow_run_id, 'task_key', d.task_key,
                                  'organization_id', d.organization_id, 'database', current_database(),
                                  'input', flowforge._task_input(p_org, d.workflow_run_id, d.task_id)),
               d.fencing_token, d.attempt, p_now, p_now
        FROM routed d
        ON CONFLICT ON CONSTRAINT uniq_outbox_per_taskrun_generation DO NOTHING
        RETURNING task_run_id
    ), events AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                              fencing_token, attempt, detail, created_at)
        SELECT d.organization_id, d.workflow_run_id, d.id, 'dispatched', 'ready', 'running', d.fencing_token, d.attempt,
               jsonb_build_object('exchange', d.exchange, 'routing_key', d.routing_key), p_now
        FROM routed d
        WHERE d.id IN (SELECT w.task_run_id FROM written w)
    )
    SELECT count(*) INTO v_written FROM written;
    IF v_written > 0 THEN
        PERFORM pg_notify('flowforge_outbox', '');
    END IF;
    RETURN v_written;
END;
$$;
COMMENT ON FUNCTION flowforge._dispatch_rows(uuid, uuid[], timestamptz, uuid[], uuid[]) IS
  'Internal: claims the given locked ready task runs (of organization p_org: ids of another one are left alone) of '
  'push queues for dispatch (running, lease_owner dispatch, '
  'new fencing token, dispatch lease) and writes one outbox_message per generation (event "dispatched", NOTIFY '
  'flowforge_outbox); p_holders / p_queue_holders: those _flow_pick counted in slots. Returns the number of outbox '
  'rows written.';

-- Push queues under flow control: what their limits allow now, picked by
-- _flow_pick (fairly, counted) and dispatched. Work held back waits for the
-- next tick (a freed slot wakes pull workers, not the dispatcher).
CREATE OR REPLACE FUNCTION flowforge._dispatch_flow(p_org uuid, p_queues text[], p_limit integer, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_pick record;
BEGIN
    SELECT p.ids, p.holders, p.queue_holders INTO v_pick
    FROM flowforge._flow_pick('task_run', p_org, p_queues, p_limit, p_now, NULL, false, '{}', NULL, NULL) p;
    IF v_pick.ids IS NULL THEN
        RETURN 0;
    END IF;
    RETURN flowforge._dispatch_rows(p_org, v_pick.ids, p_now, v_pick.holders, v_pick.queue_holders);
END;
$$;
COMMENT ON FUNCTION flowforge._dispatch_flow(uuid, text[], integer, timestamptz) IS
  'Internal: dispatches up to p_limit ready, due task runs of the flow-controlled push queues p_queues of '
  'organization p_org, as far as their limits allow; returns outbox rows written.';

-- Ready, due push tasks of one run (start, dependents released, retry).
CREATE OR REPLACE FUNCTION flowforge._dispatch_run(p_org uuid, p_run_id uuid, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_ids uuid[];
    v_flow integer;
BEGIN
    -- (_tasks_ready, the only caller, has checked that some queue is push.)
    SELECT array_agg(t.id) INTO v_ids FROM (
        SELECT tr.id
        FROM flowforge.task_run tr
        JOIN flowforge.queue q ON q.organization_id = p_org AND q.name = tr.queue AND q.exchange IS NOT NULL
        WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org AND tr.state = 'ready'
          AND tr.ready_at <= p_now
          AND NOT q.flow
        FOR UPDATE OF tr SKIP LOCKED) t;
    -- A push queue under flow control dispatches what its limits allow, from all its ready work.
    SELECT coalesce(sum(flowforge._dispatch_flow(p_org, ARRAY[f.queue], 1000, p_now)), 0) INTO v_flow
    FROM (SELECT DISTINCT tr.queue::text AS queue
          FROM flowforge.task_run tr
          JOIN flowforge.queue q ON q.organization_id = p_org AND q.name = tr.queue
                                AND q.exchange IS NOT NULL AND q.flow
          WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org AND tr.state = 'ready'
            AND tr.ready_at <= p_now) f;
    IF v_ids IS NULL THEN
        RETURN v_flow;
    END IF;
    RETURN v_flow + flowforge._dispatch_rows(p_org, v_ids, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._dispatch_run(uuid, uuid, timestamptz) IS
  'Internal: dispatches the ready, due task runs of run p_run_id of organization p_org that belong to push queues '
  '(every statement filters on p_org); returns outbox rows written.';

-- Ready, due push tasks of every organization (tick, a queue turned push).
CREATE OR REPLACE FUNCTION flowforge._dispatch_due(p_limit integer, p_now timestamptz, p_orgs uuid[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ids uuid[];
    v_id_orgs uuid[];
    v_flow integer;
BEGIN
    SELECT array_agg(c.id), array_agg(c.organization_id) INTO v_ids, v_id_orgs FROM (
        SELECT due.id, q.organization_id
        FROM flowforge.queue q
        CROSS JOIN LATERAL (
            SELECT tr.id FROM flowforge.task_run tr
            WHERE tr.organization_id = q.organization_id AND tr.queue = q.name
              AND tr.state = 'ready' AND tr.ready_at <= p_now
            ORDER BY tr.priority, tr.ready_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED) due
        WHERE q.exchange IS NOT NULL AND NOT q.flow AND (p_orgs IS NULL OR q.organization_id = ANY (p_orgs))
        LIMIT p_limit) c;
    -- Push queues under flow control: what their limits allow (work held back when a slot freed goes now).
    SELECT coalesce(sum(flowforge._dispatch_flow(q.organization_id, ARRAY[q.name::text], p_limit, p_now)), 0) INTO v_flow
    FROM flowforge.queue q
    WHERE q.exchange IS NOT NULL AND q.flow AND (p_orgs IS NULL OR q.organization_id = ANY (p_orgs));
    IF v_ids IS NULL THEN
        RETURN v_flow;
    END IF;
    -- Dispatched one organization at a time: each _dispatch_rows statement stays in one tenant.
    RETURN v_flow + (SELECT coalesce(sum(flowforge._dispatch_rows(o.org, o.ids, p_now)), 0)
                     FROM (SELECT x.org, array_agg(x.id) AS ids FROM unnest(v_ids, v_id_orgs) AS x(id, org)
                           GROUP BY x.org) o);
END;
$$;
COMMENT ON FUNCTION flowforge._dispatch_due(integer, timestamptz, uuid[]) IS
  'Internal: dispatches up to p_limit ready, due task runs of push queues of the given organizations (all when NULL) '
  '— retries whose backoff has passed, backlogs of a queue just made push; returns outbox rows written.';

CREATE OR REPLACE FUNCTION flowforge.configure_queue(name text, exchange text DEFAULT NULL, routing_key text DEFAULT NULL,
                                                     dispatch_lease interval DEFAULT '5 minutes',
                                                     max_running integer DEFAULT NULL, rate jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_rate_limit integer;
    v_rate_per interval;
    v_field text;
BEGIN
    IF configure_queue.name IS NULL OR configure_queue.name !~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'queue name must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got %',
            coalesce(quote_literal(configure_queue.name), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Use the queue name your task definitions name.';
    END IF;
    IF configure_queue.exchange IS NOT NULL AND configure_queue.exchange !~ '^[A-Za-z0-9_.:-]{1,255}$' THEN
        RAISE EXCEPTION 'exchange must be 1-255 letters, digits, "_", ".", ":" or "-", got %', quote_literal(configure_queue.exchange)
            USING ERRCODE = 'FF003', HINT = 'Pass NULL to make the queue pull again.';
    END IF;
    IF configure_queue.routing_key IS NOT NULL AND (configure_queue.exchange IS NULL OR length(configure_queue.routing_key) > 255) THEN
        RAISE EXCEPTION 'routing_key needs an exchange and at most 255 characters'
            USING ERRCODE = 'FF003', HINT = 'Omit routing_key to route by the queue name.';
    END IF;
    IF configure_queue.dispatch_lease IS NULL OR configure_queue.dispatch_lease NOT BETWEEN interval '1 second' AND interval '1 day' THEN
        RAISE EXCEPTION 'dispatch_lease must be between 1 second and 1 day'
            USING ERRCODE = 'FF003', HINT = 'It is how long a consumer has to take a pushed task with its first heartbeat.';
    END IF;
    IF configure_queue.max_running IS NOT NULL AND configure_queue.max_running NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'max_running must be between 1 and 100000, got %', configure_queue.max_running
            USING ERRCODE = 'FF003', HINT = 'Pass NULL for no limit; pause_queue stops a queue altogether.';
    END IF;
    IF configure_queue.rate IS NOT NULL THEN
        IF jsonb_typeof(configure_queue.rate) <> 'object' THEN
            RAISE EXCEPTION 'rate must be an object such as {"limit": 100, "per": "1 minute"}, got %', configure_queue.rate
                USING ERRCODE = 'FF003', HINT = 'Pass NULL for no rate limit.';
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(configure_queue.rate) LOOP
            IF v_field NOT IN ('limit', 'per') THEN
                RAISE EXCEPTION 'rate: unknown field "%" (known: limit, per)', v_field
                    USING ERRCODE = 'FF003', HINT = 'For example {"limit": 100, "per": "1 minute"}.';
            END IF;
        END LOOP;
        IF jsonb_typeof(configure_queue.rate -> 'limit') = 'number'
           AND (configure_queue.rate ->> 'limit')::numeric BETWEEN 1 AND 1000000 THEN
            v_rate_limit := (configure_queue.rate ->> 'limit')::numeric;
        END IF;
        IF v_rate_limit IS NULL OR v_rate_limit <> (configure_queue.rate ->> 'limit')::numeric THEN
            RAISE EXCEPTION 'rate: limit must be an integer from 1 to 1000000, got %', configure_queue.rate -> 'limit'
                USING ERRCODE = 'FF003', HINT = 'For example {"limit": 100, "per": "1 minute"}.';
        END IF;
        BEGIN
            v_rate_per := (configure_queue.rate ->> 'per')::interval;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow OR syntax_error THEN
            v_rate_per := NULL;
        END;
        IF jsonb_typeof(configure_queue.rate -> 'per') IS DISTINCT FROM 'string' OR v_rate_per IS NULL
           OR v_rate_per NOT BETWEEN interval '1 millisecond' AND interval '1 day' THEN
            RAISE EXCEPTION 'rate: per must be a duration from 1 millisecond to 1 day, got %', configure_queue.rate -> 'per'
                USING ERRCODE = 'FF003', HINT = 'For example {"limit": 100, "per": "1 minute"}.';
        END IF;
    END IF;
    INSERT INTO flowforge.queue AS q (organization_id, name, exchange, routing_key, dispatch_lease, max_running,
                                      rate_limit, rate_per, created_at, updated_at, created_by, updated_by)
    VALUES (v_org, configure_queue.name, configure_queue.exchange, configure_queue.routing_key,
            configure_queue.dispatch_lease, configure_queue.max_running, v_rate_limit, v_rate_per, v_now, v_now,
            flowforge._principal(), flowforge._principal())
    ON CONFLICT ON CONSTRAINT queue_pkey DO UPDATE
    SET exchange = EXCLUDED.exchange, routing_key = EXCLUDED.routing_key,
        dispatch_lease = EXCLUDED.dispatch_lease, max_running = EXCLUDED.max_running,
        rate_limit = EXCLUDED.rate_limit, rate_per = EXCLUDED.rate_per, updated_at = EXCLUDED.updated_at,
        updated_by = EXCLUDED.updated_by;
    IF configure_queue.max_running IS NOT NULL THEN
        -- Units claimed before the queue was limited count from now on (and give their slots back).
        PERFORM flowforge._flow_adopt_running(v_org, configure_queue.name, v_now);
    END IF;
    IF configure_queue.exchange IS NOT NULL THEN
        PERFORM flowforge._dispatch_due(1000, v_now, ARRAY[v_org]);
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.configure_queue(text, text, text, interval, integer, jsonb) IS
  'configure_queue(name text, exchange text default null, routing_key text default null, dispatch_lease interval '
  'default ''5 minutes'', max_running int default null, rate jsonb default null). The whole configuration of a queue '
  '(what is omitted takes its default; pause_queue''s flag is kept). An exchange makes the queue push: its ready tasks '
  'are dispatched through the outbox to that exchange with routing_key (default: the queue name), and a consumer has '
  'dispatch_lease to take each task with its first heartbeat before it is dispatched again (no attempt is used up). '
  'NULL exchange makes it pull again. Ready tasks already waiting are dispatched at once. Flow control, for task runs '
  'and work items alike: max_running (1-100000) — at most that many of the queue''s units running or dispatched at '
  'once, across all workers (units running now count at once); rate {"limit": 1-1000000, "per": 1 millisecond to 1 '
  'day} — a token bucket of limit tokens, full at first use, refilled at limit per per; a unit held back stays ready. '
  'Errors: FF003 bad names, lease, max_running or rate; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.configure_queue(text,text,text,interval,integer,jsonb)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.take_outbox(batch integer DEFAULT 100, lease interval DEFAULT '30 seconds')
RETURNS TABLE (id uuid, exchange text, routing_key text, message_id text, payload jsonb, created_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_ids uuid[];
BEGIN
    IF take_outbox.batch IS NULL OR take_outbox.batch NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The daemon default is 100.';
    END IF;
    IF take_outbox.lease IS NULL OR take_outbox.lease NOT BETWEEN interval '1 second' AND interval '1 hour' THEN
        RAISE EXCEPTION 'lease must be between 1 second and 1 hour'
            USING ERRCODE = 'FF003', HINT = 'Longer than a batch takes to publish and confirm; the daemon uses 30 seconds.';
    END IF;
    -- Available first (created, deferred, or a lease that ran out), through
    -- idx_outbox_pending; deferred rows further on cost nothing. Taking moves
    -- the row past the lease: committed, it keeps other daemons off it
    -- without a lock held across the broker round trip.
    -- Pick first, into an array, so the LIMIT runs exactly once (inside an
    -- IN-subquery of the UPDATE it may be re-executed and take more rows).
    SELECT array_agg(c.id) INTO v_ids FROM (
        SELECT m.id FROM flowforge.outbox_message m
        WHERE m.published_at IS NULL AND m.next_attempt_at <= v_now
        ORDER BY m.next_attempt_at
        LIMIT take_outbox.batch
        FOR UPDATE SKIP LOCKED) c;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    UPDATE flowforge.outbox_message m
    SET next_attempt_at = v_now + take_outbox.lease
    WHERE m.id = ANY (v_ids)  -- locked by the pick above: still unpublished
    RETURNING m.id, m.exchange::text, m.routing_key::text,
              m.task_run_id::text || ':' || m.fencing_token_snapshot::text, m.payload, m.created_at;
END;
$$;
COMMENT ON FUNCTION flowforge.take_outbox(integer, interval) IS
  'take_outbox(batch int default 100, lease interval default ''30 seconds'') -> setof (id, exchange, routing_key, '
  'message_id, payload, created_at). Takes up to batch unpublished outbox messages that are available (new, deferred '
  'past their wait, or whose previous take lease ran out), oldest availability first, and holds each for lease: '
  'commit the call at once — no transaction stays open across the broker round trip — then publish, wait for the '
  'broker''s confirms, and settle each message with mark_published (confirmed) or defer_outbox (refused). Any number '
  'of daemons drain at once without taking the same row; a daemon that dies after publishing lets its rows come back '
  'after the lease, so a crash publishes a message at most once more. message_id is <task_run_id>:<fencing_token>. '
  'Errors: FF003 bad batch or lease.';
SELECT flowforge._rights('flowforge.take_outbox(integer,interval)', 'flowforge_system', '{flowforge_daemon}');

CREATE OR REPLACE FUNCTION flowforge.mark_published(ids uuid[]) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_marked integer;
BEGIN
    UPDATE flowforge.outbox_message m
    SET published_at = flowforge.now()
    WHERE m.id = ANY (mark_published.ids) AND m.published_at IS NULL;
    GET DIAGNOSTICS v_marked = ROW_COUNT;
    RETURN v_marked;
END;
$$;
COMMENT ON FUNCTION flowforge.mark_published(uuid[]) IS
  'mark_published(ids uuid[]) -> int. Stamps published_at on the given outbox messages that are still unpublished; '
  'call it only after the broker confirmed them. Returns how many were stamped (an id already published or unknown '
  'counts 0).';
SELECT flowforge._rights('flowforge.mark_published(uuid[])', 'flowforge_system', '{flowforge_daemon}');

CREATE OR REPLACE FUNCTION flowforge.defer_outbox(ids uuid[], error text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_deferred integer;
BEGIN
    -- 1 s, 2 s, 4 s ... capped at 5 minutes.
    UPDATE flowforge.outbox_message m
    SET publish_attempts = m.publish_attempts + 1,
        next_attempt_at = flowforge.now()
                          + least(interval '1 second' * power(2, least(m.publish_attempts, 16)), interval '5 minutes'),
        last_error = left(defer_outbox.error, 500)
    WHERE m.id = ANY (defer_outbox.ids) AND m.published_at IS NULL;
    GET DIAGNOSTICS v_deferred = ROW_COUNT;
    RETURN v_deferred;
END;
$$;
COMMENT ON FUNCTION flowforge.defer_outbox(uuid[], text) IS
  'defer_outbox(ids uuid[], error text) -> int. The broker refused these messages (nack, returned as unroutable, '
  'exchange error): count the attempt, keep the error, and hold them back from take_outbox for 2^attempts seconds '
  '(at most 5 minutes), so messages that cannot be published do not block newer ones. Returns how many were deferred.';
SELECT flowforge._rights('flowforge.defer_outbox(uuid[],text)', 'flowforge_system', '{flowforge_daemon}');
