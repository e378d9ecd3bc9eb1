-- Fan-out: a DAG task or a graph node with a "map" runs once per element of
-- an array in its input, as work items ("children"), and completes with
-- their outputs (map) or their counts (foreach).
--
-- The checkpoint (seed 002) is the whole record of where a fan-out stands:
-- the elements (evaluated once, in pages), the cursor (the next element to
-- dispatch), the settled and live counts. Children are created lazily from
-- the cursor, at most max_concurrency live at once (a constraint), so a
-- 100k-element map never holds 100k rows of queued work. Each child's end is
-- O(1): one checkpoint update, one page read, one new child — no re-count of
-- siblings, no array rewritten. A resumed run (retry_run) re-runs only the
-- elements that did not succeed: a succeeded element's child is found by
-- work_item_checkpoint_done_uq and never dispatched again.
--
-- The fanning unit itself — a DAG task run, or a graph visit's own work
-- item — is held by the engine while its children run: running (dispatched)
-- under holder 'flowforge:fan-out' with a lease that never expires and a
-- fencing token nobody was given, so no worker can write it and the reaper
-- never takes it; its children have leases of their own.
--
-- Lock order: the run (workflow_run for a DAG, the directory row otherwise),
-- then the checkpoint, then the children.

-- Elements per checkpoint_page row: a child reads one page of at most this many.
CREATE OR REPLACE FUNCTION flowforge._fanout_page_size() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 100 $$;
COMMENT ON FUNCTION flowforge._fanout_page_size() IS
  'Internal: how many elements of a fan-out one checkpoint_page row holds (100).';

-- What each child is given as "input": the node's input without the array it
-- iterates when "over" is a plain member path ($.run.images), so a child
-- does not carry every sibling's element; the whole input otherwise.
CREATE OR REPLACE FUNCTION flowforge._fanout_child_input(p_input jsonb, p_over text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_path text[];
BEGIN
    IF p_over !~ '^\$(\."([^"\\]|\\.)*")+$' THEN
        RETURN p_input;
    END IF;
    SELECT array_agg(replace(replace(m[1], '\"', '"'), '\\', '\') ORDER BY n) INTO v_path
    FROM regexp_matches(p_over, '\."((?:[^"\\]|\\.)*)"', 'g') WITH ORDINALITY AS x(m, n);
    RETURN p_input #- v_path;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_child_input(jsonb, text) IS
  'Internal: the input a fan-out child carries — p_input without the member p_over names when p_over (canonical '
  'jsonpath text) is a plain member path, else p_input unchanged.';

-- The fanning unit: who owns it and where it is.
CREATE OR REPLACE FUNCTION flowforge._fanout_holder() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 'flowforge:fan-out' $$;
COMMENT ON FUNCTION flowforge._fanout_holder() IS
  'Internal: the holder name of a unit whose children are running (lease_owner / leased_by).';

-- Begin (or resume) the fan-out of a node. The caller holds the run and has
-- put the fanning unit in the engine's hands. Returns NULL when under way
-- (or already finished: an empty array), otherwise why the node cannot fan
-- out — the caller fails it for good with that error.
CREATE OR REPLACE FUNCTION flowforge._fanout_begin(p_org uuid, p_engine text, p_run_id uuid, p_task_id uuid,
                                                   p_parent_task_run_id uuid, p_parent_work_item_id uuid,
                                                   p_generation integer, p_input jsonb, p_now timestamptz)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_node record;
    v_map jsonb;
    v_found jsonb;
    v_total integer;
    v_limit integer;
    v_tolerated bigint;
    v_checkpoint flowforge.checkpoint%ROWTYPE;
BEGIN
    SELECT t.key, t.spec -> 'map' AS map, t.workflow_id INTO STRICT v_node FROM flowforge.task t
    WHERE t.id = p_task_id AND t.organization_id = p_org;
    v_map := v_node.map;

    SELECT * INTO v_checkpoint FROM flowforge.checkpoint c
    WHERE c.organization_id = p_org AND c.run_id = p_run_id AND c.node_name = v_node.key
    FOR UPDATE;
    IF FOUND AND v_checkpoint.generation = p_generation THEN
        -- Resume: what succeeded stays; everything else runs again from a fresh cursor.
        UPDATE flowforge.checkpoint c
        SET failed = 0, idx = c.succeeded, live = 0, cursor = 0, done = false, outcome = NULL, error = NULL,
            parent_task_run_id = p_parent_task_run_id, parent_work_item_id = p_parent_work_item_id,
            updated_at = p_now, updated_by = flowforge._principal()
        WHERE c.id = v_checkpoint.id AND c.organization_id = p_org;
        PERFORM flowforge._fanout_progress(p_org, v_checkpoint.id, p_now);
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(r) INTO v_found
    FROM jsonb_path_query(p_input, (v_map ->> 'over')::jsonpath, silent => true) AS r;
    IF v_found IS NULL OR jsonb_array_length(v_found) <> 1 OR jsonb_typeof(v_found -> 0) <> 'array' THEN
        RETURN format('map over %s: the input yields %s, not an array', v_map ->> 'over',
                      CASE WHEN v_found IS NULL THEN 'nothing'
                           WHEN jsonb_array_length(v_found) > 1 THEN format('%s values', jsonb_array_length(v_found))
                           WHEN jsonb_typeof(v_found -> 0) = 'object' THEN 'an object'
                           WHEN jsonb_typeof(v_found -> 0) = 'null' THEN 'null'
                           ELSE 'a ' || jsonb_typeof(v_found -> 0) END);
    END IF;
    v_total := jsonb_array_length(v_found -> 0);
    v_limit := (SELECT s.max_fanout_items FROM flowforge.setting s);
    IF v_total > v_limit THEN
        RETURN format('map over %s: %s elements, over the limit of %s (setting max_fanout_items)', v_map ->> 'over',
                      v_total, v_limit);
    END IF;
    v_tolerated := CASE WHEN v_map ->> 'on_item_failure' = 'continue' THEN NULL
                        WHEN v_map ->> 'tolerated_failures' LIKE '%\%' ESCAPE '\'
                        THEN floor(v_total * rtrim(v_map ->> 'tolerated_failures', '%')::numeric / 100)::bigint
                        ELSE coalesce((v_map ->> 'tolerated_failures')::bigint, 0) END;

    IF v_checkpoint.id IS NOT NULL THEN
        -- A graph node entered again: the same row, a new generation, the new elements.
        DELETE FROM flowforge.checkpoint_page p WHERE p.checkpoint_id = v_checkpoint.id AND p.organization_id = p_org;
        UPDATE flowforge.checkpoint c
        SET generation = p_generation, parent_task_run_id = p_parent_task_run_id,
            parent_work_item_id = p_parent_work_item_id, iterator_type = v_map ->> 'mode', cursor = 0, idx = 0,
            total = v_total, succeeded = 0, failed = 0, live = 0,
            max_concurrency = (v_map ->> 'max_concurrency')::integer, tolerated_failures = v_tolerated, done = false,
            outcome = NULL, child_input = flowforge._fanout_child_input(p_input, v_map ->> 'over'),
            output_by_reference = false, error = NULL, updated_at = p_now, updated_by = flowforge._principal()
        WHERE c.id = v_checkpoint.id AND c.organization_id = p_org;
    ELSE
        INSERT INTO flowforge.checkpoint (organization_id, run_id, node_name, definition_id, task_id, engine_kind,
                                          parent_task_run_id, parent_work_item_id, iterator_type, generation, total,
                                          max_concurrency, tolerated_failures, child_input, created_at, created_by)
        VALUES (p_org, p_run_id, v_node.key, v_node.workflow_id, p_task_id, p_engine, p_parent_task_run_id,
                p_parent_work_item_id, v_map ->> 'mode', p_generation, v_total,
                (v_map ->> 'max_concurrency')::integer, v_tolerated,
                flowforge._fanout_child_input(p_input, v_map ->> 'over'), p_now, flowforge._principal())
        RETURNING id INTO v_checkpoint.id;
    END IF;
    INSERT INTO flowforge.checkpoint_page (organization_id, checkpoint_id, page, elements)
    SELECT p_org, v_checkpoint.id, ((e.n - 1) / flowforge._fanout_page_size())::integer, jsonb_agg(e.element ORDER BY e.n)
    FROM jsonb_array_elements(v_found -> 0) WITH ORDINALITY AS e(element, n)
    GROUP BY (e.n - 1) / flowforge._fanout_page_size();
    PERFORM flowforge._fanout_progress(p_org, v_checkpoint.id, p_now);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_begin(uuid, text, uuid, uuid, uuid, uuid, integer, jsonb, timestamptz) IS
  'Internal: node p_task_id of run p_run_id fans out over the array its map''s "over" finds in p_input: a checkpoint '
  '(a new one, a new generation of the node''s row, or — same generation — the one a retry resumes, its succeeded '
  'elements kept), the elements in pages, and the first max_concurrency children. Returns NULL when under way or '
  'finished, else the reason it cannot fan out (not an array, over max_fanout_items): nothing was written.';

-- Dispatch children up to the bound, or finish when every element settled.
CREATE OR REPLACE FUNCTION flowforge._fanout_progress(p_org uuid, p_checkpoint_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    c_page constant integer := flowforge._fanout_page_size();
    v_cp record;
    v_cursor bigint;
    v_slots integer;
    v_started integer := 0;
    v_element jsonb;
    v_payload jsonb;
BEGIN
    SELECT c.*, t.key, t.affinity, w.name AS definition INTO STRICT v_cp
    FROM flowforge.checkpoint c
    JOIN flowforge.task t ON t.id = c.task_id AND t.organization_id = p_org
    JOIN flowforge.workflow w ON w.id = c.definition_id AND w.organization_id = p_org
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    IF v_cp.done THEN
        RETURN;
    END IF;
    IF v_cp.idx = v_cp.total THEN
        PERFORM flowforge._fanout_finish(p_org, p_checkpoint_id, p_now);
        RETURN;
    END IF;
    v_cursor := v_cp.cursor;
    v_slots := v_cp.max_concurrency - v_cp.live;
    WHILE v_slots > 0 AND v_cursor < v_cp.total LOOP
        -- A resumed fan-out skips the elements that already succeeded.
        IF v_cp.succeeded = 0 OR NOT EXISTS (
            SELECT 1 FROM flowforge.work_item w
            WHERE w.checkpoint_id = p_checkpoint_id AND w.checkpoint_generation = v_cp.generation
              AND w.item_index = v_cursor AND w.status = 'completed' AND w.organization_id = p_org) THEN
            SELECT p.elements -> (v_cursor % c_page)::integer INTO STRICT v_element
            FROM flowforge.checkpoint_page p
            WHERE p.checkpoint_id = p_checkpoint_id AND p.page = (v_cursor / c_page)::integer
              AND p.organization_id = p_org;
            v_payload := jsonb_build_object('item', v_element, 'index', v_cursor, 'input', v_cp.child_input);
            PERFORM flowforge._enqueue_work(p_org, v_cp.engine_kind, v_cp.run_id, v_cp.task_id,
                v_cp.key, v_payload, flowforge._affinity_key(v_cp.affinity, v_cp.run_id, v_cp.definition, v_payload),
                p_now, v_cp.parent_work_item_id, p_checkpoint_id, v_cp.generation, v_cursor::integer);
            v_slots := v_slots - 1;
            v_started := v_started + 1;
        END IF;
        v_cursor := v_cursor + 1;
    END LOOP;
    UPDATE flowforge.checkpoint c
    SET cursor = v_cursor, live = c.live + v_started, updated_at = p_now
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_progress(uuid, uuid, timestamptz) IS
  'Internal: a fan-out (checkpoint p_checkpoint_id of organization p_org) moves on — when every element has settled it finishes; otherwise children are created from '
  'the cursor (payload {"item", "index", "input"}; elements that already succeeded are skipped) until '
  'max_concurrency are live or the elements run out.';

-- A child ended for good: count it, then fail the node (too many failures),
-- finish it (the last element) or start the next child.
CREATE OR REPLACE FUNCTION flowforge._fanout_child_settled(p_org uuid, p_work_item_id uuid, p_succeeded boolean,
                                                           p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_item record;
    v_cp record;
BEGIN
    SELECT w.checkpoint_id, w.checkpoint_generation, w.item_index, w.error, w.retry_count INTO STRICT v_item
    FROM flowforge.work_item w WHERE w.id = p_work_item_id AND w.organization_id = p_org;
    UPDATE flowforge.checkpoint c
    SET live = c.live - 1, idx = c.idx + 1,
        succeeded = c.succeeded + CASE WHEN p_succeeded THEN 1 ELSE 0 END,
        failed = c.failed + CASE WHEN p_succeeded THEN 0 ELSE 1 END,
        updated_at = p_now
    WHERE c.id = v_item.checkpoint_id AND c.organization_id = p_org AND c.generation = v_item.checkpoint_generation
      AND NOT c.done
    RETURNING c.id, c.failed, c.tolerated_failures INTO v_cp;
    IF NOT FOUND THEN
        RETURN;  -- the fan-out already ended (failed, cancelled) or moved to a new generation
    END IF;
    IF NOT p_succeeded AND v_cp.tolerated_failures IS NOT NULL AND v_cp.failed > v_cp.tolerated_failures THEN
        PERFORM flowforge._fanout_fail(p_org, v_cp.id,
            format('element %s failed after %s attempt(s)%s: %s', v_item.item_index, v_item.retry_count + 1,
                   CASE WHEN v_cp.tolerated_failures > 0 THEN format(' (failures: %s, tolerated: %s)', v_cp.failed,
                                                                      v_cp.tolerated_failures) ELSE '' END,
                   coalesce(v_item.error, 'no error given')),
            p_now);
        RETURN;
    END IF;
    PERFORM flowforge._fanout_progress(p_org, v_cp.id, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_child_settled(uuid, uuid, boolean, timestamptz) IS
  'Internal: fan-out child p_work_item_id (organization p_org) succeeded or failed for good — the checkpoint counts it (live - 1, idx + 1); '
  'more failures than tolerated fail the node (its live children cancelled); otherwise the fan-out progresses (the '
  'next child, or the node''s completion after the last element).';

-- The node's output, once every element settled: the children's outputs in
-- element order (map; a failed element holds null) or the counts (foreach).
-- A map output over the payload limit is passed by reference.
CREATE OR REPLACE FUNCTION flowforge._fanout_finish(p_org uuid, p_checkpoint_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_cp record;
    v_output jsonb;
    v_by_reference boolean := false;
BEGIN
    SELECT c.* INTO STRICT v_cp FROM flowforge.checkpoint c
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    IF v_cp.iterator_type = 'foreach' THEN
        v_output := jsonb_build_object('count', v_cp.total, 'succeeded', v_cp.succeeded, 'failed', v_cp.failed);
    ELSE
        -- The array's size first, exactly as its text will be ("[", the
        -- elements — a failed one is null — joined by ", ", "]"): an array too
        -- large to inline is never built, however large the outputs are.
        v_by_reference := (SELECT 2 + coalesce(sum(coalesce(octet_length(w.output::text), 4)), 0)
                                  + 4 * (v_cp.total - count(*)) + 2 * greatest(v_cp.total - 1, 0)
                           FROM flowforge.work_item w
                           WHERE w.checkpoint_id = p_checkpoint_id AND w.checkpoint_generation = v_cp.generation
                             AND w.status = 'completed' AND w.organization_id = p_org)
                          > (SELECT s.max_payload_bytes FROM flowforge.setting s);
        IF NOT v_by_reference THEN
            SELECT coalesce(jsonb_agg(w.output ORDER BY g.i), '[]') INTO v_output
            FROM generate_series(0, v_cp.total - 1) AS g(i)
            LEFT JOIN flowforge.work_item w
                   ON w.checkpoint_id = p_checkpoint_id AND w.checkpoint_generation = v_cp.generation
                  AND w.item_index = g.i AND w.status = 'completed' AND w.organization_id = p_org;
        END IF;
        IF v_by_reference THEN
            v_output := jsonb_build_object('fan_out', jsonb_build_object(
                'by_reference', true, 'run_id', v_cp.run_id, 'node', v_cp.node_name, 'count', v_cp.total,
                'failed', v_cp.failed,
                'read', format('SELECT * FROM flowforge.fan_out_output(%L, %L)', v_cp.run_id, v_cp.node_name)));
        END IF;
    END IF;
    UPDATE flowforge.checkpoint c
    SET done = true, outcome = 'succeeded', output_by_reference = v_by_reference, updated_at = p_now
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    PERFORM flowforge._fanout_parent_done(p_org, p_checkpoint_id, v_output, NULL, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_finish(uuid, uuid, timestamptz) IS
  'Internal: every element of a fan-out (checkpoint p_checkpoint_id of organization p_org) settled — the checkpoint is done, and the node completes with the children''s '
  'outputs in element order (map: failed elements null; over max_payload_bytes, a reference read with '
  'fan_out_output) or {"count", "succeeded", "failed"} (foreach).';

CREATE OR REPLACE FUNCTION flowforge._fanout_fail(p_org uuid, p_checkpoint_id uuid, p_error text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM flowforge._fanout_cancel_children(p_org, p_checkpoint_id, p_now);
    UPDATE flowforge.checkpoint c
    SET done = true, outcome = 'failed', live = 0, error = p_error, updated_at = p_now
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    PERFORM flowforge._fanout_parent_done(p_org, p_checkpoint_id, NULL, p_error, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_fail(uuid, uuid, text, timestamptz) IS
  'Internal: a fan-out (checkpoint p_checkpoint_id of organization p_org) fails — its live children cancelled (their holders refused FF004), the checkpoint done with '
  'the error, the node failed for good with it.';

-- Cancel a fan-out's live children: holders of a dispatched one lose their token.
CREATE OR REPLACE FUNCTION flowforge._fanout_cancel_children(p_org uuid, p_checkpoint_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_run uuid;
    v_ids uuid[];
    v_from text[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    SELECT c.run_id INTO STRICT v_run FROM flowforge.checkpoint c
    WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    WITH open AS MATERIALIZED (
        SELECT w.id, w.status AS from_status FROM flowforge.work_item w
        WHERE w.checkpoint_id = p_checkpoint_id AND w.organization_id = p_org AND w.status IN ('pending', 'dispatched')
        FOR UPDATE
    ), cancelled AS (
        UPDATE flowforge.work_item w
        SET status = 'cancelled', completed_at = greatest(p_now, w.dispatched_at), lease_expires_at = NULL,
            fencing_token = CASE WHEN o.from_status = 'dispatched' THEN w.fencing_token + 1 ELSE w.fencing_token END
        FROM open o WHERE w.id = o.id AND w.organization_id = p_org
        RETURNING w.id, o.from_status, w.fencing_token, w.retry_count
    )
    SELECT array_agg(x.id), array_agg(x.from_status::text), array_agg(x.fencing_token), array_agg(x.retry_count + 1)
    INTO v_ids, v_from, v_tokens, v_attempts
    FROM cancelled x;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM flowforge._append_events(p_org, v_run, 'cancelled', array_fill(NULL::uuid, ARRAY[cardinality(v_ids)]),
        v_from, array_fill('cancelled'::text, ARRAY[cardinality(v_ids)]), v_tokens, v_attempts,
        array_fill(NULL::jsonb, ARRAY[cardinality(v_ids)]), p_now, v_ids);
    RETURN cardinality(v_ids);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_cancel_children(uuid, uuid, timestamptz) IS
  'Internal: cancels the pending and dispatched children of a fan-out (checkpoint p_checkpoint_id of organization '
  'p_org) (a dispatched one''s fencing token moves on); '
  'event cancelled per child. Returns how many.';

-- The run was cancelled: its fan-outs stop where they are (a retry resumes them).
CREATE OR REPLACE FUNCTION flowforge._fanout_run_cancelled(p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    UPDATE flowforge.checkpoint c SET done = true, outcome = 'cancelled', live = 0, updated_at = p_now
    WHERE c.organization_id = p_org AND c.run_id = p_run_id AND NOT c.done;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_run_cancelled(uuid, uuid, timestamptz) IS
  'Internal: run p_run_id was cancelled (its work items already cancelled) — its unfinished checkpoints are done as '
  'cancelled, their succeeded elements kept for a retry.';

-- The fanning unit ends as its fan-out did, through its engine's own hooks.
CREATE OR REPLACE FUNCTION flowforge._fanout_parent_done(p_org uuid, p_checkpoint_id uuid, p_output jsonb,
                                                         p_error text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_cp record;
    v_unit record;
    v_detail jsonb;
BEGIN
    SELECT c.organization_id, c.run_id, c.engine_kind, c.task_id, c.parent_task_run_id, c.parent_work_item_id,
           c.total, c.succeeded, c.failed
    INTO STRICT v_cp FROM flowforge.checkpoint c WHERE c.id = p_checkpoint_id AND c.organization_id = p_org;
    v_detail := jsonb_build_object('fan_out', jsonb_build_object('count', v_cp.total, 'succeeded', v_cp.succeeded,
                                                                 'failed', v_cp.failed))
                || CASE WHEN p_error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', left(p_error, 1000)) END;
    IF v_cp.engine_kind = 'dag' THEN
        UPDATE flowforge.task_run tr
        SET state = CASE WHEN p_error IS NULL THEN 'succeeded' ELSE 'failed' END, output = p_output, error = p_error,
            finished_at = greatest(p_now, tr.started_at), lease_expires_at = NULL
        WHERE tr.id = v_cp.parent_task_run_id AND tr.organization_id = p_org AND tr.state = 'running'
        RETURNING tr.fencing_token, tr.attempt INTO v_unit;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        PERFORM flowforge._append_events(v_cp.organization_id, v_cp.run_id,
            CASE WHEN p_error IS NULL THEN 'completed' ELSE 'failed' END, ARRAY[v_cp.parent_task_run_id],
            ARRAY['running'], ARRAY[CASE WHEN p_error IS NULL THEN 'succeeded' ELSE 'failed' END],
            ARRAY[v_unit.fencing_token], ARRAY[v_unit.attempt], ARRAY[v_detail], p_now);
        IF p_error IS NULL THEN
            PERFORM flowforge._on_task_succeeded('dag', p_org, v_cp.run_id, v_cp.parent_task_run_id, v_cp.task_id,
                                                 p_now);
        ELSE
            PERFORM flowforge._on_task_failed_for_good('dag', p_org, v_cp.run_id, v_cp.parent_task_run_id,
                                                       v_cp.task_id, p_now);
        END IF;
    ELSE
        UPDATE flowforge.work_item w
        SET status = CASE WHEN p_error IS NULL THEN 'completed' ELSE 'failed' END, output = p_output, error = p_error,
            completed_at = greatest(p_now, w.dispatched_at), lease_expires_at = NULL
        WHERE w.id = v_cp.parent_work_item_id AND w.organization_id = p_org AND w.status = 'dispatched'
        RETURNING w.fencing_token, w.retry_count INTO v_unit;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        PERFORM flowforge._append_events(v_cp.organization_id, v_cp.run_id,
            CASE WHEN p_error IS NULL THEN 'completed' ELSE 'failed' END, ARRAY[NULL::uuid], ARRAY['dispatched'],
            ARRAY[CASE WHEN p_error IS NULL THEN 'completed' ELSE 'failed' END], ARRAY[v_unit.fencing_token],
            ARRAY[v_unit.retry_count + 1], ARRAY[v_detail], p_now, ARRAY[v_cp.parent_work_item_id]);
        IF p_error IS NULL THEN
            PERFORM flowforge._on_task_succeeded(v_cp.engine_kind, p_org, v_cp.run_id, v_cp.parent_work_item_id,
                                                 v_cp.task_id, p_now);
        ELSE
            PERFORM flowforge._on_task_failed_for_good(v_cp.engine_kind, p_org, v_cp.run_id, v_cp.parent_work_item_id,
                                                       v_cp.task_id, p_now);
        END IF;
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_parent_done(uuid, uuid, jsonb, text, timestamptz) IS
  'Internal: the fanning unit of checkpoint p_checkpoint_id (organization p_org) (a DAG task run, or a graph visit''s own work item) completes with '
  'p_output or fails for good with p_error, with its event (detail fan_out {count, succeeded, failed}), and its '
  'engine reacts through the usual hooks (dependents released, the next edge taken, or the failure handled).';

-- Hand a unit to the engine while its children run: running / dispatched,
-- held by nobody a worker could be, under a lease that never expires.
CREATE OR REPLACE FUNCTION flowforge._fanout_hold_task_run(p_org uuid, p_task_run_id uuid, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_unit record;
BEGIN
    UPDATE flowforge.task_run tr
    SET state = 'running', fencing_token = tr.fencing_token + 1, lease_owner = flowforge._fanout_holder(),
        lease_expires_at = 'infinity', started_at = p_now
    WHERE tr.id = p_task_run_id AND tr.organization_id = p_org AND tr.state = 'ready'
    RETURNING tr.organization_id, tr.workflow_run_id, tr.fencing_token, tr.attempt INTO v_unit;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM flowforge._append_events(v_unit.organization_id, v_unit.workflow_run_id, 'fanned_out',
        ARRAY[p_task_run_id], ARRAY['ready'], ARRAY['running'], ARRAY[v_unit.fencing_token], ARRAY[v_unit.attempt],
        ARRAY[jsonb_build_object('holder', flowforge._fanout_holder())], p_now);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_hold_task_run(uuid, uuid, timestamptz) IS
  'Internal: a ready fanning DAG task run of organization p_org becomes running under holder flowforge:fan-out with a lease that never '
  'expires and a new fencing token nobody holds; event fanned_out. False when it was not ready (already taken).';

CREATE OR REPLACE FUNCTION flowforge._fanout_hold_work_item(p_org uuid, p_work_item_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_unit record;
BEGIN
    UPDATE flowforge.work_item w
    SET status = 'dispatched', fencing_token = w.fencing_token + 1, agent_id = flowforge._fanout_holder(),
        leased_by = flowforge._fanout_holder(), dispatched_at = p_now, lease_expires_at = 'infinity'
    WHERE w.id = p_work_item_id AND w.organization_id = p_org AND w.status = 'pending'
    RETURNING w.organization_id, w.run_id, w.fencing_token, w.retry_count INTO STRICT v_unit;
    PERFORM flowforge._append_events(v_unit.organization_id, v_unit.run_id, 'fanned_out', ARRAY[NULL::uuid],
        ARRAY['pending'], ARRAY['dispatched'], ARRAY[v_unit.fencing_token], ARRAY[v_unit.retry_count + 1],
        ARRAY[jsonb_build_object('holder', flowforge._fanout_holder())], p_now, ARRAY[p_work_item_id]);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_hold_work_item(uuid, uuid, timestamptz) IS
  'Internal: a fanning graph visit''s own work item (organization p_org) becomes dispatched to holder flowforge:fan-out with a lease that '
  'never expires and a new fencing token nobody holds; event fanned_out.';
