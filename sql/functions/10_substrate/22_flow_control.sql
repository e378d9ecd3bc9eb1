-- Flow control (issue 18): what the claim keeps, for both queues (task_run
-- through claim(), work_item through claim_work()).
--
--   per queue (configure_queue, pause_queue / resume_queue):
--     paused       claims return nothing from it
--     max_running  at most this many of its units running (dispatched) at once
--     rate         a token bucket: at most {"limit": n, "per": duration}
--   per unit of work (a DAG task, a graph node, a machine's action; _spec_flow):
--     concurrency  {"key": jsonpath, "max": n}: at most n running per value of the key, organization-wide
--     rate_limit   {"key": jsonpath | fixed name, "limit": n, "per": duration}: a token bucket per value
--     fairness     {"key": jsonpath, "weight": w}: claims interleave the keys of a queue
--
-- The rules (docs/execution-model.md, "Flow control", says them for users):
--
-- * A unit's keys are evaluated once, when it is created, into its lane
--   (flow_lane: one row per distinct evaluated flow control); the unit
--   carries the lane's id. Units without flow control have none.
-- * A queue whose row says flow (paused, max_running, a rate, or keyed: some
--   definition's unit on it declares flow control — set when it is defined)
--   is claimed through _flow_pick; every other queue through the claim's own
--   statements, unchanged. The only cost flow control adds to them is the
--   claim's one probe of queue_flow_idx (empty while nobody uses it) and the
--   WHEN clause of the release trigger.
-- * Limits are counted rows, locked in the claim's transaction: the queue's
--   running counter (flow_slot, scope queue: while it has max_running), each
--   concurrency key value's (flow_slot, scope key), each token bucket
--   (flow_bucket). Never a count over the units themselves. Lock order: the
--   claimed queues' counters (by name, FOR UPDATE: claims of a queue with
--   max_running take turns, the price of one counter that holds), each one's
--   bucket after it; then key counters and key buckets FOR UPDATE SKIP LOCKED
--   (one another claim holds is full for this claim: no claim ever waits for a
--   key, so none deadlocks on keys); fairness passes last, in key order. The
--   release takes the queue's counter, then the key's.
-- * The units a claim takes are marked with flow_token = their new fencing
--   token. When such a unit leaves running (dispatched) — complete, fail, the
--   reaper, cancel, a fan-out's end, a purge — the row trigger _flow_release
--   gives its slots back, once, because only that generation's transition
--   out of running fires it, and wakes claimers (NOTIFY flowforge_ready) when
--   a slot it gave back was full (nobody waits for one that was not; a key
--   shared by definitions of different max wakes by the releasing unit's).
--   Rate tokens are spent, never given back.
-- * A unit held back by a limit stays ready (pending), untouched: no attempt,
--   no event; it is claimed as soon as its limit allows.
-- * Token buckets hold at most `limit` tokens, start full the first time
--   they are used, and refill continuously at limit / per, in whole
--   token-microseconds (exact integers, no rounding): over a span d from the
--   bucket's first use, at most limit + floor(limit * d / per) units start.
-- * Fairness (stride scheduling): each fairness key value of a queue has a
--   pass. A claim orders its candidates by priority, then by tag, then by
--   age: the j-th candidate of key k in this claim has tag
--   eff(k) + (j - 1) / weight(k), eff(k) = max(pass(k), P - 1) where P is the
--   highest pass among the keys with ready work (a key banks at most one
--   round of credit: a newcomer or a key back from idle starts one round
--   behind the leader, never thousands of claims ahead of it); taking n units
--   of k sets pass(k) = eff(k) + n / weight(k). Units without a fairness key
--   share the key null. Equal weights therefore alternate one by one: a key
--   with 10,000 ready units and a key with 10 are served k1, k2, k1, k2, ...
-- * Cost for a limited queue: the claim reads one head per lane with ready
--   work (a loose index scan of the lane index, then the first `batch` units
--   of each lane), locks the counters it needs and writes them; units without
--   a lane in a queue that has lanes are found by looking at most 1,000
--   units past the keyed ones (put keyed and unkeyed work on different
--   queues when a keyed backlog can be deeper than that).

-- A bucket's capacity unit: one token is the bucket's period in microseconds.
CREATE OR REPLACE FUNCTION flowforge._flow_per_us(p_per interval) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (extract(epoch FROM p_per) * 1000000)::bigint $$;
COMMENT ON FUNCTION flowforge._flow_per_us(interval) IS
  'Internal: a token bucket period in microseconds (one token is that many token-microseconds of level).';

-- A bucket's level refilled to p_now: full when it was never used (p_level NULL).
CREATE OR REPLACE FUNCTION flowforge._flow_refill(p_level bigint, p_refilled_at timestamptz, p_limit integer,
                                                  p_per interval, p_now timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_level IS NULL THEN p_limit::bigint * flowforge._flow_per_us(p_per)
                ELSE least(p_limit::bigint * flowforge._flow_per_us(p_per),
                           p_level + p_limit::bigint
                                     * least(flowforge._flow_per_us(p_per),
                                             greatest(0::bigint,
                                                      (extract(epoch FROM p_now - p_refilled_at) * 1000000)::bigint)))
           END
$$;
COMMENT ON FUNCTION flowforge._flow_refill(bigint, timestamptz, integer, interval, timestamptz) IS
  'Internal: a token bucket''s level (token-microseconds) refilled from p_refilled_at to p_now at p_limit tokens per '
  'p_per, capped at p_limit tokens; a bucket never used (NULL) is full.';

-- A key's value as the counters name it: the JSON value the path finds
-- (null when it finds nothing); a long one by its digest, so counter keys stay small.
CREATE OR REPLACE FUNCTION flowforge._flow_value(p_path text, p_input jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_value jsonb;
BEGIN
    -- Silently, like affinity: an error here would fail the start of the run.
    v_value := coalesce(jsonb_path_query_first(coalesce(p_input, '{}'), p_path::jsonpath, silent => true), 'null');
    IF length(v_value::text) > 200 THEN
        RETURN to_jsonb('md5:' || md5(v_value::text));
    END IF;
    RETURN v_value;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_value(text, jsonb) IS
  'Internal: the value a flow-control key path finds in a unit''s input (JSON null when it finds nothing; a value '
  'longer than 200 characters as the string md5:<digest>).';

-- The lane of a new unit of work: its flow control evaluated against its input.
CREATE OR REPLACE FUNCTION flowforge._flow_lane(p_org uuid, p_flow jsonb, p_input jsonb, p_now timestamptz)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_conc constant jsonb := p_flow -> 'concurrency';
    v_rate constant jsonb := p_flow -> 'rate_limit';
    v_fair constant jsonb := p_flow -> 'fairness';
    v_conc_value jsonb;
    v_rate_value jsonb;
    v_fair_value jsonb := 'null';
    v_weight numeric := 1;
    v_found jsonb;
    v_identity text;
    v_id uuid;
BEGIN
    IF p_flow IS NULL THEN
        RETURN NULL;
    END IF;
    IF v_conc IS NOT NULL THEN
        v_conc_value := flowforge._flow_value(v_conc ->> 'key', p_input);
    END IF;
    IF v_rate IS NOT NULL THEN
        -- A fixed name is one bucket for every unit that names it.
        v_rate_value := CASE WHEN left(v_rate ->> 'key', 1) = '$' THEN flowforge._flow_value(v_rate ->> 'key', p_input)
                             ELSE 'null' END;
    END IF;
    IF v_fair IS NOT NULL THEN
        v_fair_value := flowforge._flow_value(v_fair ->> 'key', p_input);
        IF jsonb_typeof(v_fair -> 'weight') = 'number' THEN
            v_weight := (v_fair ->> 'weight')::numeric;
        ELSE
            -- A weight read from the input counts only when it is a number in range; otherwise 1.
            v_found := jsonb_path_query_first(coalesce(p_input, '{}'), (v_fair ->> 'weight')::jsonpath, silent => true);
            IF jsonb_typeof(v_found) = 'number' AND (v_found #>> '{}')::numeric BETWEEN 0.001 AND 1000 THEN
                v_weight := trim_scale((v_found #>> '{}')::numeric);
            END IF;
        END IF;
    END IF;
    v_identity := md5(jsonb_build_array(
        v_conc ->> 'key', v_conc_value, (v_conc ->> 'max')::integer,
        v_rate ->> 'key', v_rate_value, (v_rate ->> 'limit')::integer, flowforge._flow_per_us((v_rate ->> 'per')::interval),
        v_fair_value, v_weight)::text);
    SELECT l.id INTO v_id FROM flowforge.flow_lane l WHERE l.organization_id = p_org AND l.identity = v_identity;
    IF v_id IS NULL THEN
        INSERT INTO flowforge.flow_lane (organization_id, identity, conc_name, conc_value, conc_max, rate_name,
                                         rate_value, rate_limit, rate_per, fair_value, fair_weight, created_at)
        VALUES (p_org, v_identity, v_conc ->> 'key', v_conc_value, (v_conc ->> 'max')::integer, v_rate ->> 'key',
                v_rate_value, (v_rate ->> 'limit')::integer, (v_rate ->> 'per')::interval, v_fair_value, v_weight, p_now)
        ON CONFLICT ON CONSTRAINT flow_lane_identity_uq DO NOTHING
        RETURNING id INTO v_id;
        IF v_id IS NULL THEN  -- a concurrent creator's insert won (and made the rows below)
            SELECT l.id INTO STRICT v_id FROM flowforge.flow_lane l
            WHERE l.organization_id = p_org AND l.identity = v_identity;
        ELSE
            -- Its key's counter and bucket exist before any claim needs them: a claim only
            -- locks them (SKIP LOCKED), never creates them.
            IF v_conc IS NOT NULL THEN
                INSERT INTO flowforge.flow_slot (organization_id, scope, name, value, running, updated_at)
                VALUES (p_org, 'key', v_conc ->> 'key', v_conc_value, 0, p_now)
                ON CONFLICT ON CONSTRAINT flow_slot_pkey DO NOTHING;
            END IF;
            IF v_rate IS NOT NULL THEN
                INSERT INTO flowforge.flow_bucket (organization_id, scope, name, value, rate_limit, rate_per, level, refilled_at)
                VALUES (p_org, 'key', v_rate ->> 'key', v_rate_value, (v_rate ->> 'limit')::integer,
                        (v_rate ->> 'per')::interval,
                        flowforge._flow_refill(NULL, p_now, (v_rate ->> 'limit')::integer, (v_rate ->> 'per')::interval, p_now),
                        p_now)
                ON CONFLICT ON CONSTRAINT flow_bucket_pkey DO NOTHING;
            END IF;
        END IF;
    END IF;
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_lane(uuid, jsonb, jsonb, timestamptz) IS
  'Internal: the lane (flow_lane id) of a new unit of work whose definition declares flow control p_flow: its '
  'concurrency key value, rate-limit key value and fairness key value and weight evaluated against p_input, found or '
  'created (one row per distinct result); NULL when p_flow is NULL.';

-- A new definition version: the queues its flow-controlled units use are keyed from now on.
CREATE OR REPLACE FUNCTION flowforge._flow_mark_keyed(p_org uuid, p_workflow_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.queue AS q (organization_id, name, keyed, created_at, updated_at, created_by, updated_by)
    SELECT DISTINCT p_org, t.queue, true, p_now, p_now, flowforge._principal(), flowforge._principal()
    FROM flowforge.task t
    WHERE t.workflow_id = p_workflow_id AND t.organization_id = p_org AND t.flow IS NOT NULL
    ON CONFLICT ON CONSTRAINT queue_pkey DO UPDATE SET keyed = true, updated_at = EXCLUDED.updated_at,
                                                       updated_by = EXCLUDED.updated_by
    WHERE NOT q.keyed;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_mark_keyed(uuid, uuid, timestamptz) IS
  'Internal: marks keyed (claimed through the flow-control path) every queue a unit of definition p_workflow_id that '
  'declares flow control runs on, creating its queue row (pull) when it has none.';

-- The release: a unit whose claim took slots leaves running (or dispatched),
-- or is deleted while it is. Fired only for that generation (the WHEN clause
-- of the triggers in 0028: flow_token = fencing_token), so exactly once.
CREATE OR REPLACE FUNCTION flowforge._flow_release() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    v_lane record;
    v_before integer;
    v_wake boolean := false;
BEGIN
    -- The triggers fire for any unit whose claim ever took slots (their WHEN is short on
    -- purpose: PostgreSQL compiles it on every statement that writes the table, 0040). The
    -- slots go back only when the generation that took them (flow_token = fencing_token)
    -- leaves the state that holds them, or is deleted in it: the trigger names that column
    -- and state (TG_ARGV: state / running on task_run, status / dispatched on work_item).
    IF OLD.flow_token IS DISTINCT FROM OLD.fencing_token
       OR to_jsonb(OLD) ->> TG_ARGV[0] <> TG_ARGV[1]
       OR (TG_OP = 'UPDATE' AND to_jsonb(NEW) ->> TG_ARGV[0] = TG_ARGV[1]) THEN
        RETURN NULL;
    END IF;
    -- Lock order: the queue's counter, then the key's (as the claim takes them). A slot that
    -- was full may have held work back: wake claimers then (only then: a release below the
    -- limit frees nothing anyone waits for).
    IF OLD.flow_queue_slot THEN
        UPDATE flowforge.flow_slot s SET running = s.running - 1, updated_at = flowforge.now()
        WHERE s.organization_id = OLD.organization_id AND s.scope = 'queue' AND s.name = OLD.queue AND s.value = 'null'
        RETURNING s.running + 1 INTO v_before;
        v_wake := v_before >= coalesce((SELECT q.max_running FROM flowforge.queue q
                                        WHERE q.organization_id = OLD.organization_id AND q.name = OLD.queue), 0);
    END IF;
    IF OLD.flow_lane IS NOT NULL THEN
        SELECT l.conc_name, l.conc_value, l.conc_max INTO v_lane
        FROM flowforge.flow_lane l WHERE l.organization_id = OLD.organization_id AND l.id = OLD.flow_lane;
        IF v_lane.conc_name IS NOT NULL THEN
            UPDATE flowforge.flow_slot s SET running = s.running - 1, updated_at = flowforge.now()
            WHERE s.organization_id = OLD.organization_id AND s.scope = 'key' AND s.name = v_lane.conc_name
              AND s.value = v_lane.conc_value
            RETURNING s.running + 1 INTO v_before;
            v_wake := v_wake OR v_before >= v_lane.conc_max;
        END IF;
    END IF;
    IF v_wake THEN
        PERFORM pg_notify('flowforge_ready', '');
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_release() IS
  'Trigger function (task_run_flow_release, work_item_flow_release and their _deleted twins, which fire for any unit '
  'whose claim ever took slots; arguments: the state column and the state that holds slots, state / running or '
  'status / dispatched): when the generation that took flow-control slots (flow_token = fencing_token) '
  'leaves that state (or is deleted in it), its queue''s running counter (when it took '
  'a queue slot) and its concurrency key''s go down by one; when one of them was full, NOTIFY flowforge_ready wakes '
  'claimers.';

-- A key's counter (gate k:…, p_def [name, value, max]) or a key's bucket (r:…,
-- [name, value, limit, per]) for a claim: locked FOR UPDATE SKIP LOCKED and its
-- room now (slots left; whole tokens); 0 when another transaction holds it. A
-- gate's row is made with its lane (_flow_lane); one missing is made here.
CREATE OR REPLACE FUNCTION flowforge._flow_lock_gate(p_org uuid, p_gate text, p_def jsonb, p_now timestamptz)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_room bigint;
BEGIN
    FOR v_attempt IN 1 .. 2 LOOP
        IF left(p_gate, 2) = 'k:' THEN
            SELECT (p_def ->> 2)::integer - s.running INTO v_room FROM flowforge.flow_slot s
            WHERE s.organization_id = p_org AND s.scope = 'key' AND s.name = p_def ->> 0 AND s.value = p_def -> 1
            FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                RETURN greatest(v_room, 0);
            END IF;
            EXIT WHEN v_attempt = 2 OR EXISTS (
                SELECT 1 FROM flowforge.flow_slot s
                WHERE s.organization_id = p_org AND s.scope = 'key' AND s.name = p_def ->> 0 AND s.value = p_def -> 1);
            INSERT INTO flowforge.flow_slot (organization_id, scope, name, value, running, updated_at)
            VALUES (p_org, 'key', p_def ->> 0, p_def -> 1, 0, p_now)
            ON CONFLICT ON CONSTRAINT flow_slot_pkey DO NOTHING;
        ELSE
            SELECT flowforge._flow_refill(b.level, b.refilled_at, b.rate_limit, b.rate_per, p_now)
                   / flowforge._flow_per_us(b.rate_per) INTO v_room
            FROM flowforge.flow_bucket b
            WHERE b.organization_id = p_org AND b.scope = 'key' AND b.name = p_def ->> 0 AND b.value = p_def -> 1
              AND b.rate_limit = (p_def ->> 2)::integer AND b.rate_per = (p_def ->> 3)::interval
            FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                RETURN v_room;
            END IF;
            EXIT WHEN v_attempt = 2 OR EXISTS (
                SELECT 1 FROM flowforge.flow_bucket b
                WHERE b.organization_id = p_org AND b.scope = 'key' AND b.name = p_def ->> 0 AND b.value = p_def -> 1
                  AND b.rate_limit = (p_def ->> 2)::integer AND b.rate_per = (p_def ->> 3)::interval);
            INSERT INTO flowforge.flow_bucket (organization_id, scope, name, value, rate_limit, rate_per, level, refilled_at)
            VALUES (p_org, 'key', p_def ->> 0, p_def -> 1, (p_def ->> 2)::integer, (p_def ->> 3)::interval,
                    flowforge._flow_refill(NULL, p_now, (p_def ->> 2)::integer, (p_def ->> 3)::interval, p_now), p_now)
            ON CONFLICT ON CONSTRAINT flow_bucket_pkey DO NOTHING;
        END IF;
    END LOOP;
    RETURN 0;  -- held by another claim right now
END;
$$;
COMMENT ON FUNCTION flowforge._flow_lock_gate(uuid, text, jsonb, timestamptz) IS
  'Internal: locks a concurrency key''s counter or a rate-limit key''s bucket for a claim (FOR UPDATE SKIP LOCKED; '
  'made when missing) and returns its room now — slots left, or whole tokens after refilling to p_now; 0 when '
  'another transaction holds it.';

-- The claim through flow control: which units of p_queues to take, at most
-- p_batch, honouring every limit, fairly; they are locked (FOR UPDATE SKIP
-- LOCKED), pinned (affinity) and counted (slots, tokens, passes) here. The
-- caller makes them running / dispatched with flow_token = the new token.
-- p_kind: task_run (claim) or work_item (claim_work); the filters are the
-- caller's (names, labels, affinity, engine kinds); p_worker NULL is push
-- dispatch (no labels, no pins).
CREATE OR REPLACE FUNCTION flowforge._flow_pick(p_kind text, p_org uuid, p_queues text[], p_batch integer,
                                                p_now timestamptz, p_worker text, p_registered boolean,
                                                p_labels jsonb, p_task_names text[], p_engine_kinds text[],
                                                OUT ids uuid[], OUT holders uuid[], OUT queue_holders uuid[])
LANGUAGE plpgsql VOLATILE
-- The lines statement's generic plan is estimated far above jit_above_cost once the backlog is a
-- few thousand units (a lane count the planner cannot know), and JIT-compiling its 61 expressions
-- took 68 ms a claim, for a statement that runs in 2 (regressions/flow_pick_jit_compiled_every_keyed_claim.sql).
SET jit = off
AS $$
DECLARE
    c_scan constant integer := 1000;  -- how far the unkeyed line of a queue looks past keyed units
    v_queue record;
    v_cap integer;
    v_level bigint;
    v_qnames text[] := '{}';
    v_qcaps integer[] := '{}';
    v_caps jsonb := '{}';          -- gate -> capacity left (queues: q:<name>; keys: k:<n>; buckets: r:<n>)
    v_qcap0 jsonb := '{}';         -- the queues' capacities before the first pass
    v_qrate jsonb := '{}';         -- queue -> [limit, per] of its bucket
    v_qcounted text[] := '{}';     -- queues whose max_running counter this claim keeps
    v_running integer;
    v_lines jsonb;
    v_c record;
    -- per line (a lane of a queue, or the queue's units without a lane), by line number
    l_queue text[] := '{}';
    l_lane uuid[] := '{}';
    l_cgate text[] := '{}';
    l_rgate text[] := '{}';
    l_fair jsonb[] := '{}';
    l_weight numeric[] := '{}';
    l_eff numeric[] := '{}';
    l_admit integer[] := '{}';
    l_fairkeys integer[] := '{}';  -- 1: the line's queue has one fairness key with ready work; 2: more
    -- the gates the candidates meet
    g_conc jsonb := '{}';          -- k:<n> -> [name, value, max]
    g_rate jsonb := '{}';          -- r:<n> -> [name, value, limit, per]
    v_cands integer[] := '{}';     -- the candidates in claim order (their line numbers)
    v_total integer := 0;
    v_gate text;
    v_line integer;
    v_ids uuid[] := '{}';
    v_holders uuid[] := '{}';
    v_qholders uuid[] := '{}';
    v_got uuid[];
    v_pinned record;
    v_taken jsonb := '{}';         -- line number -> units taken
BEGIN
    -- 1. Each queue's capacity: 0 when paused; under max_running, what its counter leaves
    --    (the counter locked, in name order, created on first use: claims of a queue with
    --    max_running take turns here); what its bucket allows (locked after its counter).
    FOR v_queue IN
        SELECT u.name, coalesce(q.paused, false) AS paused, q.max_running, q.rate_limit, q.rate_per
        FROM (SELECT DISTINCT x AS name FROM unnest(p_queues) AS x) u
        LEFT JOIN flowforge.queue q ON q.organization_id = p_org AND q.name = u.name
        ORDER BY u.name
    LOOP
        CONTINUE WHEN v_queue.paused;
        v_cap := p_batch;
        IF v_queue.max_running IS NOT NULL THEN
            SELECT s.running INTO v_running FROM flowforge.flow_slot s
            WHERE s.organization_id = p_org AND s.scope = 'queue' AND s.name = v_queue.name AND s.value = 'null'
            FOR UPDATE;
            IF NOT FOUND THEN
                INSERT INTO flowforge.flow_slot (organization_id, scope, name, value, running, updated_at)
                VALUES (p_org, 'queue', v_queue.name, 'null', 0, p_now)
                ON CONFLICT ON CONSTRAINT flow_slot_pkey DO NOTHING;
                SELECT s.running INTO STRICT v_running FROM flowforge.flow_slot s
                WHERE s.organization_id = p_org AND s.scope = 'queue' AND s.name = v_queue.name AND s.value = 'null'
                FOR UPDATE;
            END IF;
            v_cap := greatest(0, least(v_cap, v_queue.max_running - v_running));
            v_qcounted := v_qcounted || v_queue.name::text;
        END IF;
        IF v_cap > 0 AND v_queue.rate_limit IS NOT NULL THEN
            INSERT INTO flowforge.flow_bucket (organization_id, scope, name, value, rate_limit, rate_per, level, refilled_at)
            VALUES (p_org, 'queue', v_queue.name, 'null', v_queue.rate_limit, v_queue.rate_per,
                    flowforge._flow_refill(NULL, p_now, v_queue.rate_limit, v_queue.rate_per, p_now), p_now)
            ON CONFLICT ON CONSTRAINT flow_bucket_pkey DO NOTHING;
            SELECT flowforge._flow_refill(b.level, b.refilled_at, b.rate_limit, b.rate_per, p_now) INTO v_level
            FROM flowforge.flow_bucket b
            WHERE b.organization_id = p_org AND b.scope = 'queue' AND b.name = v_queue.name AND b.value = 'null'
              AND b.rate_limit = v_queue.rate_limit AND b.rate_per = v_queue.rate_per
            FOR UPDATE;
            v_cap := least(v_cap, v_level / flowforge._flow_per_us(v_queue.rate_per));
            v_qrate := v_qrate || jsonb_build_object(v_queue.name, jsonb_build_array(v_queue.rate_limit, v_queue.rate_per));
        END IF;
        IF v_cap > 0 THEN
            v_qnames := v_qnames || v_queue.name::text;
            v_qcaps := v_qcaps || v_cap;
            v_qcap0 := v_qcap0 || jsonb_build_object('q:' || v_queue.name, v_cap);
        END IF;
    END LOOP;
    IF cardinality(v_qnames) = 0 THEN
        RETURN;
    END IF;

    -- 2. The lines with ready work: each lane of each queue (a loose index scan of the
    --    lane index, one probe per lane), and the queue's units without a lane; for each,
    --    the priorities and ages of its first units, as many as the queue could take.
    IF p_kind = 'task_run' THEN
        SELECT jsonb_agg(jsonb_build_object('queue', q.queue, 'lane', l.lane, 'prios', h.prios, 'ages', h.ages))
        INTO v_lines
        FROM unnest(v_qnames, v_qcaps) AS q(queue, cap)
        CROSS JOIN LATERAL (
            WITH RECURSIVE r(lane) AS (
                (SELECT tr.flow_lane FROM flowforge.task_run tr
                 WHERE tr.organization_id = p_org AND tr.queue = q.queue AND tr.state = 'ready' AND tr.flow_lane IS NOT NULL
                 ORDER BY tr.flow_lane LIMIT 1)
                UNION ALL
                SELECT (SELECT tr.flow_lane FROM flowforge.task_run tr
                        WHERE tr.organization_id = p_org AND tr.queue = q.queue AND tr.state = 'ready'
                          AND tr.flow_lane IS NOT NULL AND tr.flow_lane > r.lane
                        ORDER BY tr.flow_lane LIMIT 1)
                FROM r WHERE r.lane IS NOT NULL)
            SELECT r.lane FROM r WHERE r.lane IS NOT NULL
            UNION ALL
            SELECT NULL::uuid) l
        CROSS JOIN LATERAL (
            SELECT array_agg(c.priority ORDER BY c.priority, c.ready_at) AS prios,
                   array_agg(c.ready_at ORDER BY c.priority, c.ready_at) AS ages
            FROM ((SELECT tr.priority, tr.ready_at FROM flowforge.task_run tr
                   WHERE l.lane IS NOT NULL AND tr.organization_id = p_org AND tr.queue = q.queue AND tr.state = 'ready'
                     AND tr.flow_lane IS NOT NULL AND tr.flow_lane = l.lane AND tr.ready_at <= p_now
                     AND (p_task_names IS NULL OR tr.task_key = ANY (p_task_names))
                     AND (p_worker IS NULL OR tr.worker_params IS NULL OR p_labels @> tr.worker_params)
                     AND (p_worker IS NULL OR tr.affinity_key IS NULL
                          OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, tr.affinity_key, tr.affinity_policy,
                                                                               p_worker, p_now)))
                   ORDER BY tr.priority, tr.ready_at LIMIT q.cap)
                  UNION ALL
                  (SELECT d.priority, d.ready_at FROM (
                       SELECT tr.priority, tr.ready_at, tr.flow_lane FROM flowforge.task_run tr
                       WHERE l.lane IS NULL AND tr.organization_id = p_org AND tr.queue = q.queue AND tr.state = 'ready'
                         AND tr.ready_at <= p_now
                         AND (p_task_names IS NULL OR tr.task_key = ANY (p_task_names))
                         AND (p_worker IS NULL OR tr.worker_params IS NULL OR p_labels @> tr.worker_params)
                         AND (p_worker IS NULL OR tr.affinity_key IS NULL
                              OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, tr.affinity_key,
                                                                                   tr.affinity_policy, p_worker, p_now)))
                       ORDER BY tr.priority, tr.ready_at LIMIT c_scan) d
                   WHERE d.flow_lane IS NULL
                   ORDER BY d.priority, d.ready_at LIMIT q.cap)) c) h
        WHERE h.prios IS NOT NULL;
    ELSE
        SELECT jsonb_agg(jsonb_build_object('queue', q.queue, 'lane', l.lane, 'prios', h.prios, 'ages', h.ages))
        INTO v_lines
        FROM unnest(v_qnames, v_qcaps) AS q(queue, cap)
        CROSS JOIN LATERAL (
            WITH RECURSIVE r(lane) AS (
                (SELECT w.flow_lane FROM flowforge.work_item w
                 WHERE w.organization_id = p_org AND w.queue = q.queue AND w.status = 'pending' AND w.flow_lane IS NOT NULL
                 ORDER BY w.flow_lane LIMIT 1)
                UNION ALL
                SELECT (SELECT w.flow_lane FROM flowforge.work_item w
                        WHERE w.organization_id = p_org AND w.queue = q.queue AND w.status = 'pending'
                          AND w.flow_lane IS NOT NULL AND w.flow_lane > r.lane
                        ORDER BY w.flow_lane LIMIT 1)
                FROM r WHERE r.lane IS NOT NULL)
            SELECT r.lane FROM r WHERE r.lane IS NOT NULL
            UNION ALL
            SELECT NULL::uuid) l
        CROSS JOIN LATERAL (
            SELECT array_agg(c.priority ORDER BY c.priority, c.next_attempt_at) AS prios,
                   array_agg(c.next_attempt_at ORDER BY c.priority, c.next_attempt_at) AS ages
            FROM ((SELECT w.priority, w.next_attempt_at FROM flowforge.work_item w
                   WHERE l.lane IS NOT NULL AND w.organization_id = p_org AND w.queue = q.queue AND w.status = 'pending'
                     AND w.flow_lane IS NOT NULL AND w.flow_lane = l.lane AND w.next_attempt_at <= p_now
                     AND (p_task_names IS NULL OR w.task_name = ANY (p_task_names))
                     AND (p_engine_kinds IS NULL OR w.engine_kind = ANY (p_engine_kinds))
                     AND (p_worker IS NULL OR w.worker_params IS NULL OR p_labels @> w.worker_params)
                     AND (p_worker IS NULL OR w.affinity_key IS NULL
                          OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, w.affinity_key, w.affinity_policy,
                                                                               p_worker, p_now)))
                   ORDER BY w.priority, w.next_attempt_at LIMIT q.cap)
                  UNION ALL
                  (SELECT d.priority, d.next_attempt_at FROM (
                       SELECT w.priority, w.next_attempt_at, w.flow_lane FROM flowforge.work_item w
                       WHERE l.lane IS NULL AND w.organization_id = p_org AND w.queue = q.queue AND w.status = 'pending'
                         AND w.next_attempt_at <= p_now
                         AND (p_task_names IS NULL OR w.task_name = ANY (p_task_names))
                         AND (p_engine_kinds IS NULL OR w.engine_kind = ANY (p_engine_kinds))
                         AND (p_worker IS NULL OR w.worker_params IS NULL OR p_labels @> w.worker_params)
                         AND (p_worker IS NULL OR w.affinity_key IS NULL
                              OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, w.affinity_key,
                                                                                   w.affinity_policy, p_worker, p_now)))
                       ORDER BY w.priority, w.next_attempt_at LIMIT c_scan) d
                   WHERE d.flow_lane IS NULL
                   ORDER BY d.priority, d.next_attempt_at LIMIT q.cap)) c) h
        WHERE h.prios IS NOT NULL;
    END IF;
    IF v_lines IS NULL THEN
        RETURN;
    END IF;

    -- 3. The candidates in claim order — priority, then fairness tag, then age — each with
    --    its line's facts: its queue, its concurrency key and its bucket (gates).
    FOR v_c IN
        WITH line AS (
            SELECT t.ord::integer AS line_no, t.x ->> 'queue' AS queue, (t.x ->> 'lane')::uuid AS lane,
                   ARRAY(SELECT p::integer FROM jsonb_array_elements_text(t.x -> 'prios') AS p) AS prios,
                   ARRAY(SELECT a::timestamptz FROM jsonb_array_elements_text(t.x -> 'ages') AS a) AS ages
            FROM jsonb_array_elements(v_lines) WITH ORDINALITY AS t(x, ord)
        ), info AS MATERIALIZED (
            SELECT li.*, fl.conc_name, fl.conc_value, fl.conc_max, fl.rate_name, fl.rate_value, fl.rate_limit,
                   fl.rate_per, coalesce(fl.fair_value, 'null') AS fair_value, coalesce(fl.fair_weight, 1) AS weight,
                   (SELECT f.pass FROM flowforge.flow_fair f
                    WHERE f.organization_id = p_org AND f.queue = li.queue::varchar
                      AND f.value = coalesce(fl.fair_value, 'null')) AS pass
            FROM line li
            LEFT JOIN flowforge.flow_lane fl ON fl.organization_id = p_org AND fl.id = li.lane
        ), fair AS (
            -- A key banks at most one round of credit: never below the leader's pass - 1.
            SELECT i.*, greatest(coalesce(i.pass, 0), coalesce(max(i.pass) OVER (PARTITION BY i.queue), 0) - 1) AS eff,
                   CASE WHEN min(i.fair_value::text) OVER (PARTITION BY i.queue)
                             = max(i.fair_value::text) OVER (PARTITION BY i.queue) THEN 1 ELSE 2 END AS fair_keys
            FROM (SELECT * FROM info) i
        ), cand AS (
            SELECT f.*, k, f.prios[k] AS prio, f.ages[k] AS age,
                   min(f.eff) OVER (PARTITION BY f.queue) AS floor,
                   row_number() OVER (PARTITION BY f.queue, f.fair_value ORDER BY f.prios[k], f.ages[k], f.line_no, k) AS j
            FROM fair f CROSS JOIN LATERAL generate_subscripts(f.prios, 1) AS k
        )
        SELECT c.line_no, c.queue, c.lane, c.k, c.conc_name, c.conc_value, c.conc_max, c.rate_name,
               c.rate_value, c.rate_limit, c.rate_per, c.fair_value, c.weight, c.eff, c.fair_keys
        FROM cand c
        ORDER BY c.prio, (c.eff - c.floor) + (c.j - 1) / c.weight, c.age, c.line_no, c.k
    LOOP
        IF v_c.k = 1 THEN
            -- The line's facts, on first sight (its first candidate comes first).
            l_queue[v_c.line_no] := v_c.queue;
            l_lane[v_c.line_no] := v_c.lane;
            l_fair[v_c.line_no] := v_c.fair_value;
            l_weight[v_c.line_no] := v_c.weight;
            l_eff[v_c.line_no] := v_c.eff;
            l_fairkeys[v_c.line_no] := v_c.fair_keys;
            l_admit[v_c.line_no] := 0;
            IF v_c.conc_name IS NOT NULL THEN
                v_gate := 'k:' || jsonb_build_array(v_c.conc_name, v_c.conc_value)::text;
                l_cgate[v_c.line_no] := v_gate;
                IF NOT g_conc ? v_gate THEN
                    g_conc := g_conc || jsonb_build_object(v_gate, jsonb_build_array(v_c.conc_name, v_c.conc_value, v_c.conc_max));
                END IF;
            END IF;
            IF v_c.rate_name IS NOT NULL THEN
                v_gate := 'r:' || jsonb_build_array(v_c.rate_name, v_c.rate_value, v_c.rate_limit, v_c.rate_per)::text;
                l_rgate[v_c.line_no] := v_gate;
                IF NOT g_rate ? v_gate THEN
                    g_rate := g_rate || jsonb_build_object(v_gate, jsonb_build_array(v_c.rate_name, v_c.rate_value,
                                                                                      v_c.rate_limit, v_c.rate_per));
                END IF;
            END IF;
        END IF;
        v_cands := v_cands || v_c.line_no;
    END LOOP;

    -- 4. Admit candidates in that order while their queue, key and bucket have room. A key's
    --    counter and a bucket are locked when a candidate first needs them, FOR UPDATE SKIP
    --    LOCKED, and read exactly: one another claim holds right now is full for this claim (no
    --    claim waits for another's key — none can deadlock on keys; that other claim is taking
    --    from it anyway), and the candidates behind go on to the next key.
    v_caps := v_qcap0;
    FOREACH v_line IN ARRAY v_cands LOOP
        CONTINUE WHEN (v_caps ->> ('q:' || l_queue[v_line]))::integer <= 0;
        FOREACH v_gate IN ARRAY ARRAY[l_cgate[v_line], l_rgate[v_line]] LOOP
            CONTINUE WHEN v_gate IS NULL OR v_caps ? v_gate;
            v_caps := v_caps || jsonb_build_object(v_gate, flowforge._flow_lock_gate(p_org, v_gate,
                                                   coalesce(g_conc -> v_gate, g_rate -> v_gate), p_now));
        END LOOP;
        IF (l_cgate[v_line] IS NULL OR (v_caps ->> l_cgate[v_line])::bigint > 0)
           AND (l_rgate[v_line] IS NULL OR (v_caps ->> l_rgate[v_line])::bigint > 0) THEN
            FOREACH v_gate IN ARRAY ARRAY['q:' || l_queue[v_line], l_cgate[v_line], l_rgate[v_line]] LOOP
                IF v_gate IS NOT NULL THEN
                    v_caps := jsonb_set(v_caps, ARRAY[v_gate], to_jsonb((v_caps ->> v_gate)::bigint - 1));
                END IF;
            END LOOP;
            l_admit[v_line] := l_admit[v_line] + 1;
            v_total := v_total + 1;
            EXIT WHEN v_total >= p_batch;
        END IF;
    END LOOP;
    IF v_total = 0 THEN
        RETURN;
    END IF;

    -- 5. Take the units: per line, its first admitted-many ready units, locked (SKIP LOCKED:
    --    a unit another transaction holds is left, and its slot with it), then pinned.
    FOR v_line IN SELECT i FROM generate_subscripts(l_admit, 1) AS i WHERE l_admit[i] > 0 LOOP
        IF p_kind = 'task_run' THEN
            IF l_lane[v_line] IS NOT NULL THEN
                SELECT array_agg(x.id) INTO v_got FROM (
                    SELECT tr.id FROM flowforge.task_run tr
                    WHERE tr.organization_id = p_org AND tr.queue = l_queue[v_line] AND tr.state = 'ready'
                      AND tr.flow_lane IS NOT NULL AND tr.flow_lane = l_lane[v_line] AND tr.ready_at <= p_now
                      AND (p_task_names IS NULL OR tr.task_key = ANY (p_task_names))
                      AND (p_worker IS NULL OR tr.worker_params IS NULL OR p_labels @> tr.worker_params)
                      AND (p_worker IS NULL OR tr.affinity_key IS NULL
                           OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, tr.affinity_key, tr.affinity_policy,
                                                                                p_worker, p_now)))
                    ORDER BY tr.priority, tr.ready_at
                    LIMIT l_admit[v_line]
                    FOR UPDATE SKIP LOCKED) x;
            ELSE
                SELECT array_agg(z.id) INTO v_got FROM (SELECT x.id FROM (
                    SELECT d.id FROM (
                        SELECT tr.id, tr.flow_lane, tr.priority, tr.ready_at FROM flowforge.task_run tr
                        WHERE tr.organization_id = p_org AND tr.queue = l_queue[v_line] AND tr.state = 'ready'
                          AND tr.ready_at <= p_now
                          AND (p_task_names IS NULL OR tr.task_key = ANY (p_task_names))
                          AND (p_worker IS NULL OR tr.worker_params IS NULL OR p_labels @> tr.worker_params)
                          AND (p_worker IS NULL OR tr.affinity_key IS NULL
                               OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, tr.affinity_key,
                                                                                    tr.affinity_policy, p_worker, p_now)))
                        ORDER BY tr.priority, tr.ready_at
                        LIMIT c_scan) d
                    WHERE d.flow_lane IS NULL
                    ORDER BY d.priority, d.ready_at) c
                CROSS JOIN LATERAL (
                    SELECT tr.id FROM flowforge.task_run tr
                    WHERE tr.id = c.id AND tr.state = 'ready'
                    FOR UPDATE SKIP LOCKED) x
                LIMIT l_admit[v_line]) z;
            END IF;
        ELSE
            IF l_lane[v_line] IS NOT NULL THEN
                SELECT array_agg(x.id) INTO v_got FROM (
                    SELECT w.id FROM flowforge.work_item w
                    WHERE w.organization_id = p_org AND w.queue = l_queue[v_line] AND w.status = 'pending'
                      AND w.flow_lane IS NOT NULL AND w.flow_lane = l_lane[v_line] AND w.next_attempt_at <= p_now
                      AND (p_task_names IS NULL OR w.task_name = ANY (p_task_names))
                      AND (p_engine_kinds IS NULL OR w.engine_kind = ANY (p_engine_kinds))
                      AND (p_worker IS NULL OR w.worker_params IS NULL OR p_labels @> w.worker_params)
                      AND (p_worker IS NULL OR w.affinity_key IS NULL
                           OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, w.affinity_key, w.affinity_policy,
                                                                                p_worker, p_now)))
                    ORDER BY w.priority, w.next_attempt_at
                    LIMIT l_admit[v_line]
                    FOR UPDATE SKIP LOCKED) x;
            ELSE
                SELECT array_agg(z.id) INTO v_got FROM (SELECT x.id FROM (
                    SELECT d.id FROM (
                        SELECT w.id, w.flow_lane, w.priority, w.next_attempt_at FROM flowforge.work_item w
                        WHERE w.organization_id = p_org AND w.queue = l_queue[v_line] AND w.status = 'pending'
                          AND w.next_attempt_at <= p_now
                          AND (p_task_names IS NULL OR w.task_name = ANY (p_task_names))
                          AND (p_engine_kinds IS NULL OR w.engine_kind = ANY (p_engine_kinds))
                          AND (p_worker IS NULL OR w.worker_params IS NULL OR p_labels @> w.worker_params)
                          AND (p_worker IS NULL OR w.affinity_key IS NULL
                               OR (p_registered AND NOT flowforge._pinned_elsewhere(p_org, w.affinity_key,
                                                                                    w.affinity_policy, p_worker, p_now)))
                        ORDER BY w.priority, w.next_attempt_at
                        LIMIT c_scan) d
                    WHERE d.flow_lane IS NULL
                    ORDER BY d.priority, d.next_attempt_at) c
                CROSS JOIN LATERAL (
                    SELECT w.id FROM flowforge.work_item w
                    WHERE w.id = c.id AND w.status = 'pending'
                    FOR UPDATE SKIP LOCKED) x
                LIMIT l_admit[v_line]) z;
            END IF;
        END IF;
        IF v_got IS NULL THEN
            CONTINUE;
        END IF;
        -- Pin what is unpinned (one insert wins a race; the loser leaves the unit, and its slot).
        -- (Push dispatch, p_worker NULL, pins nothing: its consumer is not an agent.)
        IF p_worker IS NULL THEN
            NULL;
        ELSIF p_kind = 'task_run' THEN
            FOR v_pinned IN
                SELECT tr.id, tr.affinity_key, tr.affinity_policy FROM flowforge.task_run tr
                WHERE tr.id = ANY (v_got) AND tr.affinity_key IS NOT NULL
            LOOP
                IF NOT flowforge._affinity_take(p_org, v_pinned.affinity_key, v_pinned.affinity_policy, p_worker, p_now) THEN
                    v_got := array_remove(v_got, v_pinned.id);
                END IF;
            END LOOP;
        ELSE
            FOR v_pinned IN
                SELECT w.id, w.affinity_key, w.affinity_policy FROM flowforge.work_item w
                WHERE w.id = ANY (v_got) AND w.affinity_key IS NOT NULL
            LOOP
                IF NOT flowforge._affinity_take(p_org, v_pinned.affinity_key, v_pinned.affinity_policy, p_worker, p_now) THEN
                    v_got := array_remove(v_got, v_pinned.id);
                END IF;
            END LOOP;
        END IF;
        IF cardinality(v_got) > 0 THEN
            v_ids := v_ids || v_got;
            v_taken := v_taken || jsonb_build_object(v_line::text, cardinality(v_got));
            -- Who holds what: a key slot (the lane has a concurrency key), a queue slot (max_running).
            IF l_cgate[v_line] IS NOT NULL OR l_queue[v_line] = ANY (v_qcounted) THEN
                v_holders := v_holders || v_got;
            END IF;
            IF l_queue[v_line] = ANY (v_qcounted) THEN
                v_qholders := v_qholders || v_got;
            END IF;
        END IF;
    END LOOP;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    -- 6. Count what was taken: the queues' and keys' running counters, the buckets' tokens,
    --    the fairness keys' passes. Every row written here is locked by this claim already.
    WITH t AS (
        SELECT l_queue[x.key::integer] AS queue, l_cgate[x.key::integer] AS cgate, l_rgate[x.key::integer] AS rgate,
               l_fair[x.key::integer] AS fair_value, l_weight[x.key::integer] AS weight, l_eff[x.key::integer] AS eff,
               l_fairkeys[x.key::integer] AS fair_keys, x.value::integer AS n
        FROM jsonb_each_text(v_taken) AS x
    ), by_queue AS (
        SELECT t.queue, sum(t.n)::integer AS n FROM t GROUP BY t.queue
    ), queue_slots AS (
        UPDATE flowforge.flow_slot s SET running = s.running + b.n, updated_at = p_now
        FROM by_queue b
        WHERE s.organization_id = p_org AND s.scope = 'queue' AND s.name = b.queue AND s.value = 'null'
          AND b.queue = ANY (v_qcounted)
    ), queue_buckets AS (
        UPDATE flowforge.flow_bucket k
        SET level = flowforge._flow_refill(k.level, k.refilled_at, k.rate_limit, k.rate_per, p_now)
                    - b.n * flowforge._flow_per_us(k.rate_per),
            refilled_at = greatest(k.refilled_at, p_now)
        FROM by_queue b
        WHERE k.organization_id = p_org AND k.scope = 'queue' AND k.name = b.queue AND k.value = 'null'
          AND v_qrate ? b.queue
          AND k.rate_limit = (v_qrate #>> ARRAY[b.queue, '0'])::integer
          AND k.rate_per = (v_qrate #>> ARRAY[b.queue, '1'])::interval
    ), key_slots AS (
        UPDATE flowforge.flow_slot s SET running = s.running + c.n, updated_at = p_now
        FROM (SELECT t.cgate, sum(t.n)::integer AS n FROM t WHERE t.cgate IS NOT NULL GROUP BY t.cgate) c
        WHERE s.organization_id = p_org AND s.scope = 'key' AND s.name = g_conc #>> ARRAY[c.cgate, '0']
          AND s.value = g_conc #> ARRAY[c.cgate, '1']
    ), key_buckets AS (
        UPDATE flowforge.flow_bucket k
        SET level = flowforge._flow_refill(k.level, k.refilled_at, k.rate_limit, k.rate_per, p_now)
                    - r.n * flowforge._flow_per_us(k.rate_per),
            refilled_at = greatest(k.refilled_at, p_now)
        FROM (SELECT t.rgate, sum(t.n)::integer AS n FROM t WHERE t.rgate IS NOT NULL GROUP BY t.rgate) r
        WHERE k.organization_id = p_org AND k.scope = 'key' AND k.name = g_rate #>> ARRAY[r.rgate, '0']
          AND k.value = g_rate #> ARRAY[r.rgate, '1'] AND k.rate_limit = (g_rate #>> ARRAY[r.rgate, '2'])::integer
          AND k.rate_per = (g_rate #>> ARRAY[r.rgate, '3'])::interval
    )
    -- Passes matter only where keys compete: a queue whose ready work has one fairness key
    -- (or none: the key null) keeps no pass, and its claims never queue up on one.
    -- (In key order: two claims of one queue never wait for each other's passes crosswise.)
    INSERT INTO flowforge.flow_fair AS f (organization_id, queue, value, pass, updated_at)
    SELECT p_org, t.queue, t.fair_value, trim_scale(max(t.eff) + sum(t.n / t.weight)), p_now
    FROM t WHERE t.fair_keys >= 2
    GROUP BY t.queue, t.fair_value
    ORDER BY t.queue, t.fair_value
    ON CONFLICT ON CONSTRAINT flow_fair_pkey DO UPDATE SET pass = EXCLUDED.pass, updated_at = EXCLUDED.updated_at;
    ids := v_ids;
    holders := v_holders;
    queue_holders := v_qholders;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_pick(text, uuid, text[], integer, timestamptz, text, boolean, jsonb, text[], text[]) IS
  'Internal: the claim through flow control (p_kind task_run or work_item) — up to p_batch ready units of p_queues '
  'that no limit holds back (paused queue, queue max_running, queue rate, concurrency key, rate-limit key), in claim '
  'order (priority, fairness tag, age), locked FOR UPDATE SKIP LOCKED and pinned (affinity) with the caller''s '
  'filters; their slots, tokens and fairness passes counted. Returns ids (NULL: none), holders (those that took a '
  'slot) and queue_holders (those that took a queue slot); the caller makes them running / dispatched with, for '
  'holders, flow_token = the new fencing token and flow_queue_slot.';

-- A queue given max_running while units of it run that hold no slot of it
-- (claimed before): they are counted now, and give the slot back when they end.
CREATE OR REPLACE FUNCTION flowforge._flow_adopt_running(p_org uuid, p_queue text, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_keyless uuid[];  -- lanes of adopted units that held no slot at all (their key slot is taken now too)
    v_n integer;
BEGIN
    -- Lock order: the units first (as a release holds them), then the counters. A unit that
    -- already holds its key slot (flow_token current) keeps it and takes the queue's; one that
    -- held nothing takes both.
    WITH adopted AS (
        UPDATE flowforge.task_run tr SET flow_token = tr.fencing_token, flow_queue_slot = true
        FROM (SELECT x.id, x.flow_token IS NOT DISTINCT FROM x.fencing_token AS held FROM flowforge.task_run x
              WHERE x.organization_id = p_org AND x.state = 'running' AND x.queue = p_queue AND x.fencing_token >= 1
                AND NOT (x.flow_token IS NOT DISTINCT FROM x.fencing_token AND coalesce(x.flow_queue_slot, false))
                AND x.lease_owner IS DISTINCT FROM flowforge._fanout_holder()) b
        WHERE tr.id = b.id
        RETURNING tr.flow_lane, b.held
    ), adopted_items AS (
        UPDATE flowforge.work_item w SET flow_token = w.fencing_token, flow_queue_slot = true
        FROM (SELECT x.id, x.flow_token IS NOT DISTINCT FROM x.fencing_token AS held FROM flowforge.work_item x
              WHERE x.organization_id = p_org AND x.status = 'dispatched' AND x.queue = p_queue AND x.fencing_token >= 1
                AND NOT (x.flow_token IS NOT DISTINCT FROM x.fencing_token AND coalesce(x.flow_queue_slot, false))
                AND x.leased_by IS DISTINCT FROM flowforge._fanout_holder()) b
        WHERE w.id = b.id
        RETURNING w.flow_lane, b.held
    ), a AS (
        SELECT flow_lane, held FROM adopted UNION ALL SELECT flow_lane, held FROM adopted_items
    )
    SELECT count(*)::integer, array_agg(a.flow_lane) FILTER (WHERE NOT a.held AND a.flow_lane IS NOT NULL)
    INTO v_n, v_keyless
    FROM a;
    IF v_n = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO flowforge.flow_slot AS s (organization_id, scope, name, value, running, updated_at)
    VALUES (p_org, 'queue', p_queue, 'null', v_n, p_now)
    ON CONFLICT ON CONSTRAINT flow_slot_pkey DO UPDATE SET running = s.running + EXCLUDED.running, updated_at = p_now;
    INSERT INTO flowforge.flow_slot AS s (organization_id, scope, name, value, running, updated_at)
    SELECT p_org, 'key', l.conc_name, l.conc_value, count(*), p_now
    FROM unnest(v_keyless) AS u(lane)
    JOIN flowforge.flow_lane l ON l.organization_id = p_org AND l.id = u.lane
    WHERE l.conc_name IS NOT NULL
    GROUP BY l.conc_name, l.conc_value
    ORDER BY l.conc_name, l.conc_value
    ON CONFLICT ON CONSTRAINT flow_slot_pkey DO UPDATE SET running = s.running + EXCLUDED.running, updated_at = p_now;
    RETURN v_n;
END;
$$;
COMMENT ON FUNCTION flowforge._flow_adopt_running(uuid, text, timestamptz) IS
  'Internal: queue p_queue was given max_running: its units that run (are dispatched) without a slot of it — '
  'claimed before — are counted in its running counter now (and in their concurrency key''s when they held no slot '
  'at all), and marked so they give the slots back when they end. Returns how many.';

-- Pausing is an operational switch, kept apart from the queue's configuration
-- (configure_queue leaves it alone).
CREATE OR REPLACE FUNCTION flowforge.pause_queue(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
BEGIN
    IF pause_queue.name IS NULL OR pause_queue.name !~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'queue name must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got %',
            coalesce(quote_literal(pause_queue.name), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Use the queue name your task definitions name.';
    END IF;
    INSERT INTO flowforge.queue AS q (organization_id, name, paused, created_at, updated_at, created_by, updated_by)
    VALUES (v_org, pause_queue.name, true, v_now, v_now, flowforge._principal(), flowforge._principal())
    ON CONFLICT ON CONSTRAINT queue_pkey DO UPDATE SET paused = true, updated_at = EXCLUDED.updated_at,
                                                       updated_by = EXCLUDED.updated_by;
    PERFORM flowforge._audit(v_org, 'pause', 'queue', pause_queue.name, ARRAY['paused']);
END;
$$;
COMMENT ON FUNCTION flowforge.pause_queue(text) IS
  'pause_queue(name text). Claims (claim, claim_work, push dispatch) take nothing from the queue until resume_queue; '
  'what runs goes on and finishes. Its ready work stays ready (why_not_ready: queue_paused). Pausing a paused or '
  'unknown queue is fine (an unknown one is created paused). Errors: FF003 a bad name; FF007/FF008 as for every '
  'API call.';
SELECT flowforge._rights('flowforge.pause_queue(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.resume_queue(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
BEGIN
    IF resume_queue.name IS NULL OR resume_queue.name !~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'queue name must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got %',
            coalesce(quote_literal(resume_queue.name), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Use the queue name your task definitions name.';
    END IF;
    UPDATE flowforge.queue q SET paused = false, updated_at = v_now, updated_by = flowforge._principal()
    WHERE q.organization_id = v_org AND q.name = resume_queue.name AND q.paused;
    IF FOUND THEN
        PERFORM flowforge._audit(v_org, 'resume', 'queue', resume_queue.name, ARRAY['paused']);
        PERFORM flowforge._notify_ready();  -- its ready work may go now
        IF EXISTS (SELECT 1 FROM flowforge.queue q
                   WHERE q.organization_id = v_org AND q.name = resume_queue.name AND q.exchange IS NOT NULL) THEN
            PERFORM flowforge._dispatch_due(1000, v_now, ARRAY[v_org]);
        END IF;
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.resume_queue(text) IS
  'resume_queue(name text). A paused queue is claimed from again (NOTIFY flowforge_ready; a push queue''s ready '
  'tasks are dispatched at once); resuming a queue that is not paused changes nothing. Errors: FF003 a bad name; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.resume_queue(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
