-- A graph node with a map (issue 15): entering it holds the visit's own work
-- item (dispatched to flowforge:fan-out under a lease that never expires) and
-- fans out over the node's input ({"state", "node", "visit"}); the last
-- child's completion completes that item with the output, merged into the
-- run's data under the node's rules (an array goes under the node's key), and
-- the next edge is taken. An empty map completes at once; a node entered
-- again in a cycle fans out afresh (the checkpoint's generation is the
-- visit) over the new elements; cancel_run cancels every child; retry_run
-- resumes the same generation; an "over" that yields no array fails the run.
BEGIN;
SELECT plan(64);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- resize (map over the data's images) -> check; check -> resize when the
-- output asks for more, else -> done.
SELECT flowforge.define_workflow($${"name": "gfo", "kind": "graph", "start": "resize", "nodes": [
    {"key": "resize", "queue": "gfo", "max_attempts": 1, "map": {"over": "$.state.images", "max_concurrency": 2}},
    {"key": "check", "queue": "gfo"},
    {"key": "done", "final": true}],
    "edges": [{"from": "resize", "to": "check"},
              {"from": "check", "to": "resize", "when": "$.output.more == true"},
              {"from": "check", "to": "done"}]}$$) AS gw \gset

-- The pending work item of an ordinary node (not a child) of run p_run.
CREATE FUNCTION pg_temp.node_item(p_run uuid, p_node text) RETURNS uuid LANGUAGE sql AS $$
    SELECT id FROM flowforge.work_item
    WHERE run_id = p_run AND task_name = p_node AND checkpoint_id IS NULL AND status IN ('pending', 'dispatched')
$$;
-- Claim and complete ordinary node p_node's item with p_output; returns its payload.
CREATE FUNCTION pg_temp.step(p_run uuid, p_node text, p_output jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_claimed record;
BEGIN
    SELECT * INTO v_claimed FROM flowforge_test.claim_item(pg_temp.node_item(p_run, p_node));
    PERFORM flowforge.complete_work(v_claimed.work_item_id, v_claimed.fencing_token, p_output);
    RETURN v_claimed.payload;
END;
$$;
-- Every child of a run: "generation.index:status" in order.
CREATE FUNCTION pg_temp.children(p_run uuid) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s.%s:%s', w.checkpoint_generation, w.item_index, w.status), ' '
                      ORDER BY w.checkpoint_generation, w.item_index, w.created_at, w.id)
    FROM flowforge.work_item w WHERE w.run_id = p_run AND w.checkpoint_id IS NOT NULL
$$;

-- ===========================================================================
-- Entering the fanning node
-- ===========================================================================
SELECT flowforge.start_run('gfo', '{"images": ["a", "b", "c"], "k": 1}') AS r \gset
SELECT id AS parent FROM flowforge.work_item WHERE run_id = :'r' AND checkpoint_id IS NULL \gset
SELECT results_eq(
    format($$SELECT task_name::text, status::text, agent_id::text, leased_by::text, lease_expires_at, fencing_token,
                    dispatched_at, affinity_key, payload FROM flowforge.work_item WHERE id = %L$$, :'parent'),
    $$VALUES ('resize', 'dispatched', 'flowforge:fan-out', 'flowforge:fan-out', 'infinity'::timestamptz, 1::bigint,
              '2030-01-01 00:00:00+00'::timestamptz, NULL::text,
              '{"state": {"images": ["a", "b", "c"], "k": 1}, "node": "resize", "visit": 1}'::jsonb)$$,
    'the visit''s own work item is held by the engine: dispatched to flowforge:fan-out, a lease that never expires, '
    'a fencing token no worker was given');
SELECT results_eq(
    format($$SELECT step, node::text, visit, work_item_id FROM flowforge.graph_step WHERE run_id = %L ORDER BY step$$, :'r'),
    format($$VALUES (1::bigint, 'resize', 1, %L::uuid)$$, :'parent'),
    'entering it is step 1, visit 1, the step naming the held item');
SELECT results_eq(
    format($$SELECT engine_kind::text, parent_task_run_id, parent_work_item_id, generation, total, cursor, live, child_input
             FROM flowforge.checkpoint WHERE run_id = %L AND node_name = 'resize'$$, :'r'),
    format($$VALUES ('graph', NULL::uuid, %L::uuid, 1, 3::bigint, 2::bigint, 2,
                     '{"state": {"k": 1}, "node": "resize", "visit": 1}'::jsonb)$$, :'parent'),
    'its checkpoint: a graph one, the held item its parent, generation 1 (the visit), two of three dispatched');
SELECT results_eq(
    format($$SELECT item_index, engine_kind::text, task_name::text, status::text, parent_work_item_id, payload
             FROM flowforge.work_item WHERE run_id = %L AND checkpoint_id IS NOT NULL ORDER BY item_index$$, :'r'),
    format($$VALUES (0, 'graph', 'resize', 'pending', %L::uuid,
                     '{"item": "a", "index": 0, "input": {"state": {"k": 1}, "node": "resize", "visit": 1}}'::jsonb),
                    (1, 'graph', 'resize', 'pending', %L,
                     '{"item": "b", "index": 1, "input": {"state": {"k": 1}, "node": "resize", "visit": 1}}')$$,
           :'parent', :'parent'),
    'children of the graph engine, named for the node, the held item their parent, payload {"item", "index", '
    '"input"} (the visit''s payload without the iterated array)');
SELECT set_eq(
    format($$SELECT work_item_id FROM flowforge.claim_work(ARRAY['gfo'], 'greedy', '30 seconds', 10)$$),
    format($$SELECT id FROM flowforge.work_item WHERE run_id = %L AND checkpoint_id IS NOT NULL$$, :'r'),
    'claim_work hands out the children only, never the held item');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, detail FROM flowforge.run_events(%L)
             WHERE work_item_id = %L ORDER BY seq$$, :'r', :'parent'),
    $$VALUES ('created', NULL, 'pending', NULL::jsonb),
             ('fanned_out', 'pending', 'dispatched', '{"holder": "flowforge:fan-out"}')$$,
    'the held item''s events: created, then fanned_out (pending -> dispatched)');
SELECT is(flowforge.get_run(:'r') -> 'fan_outs' -> 'resize' -> 'total', '3'::jsonb, 'get_run shows the node''s fan-out progress');

-- The greedy agent holds both children; they complete, the third is dispatched and completes.
SELECT lives_ok(format($$SELECT flowforge.complete_work(w.id, w.fencing_token, to_jsonb(upper(w.payload ->> 'item')))
                         FROM flowforge.work_item w WHERE w.run_id = %L AND w.checkpoint_id IS NOT NULL AND w.item_index = 1$$, :'r'),
                'element 1 completes first');
SELECT is(flowforge_test.fanout_state(:'r', 'resize'), '3/1/3 live:2 children:2 succeeded:1 failed:0 open',
          'the next element is dispatched');
SELECT is(flowforge_test.item_status(:'parent'), 'dispatched', 'the held item stays held while children live');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge.complete_work(w.id, w.fencing_token, '"A"') FROM flowforge.work_item w
                         WHERE w.run_id = %L AND w.checkpoint_id IS NOT NULL AND w.item_index = 0$$, :'r'),
                'element 0 completes');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', 2, '"C"')$$, :'r'), 'the last element (2) completes');
SELECT results_eq(
    format($$SELECT status::text, output, completed_at, lease_expires_at FROM flowforge.work_item WHERE id = %L$$, :'parent'),
    $$VALUES ('completed', '["A", "B", "C"]'::jsonb, '2030-01-01 00:00:01+00'::timestamptz, NULL::timestamptz)$$,
    'the held item completes with the children''s outputs in element order');
SELECT is((SELECT detail FROM flowforge.run_events(:'r') WHERE work_item_id = :'parent' AND kind = 'completed'),
          '{"fan_out": {"count": 3, "failed": 0, "succeeded": 3}}', 'its completed event carries the counts');
SELECT results_eq(
    format($$SELECT task::text, steps, state FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('check', 2::bigint, '{"images": ["a", "b", "c"], "k": 1, "resize": ["A", "B", "C"]}'::jsonb)$$,
    'the output (an array) merged into the run''s data under the node''s key, and the next edge taken: at check, step 2');

-- ===========================================================================
-- The cycle: resize entered again fans out afresh over the new elements
-- ===========================================================================
SELECT is(pg_temp.step(:'r', 'check', '{"more": true, "images": ["d", "e"]}') -> 'state' -> 'resize', '["A", "B", "C"]'::jsonb,
          'check sees the map''s output in the data, and asks for more (new images)');
SELECT id AS parent2 FROM flowforge.work_item WHERE run_id = :'r' AND checkpoint_id IS NULL AND task_name = 'resize'
                                                 AND status = 'dispatched' \gset
SELECT results_eq(
    format($$SELECT step, node::text, visit, work_item_id FROM flowforge.graph_step WHERE run_id = %L ORDER BY step$$, :'r'),
    format($$SELECT * FROM (VALUES (1::bigint, 'resize', 1, %L::uuid),
                                   (2, 'check', 1, (SELECT id FROM flowforge.work_item WHERE run_id = %L AND task_name = 'check')),
                                   (3, 'resize', 2, %L::uuid)) v$$, :'parent', :'r', :'parent2'),
    'resize is entered again: step 3, visit 2, a new held item');
SELECT results_eq(
    format($$SELECT count(*)::int, min(generation), min(total), min(cursor), min(idx), bool_and(NOT done), min(child_input::text)
             FROM flowforge.checkpoint WHERE run_id = %L$$, :'r'),
    $$VALUES (1, 2, 2::bigint, 2::bigint, 0::bigint, true,
              '{"node": "resize", "state": {"k": 1, "more": true, "resize": ["A", "B", "C"]}, "visit": 2}')$$,
    'the node''s one checkpoint row, generation 2 (the visit), over the two new elements, afresh');
SELECT is((SELECT parent_work_item_id FROM flowforge.checkpoint WHERE run_id = :'r'), :'parent2'::uuid,
          'its parent is the new held item');
SELECT results_eq(
    format($$SELECT p.page, p.elements FROM flowforge.checkpoint_page p JOIN flowforge.checkpoint c ON c.id = p.checkpoint_id
             WHERE c.run_id = %L$$, :'r'),
    $$VALUES (0, '["d", "e"]'::jsonb)$$, 'its pages hold the new elements only');
SELECT is(pg_temp.children(:'r'), '1.0:completed 1.1:completed 1.2:completed 2.0:pending 2.1:pending',
          'the first visit''s children stay as they were; the second visit''s are generation 2');
SELECT results_eq(
    format($$SELECT index, status FROM flowforge.fan_out_output(%L, 'resize')$$, :'r'),
    $$VALUES (0::bigint, 'pending'), (1, 'pending')$$, 'fan_out_output reads the current generation');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', i, to_jsonb(i * 10)) FROM generate_series(0, 1) i$$, :'r'),
                'the second visit''s children complete');
SELECT is((SELECT state -> 'resize' FROM flowforge.graph_run WHERE run_id = :'r'), '[0, 10]'::jsonb,
          'the second output replaces the first under the node''s key');
SELECT is(pg_temp.step(:'r', 'check', '{"more": false}') ->> 'node', 'check', 'check is satisfied');
SELECT results_eq(
    format($$SELECT status::text, reason, steps FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('succeeded', 'reached final node "done"', 5::bigint)$$, 'the run reaches done');
SELECT is(flowforge.get_run(:'r') -> 'fan_outs' -> 'resize' -> 'generation', '2'::jsonb, 'get_run shows the latest generation');

-- ===========================================================================
-- An empty map completes at once and takes the next edge
-- ===========================================================================
SELECT flowforge.start_run('gfo', '{"images": []}') AS re \gset
SELECT results_eq(
    format($$SELECT task::text, steps, state FROM flowforge.graph_run WHERE run_id = %L$$, :'re'),
    $$VALUES ('check', 2::bigint, '{"images": [], "resize": []}'::jsonb)$$,
    'an empty map: in start_run''s transaction the node completes with [] and the run moves to check');
SELECT results_eq(
    format($$SELECT status::text, output FROM flowforge.work_item WHERE run_id = %L AND task_name = 'resize'$$, :'re'),
    $$VALUES ('completed', '[]'::jsonb)$$, 'its held item completed with []; no child was created');
SELECT is(flowforge_test.fanout_state(:'re', 'resize'), '0/0/0 live:0 children:0 succeeded:0 failed:0 done succeeded',
          'its checkpoint is done, total 0');

-- ===========================================================================
-- Cancel mid-map, then retry: the same generation resumes
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.start_run('gfo', '{"images": ["p", "q", "r"]}') AS rc \gset
SELECT id AS rc_parent FROM flowforge.work_item WHERE run_id = :'rc' AND checkpoint_id IS NULL \gset
SELECT flowforge_test.complete_child(:'rc', 'resize', 0, '"P"') AS rc0 \gset
SELECT work_item_id AS rc1, fencing_token AS rc1_tok FROM flowforge_test.claim_child(:'rc', 'resize', 1) \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'enough')$$, :'rc'), 'cancel_run mid-map');
SELECT results_eq(
    format($$SELECT status::text, reason FROM flowforge.graph_run WHERE run_id = %L$$, :'rc'),
    $$VALUES ('cancelled', 'enough')$$, 'the graph run is cancelled');
SELECT is(pg_temp.children(:'rc'), '1.0:completed 1.1:cancelled 1.2:cancelled', 'every live child is cancelled');
SELECT is(flowforge_test.item_status(:'rc_parent'), 'cancelled', 'and the held item');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '"Q"')$$, :'rc1', :'rc1_tok'), 'FF004', NULL,
                 'the dispatched child''s holder is refused (FF004)');
SELECT is(flowforge_test.fanout_state(:'rc', 'resize'), '3/1/3 live:0 children:0 succeeded:1 failed:0 done cancelled',
          'the checkpoint: done, cancelled, its succeeded element kept');
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rc'), 'retry_run of the cancelled run');
SELECT id AS rc_parent2 FROM flowforge.work_item WHERE run_id = :'rc' AND checkpoint_id IS NULL AND status = 'dispatched' \gset
SELECT results_eq(
    format($$SELECT step, node::text, visit, work_item_id FROM flowforge.graph_step WHERE run_id = %L ORDER BY step$$, :'rc'),
    format($$VALUES (1::bigint, 'resize', 1, %L::uuid)$$, :'rc_parent2'),
    'the same step and visit (no step counted), now naming a new held item');
SELECT results_eq(
    format($$SELECT generation, parent_work_item_id, done, idx, succeeded FROM flowforge.checkpoint WHERE run_id = %L$$, :'rc'),
    format($$VALUES (1, %L::uuid, false, 1::bigint, 1::bigint)$$, :'rc_parent2'),
    'the same generation resumes under the new held item, element 0 kept');
SELECT is(pg_temp.children(:'rc'), '1.0:completed 1.1:cancelled 1.1:pending 1.2:cancelled 1.2:pending',
          'only the elements that did not succeed run again');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', i, to_jsonb(chr(80 + i))) FROM generate_series(1, 2) i$$, :'rc'),
                'they complete');
SELECT results_eq(
    format($$SELECT task::text, state -> 'resize' FROM flowforge.graph_run WHERE run_id = %L$$, :'rc'),
    $$VALUES ('check', '["P", "Q", "R"]'::jsonb)$$,
    'the output keeps element 0''s from before the cancel; the run moves on to check');
SELECT is((SELECT completed_at FROM flowforge.work_item WHERE id = :'rc0'), '2030-01-02 00:00:00+00'::timestamptz,
          'element 0''s child was never run again');

-- Failure in the second visit, then retry: generation 2 resumes, not 1.
SELECT is(pg_temp.step(:'rc', 'check', '{"more": true, "images": ["x", "y", "z"]}') ->> 'visit', '1', 'check sends it round again');
SELECT flowforge_test.complete_child(:'rc', 'resize', 0, '"X"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rc', 'resize', 1, 'bad y') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT status::text, reason, error FROM flowforge.graph_run WHERE run_id = %L$$, :'rc'),
    $$VALUES ('failed', 'node "resize" failed after 1 attempt(s)', 'element 1 failed after 1 attempt(s): bad y')$$,
    'a child failing for good fails the held item and so the run, with the fan-out''s error');
SELECT is(pg_temp.children(:'rc'),
          '1.0:completed 1.1:cancelled 1.1:completed 1.2:cancelled 1.2:completed 2.0:completed 2.1:failed 2.2:cancelled',
          'generation 2: one completed, one failed, one cancelled');
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rc'), 'retry_run of the failed run');
SELECT results_eq(
    format($$SELECT generation, total, succeeded, idx, done FROM flowforge.checkpoint WHERE run_id = %L$$, :'rc'),
    $$VALUES (2, 3::bigint, 1::bigint, 1::bigint, false)$$, 'the retry resumes generation 2 (visit 2), its success kept');
SELECT is(pg_temp.children(:'rc'),
          '1.0:completed 1.1:cancelled 1.1:completed 1.2:cancelled 1.2:completed 2.0:completed 2.1:failed 2.1:pending 2.2:cancelled 2.2:pending',
          'only generation 2''s unsucceeded elements run again');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', i, to_jsonb(chr(88 + i))) FROM generate_series(1, 2) i$$, :'rc'),
                'they complete');
SELECT results_eq(
    format($$SELECT status::text, task::text, state -> 'resize' FROM flowforge.graph_run WHERE run_id = %L$$, :'rc'),
    $$VALUES ('running', 'check', '["X", "Y", "Z"]'::jsonb)$$, 'the run goes on to check with the whole output');

-- ===========================================================================
-- An "over" that yields no array fails the run
-- ===========================================================================
SELECT flowforge.start_run('gfo', '{"images": "one.png"}') AS rw \gset
SELECT results_eq(
    format($$SELECT status::text, reason, error FROM flowforge.graph_run WHERE run_id = %L$$, :'rw'),
    $$VALUES ('failed', 'node "resize" failed after 1 attempt(s)',
              'map over $."state"."images": the input yields a string, not an array')$$,
    'a string where the map wants an array: the run fails in start_run, the error says why');
SELECT results_eq(
    format($$SELECT status::text, error, lease_expires_at FROM flowforge.work_item WHERE run_id = %L$$, :'rw'),
    $$VALUES ('failed', 'map over $."state"."images": the input yields a string, not an array', NULL::timestamptz)$$,
    'the held item failed for good with the error; no child');
SELECT is((SELECT detail FROM flowforge.run_events(:'rw') WHERE kind = 'failed' AND work_item_id IS NOT NULL),
          '{"error": "map over $.\"state\".\"images\": the input yields a string, not an array", "retryable": false}',
          'event failed, retryable false');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint WHERE run_id = :'rw'), 0, 'no checkpoint was written');
SELECT flowforge.start_run('gfo', '{"pictures": ["a"]}') AS rw2 \gset
SELECT is((SELECT error FROM flowforge.graph_run WHERE run_id = :'rw2'),
          'map over $."state"."images": the input yields nothing, not an array', 'no such member: the input yields nothing');
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rw2'), 'retry_run of it is allowed (a node failure) ...');
SELECT is((SELECT status::text FROM flowforge.graph_run WHERE run_id = :'rw2'), 'failed',
          '... and fails the same way (the data did not change)');

-- ===========================================================================
-- The held item refuses the worker protocol (see dag_map.sql, O): its
-- fencing token shows in get_run's items; when the protocol checked only the
-- token, heartbeat_work made it reapable and complete_work took the next edge
-- while its children ran.
-- ===========================================================================
SELECT flowforge.start_run('gfo', '{"images": ["s", "t", "u"]}') AS rt \gset
SELECT id AS rt_parent, fencing_token AS rt_tok FROM flowforge.work_item WHERE run_id = :'rt' AND checkpoint_id IS NULL \gset
SELECT is((SELECT (i ->> 'fencing_token')::bigint FROM jsonb_array_elements(flowforge.get_run(:'rt') -> 'items') i
           WHERE i ->> 'id' = :'rt_parent'), :'rt_tok'::bigint, 'get_run shows the held item''s fencing token');
SELECT flowforge_test.advance_clock('365 days') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 0, 'a year later tick() reaps nothing: the held item''s lease never expires');
SELECT results_eq(
    format($$SELECT status::text, lease_expires_at, fencing_token FROM flowforge.work_item WHERE id = %L$$, :'rt_parent'),
    format($$VALUES ('dispatched', 'infinity'::timestamptz, %s::bigint)$$, :'rt_tok'),
    'the held item is untouched: dispatched, its lease infinite, its token');
SELECT throws_ok(format('SELECT flowforge.heartbeat_work(%L, %s)', :'rt_parent', :'rt_tok'), 'FF004', NULL,
                 'heartbeat_work of the held item is refused (FF004)');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '"forged"')$$, :'rt_parent', :'rt_tok'), 'FF004', NULL,
                 'complete_work of the held item is refused (FF004)');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, %s, 'forged')$$, :'rt_parent', :'rt_tok'), 'FF004', NULL,
                 'fail_work of the held item is refused (FF004)');

SELECT * FROM finish();
ROLLBACK;
