-- Fan-out of a DAG task (issue 15), driven through the API: start_run,
-- claim_work / complete_work / fail_work for the children, tick(),
-- cancel_run, retry_run, get_run and fan_out_output.
--
--   A  map: the task is held by the engine, its checkpoint, pages and children
--      (payload {"item", "index", "input"}), completed out of order, the output
--      in element order, handed to the dependent (deps.<key>)
--   B  the concurrency bound, checked after every step
--   C  foreach: the counts
--   D  on_item_failure fail: the first child to exhaust its attempts fails the
--      node, the others are cancelled (their holders refused), dependents skipped
--   E  on_item_failure continue: failed slots null, failed_indexes in get_run
--   F  tolerated_failures as a count and as a percentage
--   G  an empty array completes the node at once
--   H  an "over" that yields no array fails the task for good (retryable false)
--   I  more elements than setting.max_fanout_items: failed, nothing half-created
--   J  the reaper never takes the held task; an expired child lease is retried
--   K  cancel mid-map, then retry_run after the cancel
--   L  retry_run after a failure resumes: succeeded children untouched
--   M  fan_out_output: pages, statuses, refusals
--   N  a map output over max_payload_bytes is passed by reference
--   O  (TODO) the held task refuses the worker protocol
BEGIN;
SELECT plan(170);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- The task run of task p_key in run p_run.
CREATE FUNCTION pg_temp.tr(p_run uuid, p_key text) RETURNS uuid LANGUAGE sql AS $$
    SELECT id FROM flowforge.task_run WHERE workflow_run_id = p_run AND task_key = p_key
$$;
-- Every child of a run, one line per work item in element order (then creation):
-- "index:status:attempt".
CREATE FUNCTION pg_temp.children(p_run uuid) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(format('%s:%s:%s', w.item_index, w.status, w.retry_count + 1), ' '
                      ORDER BY w.item_index, w.created_at, w.id)
    FROM flowforge.work_item w WHERE w.run_id = p_run AND w.checkpoint_id IS NOT NULL
$$;

-- ===========================================================================
-- A  map: held task, checkpoint, children, out-of-order completion, output in order
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_a", "tasks": [
    {"key": "resize", "queue": "fo_a", "max_attempts": 2, "timeout": "1 minute",
     "map": {"over": "$.run.batch.images", "max_concurrency": 5}},
    {"key": "report", "queue": "fo_a", "depends_on": ["resize"]}]}$$) AS wa \gset
SELECT flowforge.start_run('fo_a', '{"batch": {"images": ["i0", "i1", "i2", "i3", "i4"], "size": 5}, "tag": "t"}') AS ra \gset
SELECT pg_temp.tr(:'ra', 'resize') AS ra_resize \gset

SELECT results_eq(
    format($$SELECT state::text, lease_owner::text, lease_expires_at, fencing_token::bigint, attempt::int, started_at, output, fans_out
             FROM flowforge.task_run WHERE id = %L$$, :'ra_resize'),
    $$VALUES ('running', 'flowforge:fan-out', 'infinity'::timestamptz, 1::bigint, 1, '2030-01-01 00:00:00+00'::timestamptz,
              NULL::jsonb, true)$$,
    'A: the ready map task is held by the engine at once: running, holder flowforge:fan-out, a lease that never '
    'expires, a fencing token no worker was given');
SELECT is(flowforge_test.task_state(:'ra', 'report'), 'pending', 'A: its dependent waits');
SELECT is_empty(format($$SELECT * FROM flowforge.claim(ARRAY['fo_a'], 'dag-worker', '30 seconds', 10)$$),
                'A: claim() hands out nothing: the map task is never ready for a DAG worker');
SELECT results_eq(
    format($$SELECT c.engine_kind::text, c.iterator_type::text, c.generation, c.cursor, c.idx, c.total, c.succeeded, c.failed,
                    c.live, c.max_concurrency, c.tolerated_failures, c.done, c.outcome::text, c.child_input,
                    c.output_by_reference, c.error, c.parent_task_run_id = %L, c.parent_work_item_id,
                    c.task_id = (SELECT task_id FROM flowforge.task_run WHERE id = %L), c.definition_id = %L,
                    c.created_at, c.created_by
             FROM flowforge.checkpoint c WHERE c.run_id = %L AND c.node_name = 'resize'$$,
           :'ra_resize', :'ra_resize', :'wa', :'ra'),
    $$VALUES ('dag', 'map', 1, 5::bigint, 0::bigint, 5::bigint, 0::bigint, 0::bigint, 5, 5, 0::bigint, false,
              NULL::text, '{"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}'::jsonb, false, NULL::text, true,
              NULL::uuid, true, true, '2030-01-01 00:00:00+00'::timestamptz, 'postgres')$$,
    'A: one checkpoint row: generation 1, all 5 elements dispatched (cursor 5, live 5), none settled, the task run '
    'its parent, the child input without the array it iterates');
SELECT results_eq(
    format($$SELECT p.page, p.elements FROM flowforge.checkpoint_page p JOIN flowforge.checkpoint c ON c.id = p.checkpoint_id
             WHERE c.run_id = %L ORDER BY p.page$$, :'ra'),
    $$VALUES (0, '["i0", "i1", "i2", "i3", "i4"]'::jsonb)$$,
    'A: the elements, evaluated once, in one page');
SELECT results_eq(
    format($$SELECT w.item_index, w.checkpoint_generation, w.engine_kind::text, w.task_name::text, w.queue::text,
                    w.status::text, w.max_retries, w.timeout, w.payload, w.parent_work_item_id,
                    w.task_id = (SELECT task_id FROM flowforge.task_run WHERE id = %L)
             FROM flowforge.work_item w WHERE w.run_id = %L ORDER BY w.item_index$$, :'ra_resize', :'ra'),
    $$VALUES
        (0, 1, 'dag', 'resize', 'fo_a', 'pending', 1, interval '1 minute',
         '{"item": "i0", "index": 0, "input": {"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}}'::jsonb, NULL::uuid, true),
        (1, 1, 'dag', 'resize', 'fo_a', 'pending', 1, interval '1 minute',
         '{"item": "i1", "index": 1, "input": {"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}}', NULL, true),
        (2, 1, 'dag', 'resize', 'fo_a', 'pending', 1, interval '1 minute',
         '{"item": "i2", "index": 2, "input": {"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}}', NULL, true),
        (3, 1, 'dag', 'resize', 'fo_a', 'pending', 1, interval '1 minute',
         '{"item": "i3", "index": 3, "input": {"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}}', NULL, true),
        (4, 1, 'dag', 'resize', 'fo_a', 'pending', 1, interval '1 minute',
         '{"item": "i4", "index": 4, "input": {"run": {"batch": {"size": 5}, "tag": "t"}, "deps": {}}}', NULL, true)$$,
    'A: one pending work item per element: named for the node, its queue, attempts and timeout, payload {"item", '
    '"index", "input"} where input is the node''s input without the iterated array');
SELECT results_eq(
    format($$SELECT e.kind::text, e.task_key::text, e.from_state::text, e.to_state::text, e.fencing_token, e.detail,
                    e.task_run_id IS NOT DISTINCT FROM %L::uuid, e.work_item_id IS NOT NULL
             FROM flowforge.run_events(%L) e WHERE e.kind IN ('fanned_out', 'created') AND e.task_key ~ '^resize(\[\d+\])?$'
             ORDER BY e.seq$$, :'ra_resize', :'ra'),
    $$VALUES ('created', 'resize', NULL, 'ready', 0::bigint, NULL::jsonb, true, false),
             ('fanned_out', 'resize', 'ready', 'running', 1, '{"holder": "flowforge:fan-out"}', true, false),
             ('created', 'resize[0]', NULL, 'pending', 0, '{"index": 0}', false, true),
             ('created', 'resize[1]', NULL, 'pending', 0, '{"index": 1}', false, true),
             ('created', 'resize[2]', NULL, 'pending', 0, '{"index": 2}', false, true),
             ('created', 'resize[3]', NULL, 'pending', 0, '{"index": 3}', false, true),
             ('created', 'resize[4]', NULL, 'pending', 0, '{"index": 4}', false, true)$$,
    'A: events: the task run fanned_out (ready -> running, its holder), then created per child named with its element');
SELECT ok(flowforge_test.within_bound(:'ra', 'resize'), 'A: within the bound at the start');

-- Complete out of order: 3, 0, 4, 1, then 2.
SELECT results_eq(
    format($$SELECT attempt, payload ->> 'item' FROM flowforge_test.claim_child(%L, 'resize', 3)$$, :'ra'),
    $$VALUES (1, 'i3')$$, 'A: a worker claims element 3''s child (attempt 1) through claim_work');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', 3, '{"thumb": "i3.png"}')$$, :'ra'),
                'A: element 3 completes first');
SELECT is(flowforge_test.fanout_state(:'ra', 'resize'), '5/1/5 live:4 children:4 succeeded:1 failed:0 open',
          'A: one settled, four live, nothing more to dispatch');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.complete_child(:'ra', 'resize', 0, '{"thumb": "i0.png"}') IS NOT NULL AS ok0 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.complete_child(:'ra', 'resize', 4, '{"thumb": "i4.png"}') IS NOT NULL AS ok4 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.complete_child(:'ra', 'resize', 1, '{"thumb": "i1.png"}') IS NOT NULL AS ok1 \gset
SELECT is(flowforge_test.fanout_state(:'ra', 'resize'), '5/4/5 live:1 children:1 succeeded:4 failed:0 open',
          'A: after 3, 0, 4 and 1: four settled, one live');
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE id = %L$$, :'ra_resize'),
    $$VALUES ('running', NULL::jsonb)$$, 'A: the map task runs on while an element is left');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'resize', 2, '{"thumb": "i2.png"}')$$, :'ra'),
                'A: the last element (2) completes');
SELECT results_eq(
    format($$SELECT state::text, output, error, finished_at, lease_expires_at FROM flowforge.task_run WHERE id = %L$$,
           :'ra_resize'),
    $$VALUES ('succeeded', '[{"thumb": "i0.png"}, {"thumb": "i1.png"}, {"thumb": "i2.png"}, {"thumb": "i3.png"}, {"thumb": "i4.png"}]'::jsonb,
              NULL::text, '2030-01-01 00:00:05+00'::timestamptz, NULL::timestamptz)$$,
    'A: the map task succeeds in the last child''s transaction, its output the children''s outputs in element order');
SELECT is(flowforge_test.fanout_state(:'ra', 'resize'), '5/5/5 live:0 children:0 succeeded:5 failed:0 done succeeded',
          'A: the checkpoint is done, succeeded');
SELECT results_eq(
    format($$SELECT kind::text, from_state::text, to_state::text, fencing_token, detail FROM flowforge.run_events(%L)
             WHERE task_run_id = %L ORDER BY seq DESC LIMIT 1$$, :'ra', :'ra_resize'),
    $$VALUES ('completed', 'running', 'succeeded', 1::bigint, '{"fan_out": {"count": 5, "failed": 0, "succeeded": 5}}'::jsonb)$$,
    'A: event completed running -> succeeded under the holder''s token, with the fan-out''s counts');
SELECT is(flowforge_test.task_state(:'ra', 'report'), 'ready', 'A: the dependent is released');
SELECT task_run_id AS ra_report, fencing_token AS ra_report_tok, input AS ra_report_input
FROM flowforge.claim(ARRAY['fo_a'], 'dag-worker', '30 seconds', 10) \gset
SELECT is(:'ra_report_input'::jsonb,
          '{"run": {"batch": {"images": ["i0", "i1", "i2", "i3", "i4"], "size": 5}, "tag": "t"},
            "deps": {"resize": [{"thumb": "i0.png"}, {"thumb": "i1.png"}, {"thumb": "i2.png"}, {"thumb": "i3.png"}, {"thumb": "i4.png"}]}}'::jsonb,
          'A: the dependent''s input carries the map''s output under deps.resize (and the whole run input)');
SELECT lives_ok(format($$SELECT flowforge.complete(%L, %s, '{"ok": true}')$$, :'ra_report', :'ra_report_tok'),
                'A: the dependent completes');
SELECT is(flowforge_test.run_state(:'ra'), 'succeeded', 'A: the run succeeded');

-- A path that is not a plain member path: each child carries the whole input.
SELECT flowforge.define_workflow($${"name": "fo_a2", "tasks": [
    {"key": "each", "queue": "fo_a2", "map": {"over": "$.run.sets[1]"}}]}$$) \gset
SELECT flowforge.start_run('fo_a2', '{"sets": [["x"], ["y", "z"]]}') AS ra2 \gset
SELECT results_eq(
    format($$SELECT item_index, payload FROM flowforge.work_item WHERE run_id = %L ORDER BY item_index$$, :'ra2'),
    $$VALUES (0, '{"item": "y", "index": 0, "input": {"run": {"sets": [["x"], ["y", "z"]]}, "deps": {}}}'::jsonb),
             (1, '{"item": "z", "index": 1, "input": {"run": {"sets": [["x"], ["y", "z"]]}, "deps": {}}}')$$,
    'A: over a path with an index ($.run.sets[1]): each child''s input is the node''s whole input');

-- ===========================================================================
-- B  the concurrency bound: live <= max_concurrency, and the checkpoint's live
--    count is the number of children pending or dispatched — after every step
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_b", "tasks": [
    {"key": "m", "queue": "fo_b", "max_attempts": 3, "backoff": "1 second",
     "map": {"over": "$.run.n", "max_concurrency": 3}}]}$$) \gset
SELECT flowforge.start_run('fo_b', '{"n": [0, 1, 2, 3, 4, 5, 6]}') AS rb \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '3/0/7 live:3 children:3 succeeded:0 failed:0 open',
          'B step 0 (start): the first max_concurrency = 3 children, never 7');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 0: live <= 3 and live = children pending or dispatched');
SELECT is(pg_temp.children(:'rb'), '0:pending:1 1:pending:1 2:pending:1', 'B step 0: children of elements 0, 1, 2');
SELECT flowforge_test.complete_child(:'rb', 'm', 0, '"o0"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '4/1/7 live:3 children:3 succeeded:1 failed:0 open',
          'B step 1 (0 completed): the next element (3) dispatched in the same transaction');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 1: within the bound');
SELECT flowforge_test.claim_child(:'rb', 'm', 2) IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '4/1/7 live:3 children:3 succeeded:1 failed:0 open',
          'B step 2 (2 claimed): a claim changes no count');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 2: within the bound');
SELECT flowforge_test.fail_child(:'rb', 'm', 1, 'flaky', true) IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '4/1/7 live:3 children:3 succeeded:1 failed:0 open',
          'B step 3 (1 failed, retries left): the child is pending again and still live; nothing new is dispatched');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 3: within the bound');
SELECT is(pg_temp.children(:'rb'), '0:completed:1 1:pending:2 2:dispatched:1 3:pending:1',
          'B step 3: element 1''s child waits for its second attempt');
SELECT is((SELECT t -> 'fan_out' FROM jsonb_array_elements(flowforge.get_run(:'rb') -> 'tasks') t WHERE t ->> 'key' = 'm'),
          '{"mode": "map", "idx": 1, "total": 7, "succeeded": 1, "failed": 0, "live": 3, "cursor": 4, "max_concurrency": 3,
            "tolerated_failures": 0, "done": false, "outcome": null, "generation": 1, "error": null,
            "output_by_reference": false, "failed_indexes": []}'::jsonb,
          'B step 3: get_run shows the task''s fan_out progress (idx/total, counts, cursor, bound, done)');
SELECT flowforge_test.complete_child(:'rb', 'm', 2, '"o2"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '5/2/7 live:3 children:3 succeeded:2 failed:0 open',
          'B step 4 (2 completed): element 4 dispatched');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 4: within the bound');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.complete_child(:'rb', 'm', 1, '"o1"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '6/3/7 live:3 children:3 succeeded:3 failed:0 open',
          'B step 5 (1 completed on its second attempt): element 5 dispatched');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 5: within the bound');
SELECT flowforge_test.complete_child(:'rb', 'm', 4, '"o4"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '7/4/7 live:3 children:3 succeeded:4 failed:0 open',
          'B step 6 (4 completed): the last element (6) dispatched');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 6: within the bound');
SELECT flowforge_test.complete_child(:'rb', 'm', 3, '"o3"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '7/5/7 live:2 children:2 succeeded:5 failed:0 open',
          'B step 7 (3 completed): nothing left to dispatch, two live');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 7: within the bound');
SELECT flowforge_test.complete_child(:'rb', 'm', 6, '"o6"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '7/6/7 live:1 children:1 succeeded:6 failed:0 open',
          'B step 8 (6 completed): one live');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 8: within the bound');
SELECT flowforge_test.complete_child(:'rb', 'm', 5, '"o5"') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rb', 'm'), '7/7/7 live:0 children:0 succeeded:7 failed:0 done succeeded',
          'B step 9 (5 completed): done');
SELECT ok(flowforge_test.within_bound(:'rb', 'm'), 'B step 9: within the bound');
SELECT is(pg_temp.children(:'rb'),
          '0:completed:1 1:completed:2 2:completed:1 3:completed:1 4:completed:1 5:completed:1 6:completed:1',
          'B: one work item per element, each completed (element 1 on its second attempt)');
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'rb'),
    $$VALUES ('succeeded', '["o0", "o1", "o2", "o3", "o4", "o5", "o6"]'::jsonb)$$,
    'B: the map task succeeded with the outputs in element order');
SELECT is(flowforge_test.run_state(:'rb'), 'succeeded', 'B: and its run with it');

-- ===========================================================================
-- C  foreach: the node's output is the counts
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_c", "tasks": [
    {"key": "notify", "queue": "fo_c", "max_attempts": 1,
     "map": {"over": "$.run.users", "mode": "foreach", "on_item_failure": "continue"}}]}$$) \gset
SELECT flowforge.start_run('fo_c', '{"users": ["ann", "bob", "cyd"]}') AS rc \gset
SELECT flowforge_test.complete_child(:'rc', 'notify', 0, '{"sent": true}') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rc', 'notify', 1, 'no address') IS NOT NULL AS x \gset
SELECT flowforge_test.complete_child(:'rc', 'notify', 2, '{"sent": true}') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'rc'),
    $$VALUES ('succeeded', '{"count": 3, "failed": 1, "succeeded": 2}'::jsonb)$$,
    'C: foreach completes with {"count", "succeeded", "failed"}, not the children''s outputs');
SELECT results_eq(
    format($$SELECT iterator_type::text, succeeded, failed, outcome::text FROM flowforge.checkpoint WHERE run_id = %L$$, :'rc'),
    $$VALUES ('foreach', 2::bigint, 1::bigint, 'succeeded')$$, 'C: the checkpoint is a foreach one, with its counts');

-- ===========================================================================
-- D  on_item_failure fail: the first child that exhausts its attempts fails the node
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-03 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_d", "tasks": [
    {"key": "m", "queue": "fo_d", "max_attempts": 2, "backoff": "1 second",
     "map": {"over": "$.run.n", "max_concurrency": 3}},
    {"key": "after", "queue": "fo_d", "depends_on": ["m"]},
    {"key": "last", "queue": "fo_d", "depends_on": ["after"]}]}$$) \gset
SELECT flowforge.start_run('fo_d', '{"n": [0, 1, 2, 3, 4]}') AS rd \gset
SELECT flowforge_test.complete_child(:'rd', 'm', 0, '"o0"') IS NOT NULL AS x \gset
SELECT work_item_id AS d2, fencing_token AS d2_tok FROM flowforge_test.claim_child(:'rd', 'm', 2, 'holder-2') \gset
SELECT flowforge_test.fail_child(:'rd', 'm', 1, 'first try', true) AS d1 \gset
SELECT is(flowforge_test.fanout_state(:'rd', 'm'), '4/1/5 live:3 children:3 succeeded:1 failed:0 open',
          'D: a failure with attempts left fails nothing yet');
SELECT is(flowforge_test.task_state(:'rd', 'm'), 'running', 'D: the map task still runs');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge_test.fail_child(%L, 'm', 1, 'second try', true)$$, :'rd'),
                'D: element 1''s child fails its last attempt (retryable, but none left)');
SELECT results_eq(
    format($$SELECT state::text, error, output, finished_at, lease_expires_at FROM flowforge.task_run WHERE workflow_run_id = %L
             AND task_key = 'm'$$, :'rd'),
    $$VALUES ('failed', 'element 1 failed after 2 attempt(s): second try', NULL::jsonb,
              '2030-01-03 00:00:01+00'::timestamptz, NULL::timestamptz)$$,
    'D: the map task failed for good, its error naming the element, the attempts and the child''s error');
SELECT is(pg_temp.children(:'rd'), '0:completed:1 1:failed:2 2:cancelled:1 3:cancelled:1',
          'D: the live children (2 dispatched, 3 pending) are cancelled; the completed one stays; 4 was never created');
SELECT is(flowforge_test.fanout_state(:'rd', 'm'), '4/2/5 live:0 children:0 succeeded:1 failed:1 done failed',
          'D: the checkpoint is done, failed, nothing live');
SELECT is((SELECT error FROM flowforge.checkpoint WHERE run_id = :'rd'), 'element 1 failed after 2 attempt(s): second try',
          'D: the checkpoint records the error');
SELECT is((SELECT fencing_token FROM flowforge.work_item WHERE id = :'d2'), :'d2_tok'::bigint + 1,
          'D: the dispatched child''s fencing token moved on');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '"late"')$$, :'d2', :'d2_tok'), 'FF004', NULL,
                 'D: the cancelled child''s holder: complete_work refused (FF004)');
SELECT throws_ok(format($$SELECT flowforge.heartbeat_work(%L, %s)$$, :'d2', :'d2_tok'), 'FF004', NULL,
                 'D: its heartbeat_work refused (FF004)');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, %s, 'late')$$, :'d2', :'d2_tok'), 'FF004', NULL,
                 'D: its fail_work refused (FF004)');
SELECT results_eq(
    format($$SELECT task_key::text, state::text FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'rd'),
    $$VALUES ('after', 'skipped'), ('last', 'skipped'), ('m', 'failed')$$,
    'D: its dependents, direct and transitive, are skipped');
SELECT results_eq(
    format($$SELECT state::text, tasks_failed, tasks_remaining FROM flowforge.workflow_run WHERE id = %L$$, :'rd'),
    $$VALUES ('failed', 1, 0)$$, 'D: the run failed');
SELECT results_eq(
    format($$SELECT kind::text, work_item_id IS NOT NULL, to_state::text, detail - 'upstream_task_id'
             FROM flowforge.run_events(%L) WHERE seq > (SELECT max(seq) FROM flowforge.run_events(%L) e
                                                          WHERE e.kind = 'retry_scheduled')
             ORDER BY seq$$, :'rd', :'rd'),
    $$VALUES ('claimed', true, 'dispatched', '{"agent": "fan-agent"}'::jsonb),
             ('failed', true, 'failed', '{"error": "second try", "retryable": true}'),
             ('cancelled', true, 'cancelled', NULL), ('cancelled', true, 'cancelled', NULL),
             ('failed', false, 'failed',
              '{"error": "element 1 failed after 2 attempt(s): second try", "fan_out": {"count": 5, "failed": 1, "succeeded": 1}}'),
             ('skipped', false, 'skipped', '{"upstream_task": "m"}'), ('skipped', false, 'skipped', '{"upstream_task": "m"}'),
             ('run_failed', false, 'failed', '{"tasks_failed": 1}')$$,
    'D: events in order: the last attempt failed, the two live children cancelled, the task failed with the '
    'fan-out''s counts, the dependents skipped, the run failed');
SELECT set_eq(
    format($$SELECT w.item_index, e.from_state::text, e.fencing_token FROM flowforge.run_events(%L) e
             JOIN flowforge.work_item w ON w.id = e.work_item_id WHERE e.kind = 'cancelled'$$, :'rd'),
    format($$VALUES (2, 'dispatched', %s::bigint), (3, 'pending', 0)$$, :'d2_tok'::bigint + 1),
    'D: one cancelled event per live child, from its status, under its new token');
SELECT is((flowforge.get_run(:'rd') -> 'tasks') -> 2 -> 'fan_out' -> 'failed_indexes', '[1]'::jsonb,
          'D: get_run''s fan_out lists the failed element');

-- ===========================================================================
-- E  on_item_failure continue: the node completes, failed slots hold null
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_e", "tasks": [
    {"key": "m", "queue": "fo_e", "max_attempts": 1, "map": {"over": "$.run.n", "max_concurrency": 2, "on_item_failure": "continue"}},
    {"key": "after", "queue": "fo_e", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.start_run('fo_e', '{"n": [10, 11, 12, 13]}') AS re \gset
SELECT flowforge_test.fail_child(:'re', 'm', 0, 'bad 10') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'re', 'm'), '3/1/4 live:2 children:2 succeeded:0 failed:1 open',
          'E: a failure for good counts as settled and the next element is dispatched');
SELECT flowforge_test.complete_child(:'re', 'm', 1, '"r11"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'re', 'm', 2, 'bad 12') IS NOT NULL AS x \gset
SELECT flowforge_test.complete_child(:'re', 'm', 3, '"r13"') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT state::text, output, error FROM flowforge.task_run WHERE workflow_run_id = %L AND task_key = 'm'$$, :'re'),
    $$VALUES ('succeeded', '[null, "r11", null, "r13"]'::jsonb, NULL::text)$$,
    'E: continue: the node succeeds, the failed elements'' slots hold null');
SELECT is(flowforge_test.fanout_state(:'re', 'm'), '4/4/4 live:0 children:0 succeeded:2 failed:2 done succeeded',
          'E: the checkpoint counts two failures and is done, succeeded');
SELECT results_eq(
    format($$SELECT t -> 'fan_out' -> 'failed_indexes', t -> 'fan_out' -> 'failed', t -> 'fan_out' -> 'outcome',
                    t -> 'fan_out' -> 'tolerated_failures'
             FROM jsonb_array_elements(flowforge.get_run(%L) -> 'tasks') t WHERE t ->> 'key' = 'm'$$, :'re'),
    $$VALUES ('[0, 2]'::jsonb, '2'::jsonb, '"succeeded"'::jsonb, 'null'::jsonb)$$,
    'E: get_run''s fan_out lists the failed indexes; continue tolerates any number (tolerated_failures null)');
SELECT is(flowforge_test.task_state(:'re', 'after'), 'ready', 'E: the dependent is released');
SELECT is((SELECT detail FROM flowforge.run_events(:'re') WHERE kind = 'completed' AND task_key = 'm' AND task_run_id IS NOT NULL),
          '{"fan_out": {"count": 4, "failed": 2, "succeeded": 2}}', 'E: the completed event counts the failures');

-- ===========================================================================
-- F  tolerated_failures: a count, then a percentage of the elements
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_f1", "tasks": [
    {"key": "m", "queue": "fo_f", "max_attempts": 1, "map": {"over": "$.run.n", "tolerated_failures": 1}}]}$$) \gset
SELECT flowforge.start_run('fo_f1', '{"n": [0, 1, 2, 3]}') AS rf1 \gset
SELECT is((SELECT tolerated_failures FROM flowforge.checkpoint WHERE run_id = :'rf1'), 1::bigint,
          'F: a count is tolerated as it is');
SELECT flowforge_test.fail_child(:'rf1', 'm', 2, 'first') IS NOT NULL AS x \gset
SELECT is(flowforge_test.fanout_state(:'rf1', 'm'), '4/1/4 live:3 children:3 succeeded:0 failed:1 open',
          'F: one failure of one tolerated: the fan-out goes on');
SELECT flowforge_test.complete_child(:'rf1', 'm', 0, '"a"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rf1', 'm', 3, 'second') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT state::text, error FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'rf1'),
    $$VALUES ('failed', 'element 3 failed after 1 attempt(s) (failures: 2, tolerated: 1): second')$$,
    'F: the second failure is one more than tolerated: the node fails, the message says so');
SELECT is(pg_temp.children(:'rf1'), '0:completed:1 1:cancelled:1 2:failed:1 3:failed:1',
          'F: the remaining child is cancelled');

SELECT flowforge.define_workflow($${"name": "fo_f2", "tasks": [
    {"key": "m", "queue": "fo_f", "max_attempts": 1, "map": {"over": "$.run.n", "tolerated_failures": "25%", "max_concurrency": 8}}]}$$) \gset
SELECT flowforge.start_run('fo_f2', '{"n": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}') AS rf2 \gset
SELECT is((SELECT tolerated_failures FROM flowforge.checkpoint WHERE run_id = :'rf2'), 2::bigint,
          'F: "25%" of 10 elements tolerates floor(2.5) = 2 failures');
SELECT flowforge_test.fail_child(:'rf2', 'm', 1, 'x') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rf2', 'm', 5, 'y') IS NOT NULL AS x \gset
SELECT is(flowforge_test.task_state(:'rf2', 'm'), 'running', 'F: two failures of two tolerated: still running');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'm', i, to_jsonb(i)) FROM generate_series(0, 9) i
                         WHERE i NOT IN (1, 5)$$, :'rf2'),
                'F: the other eight complete');
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'rf2'),
    $$VALUES ('succeeded', '[0, null, 2, 3, 4, null, 6, 7, 8, 9]'::jsonb)$$,
    'F: within the tolerance the node succeeds, the failed slots null');
SELECT flowforge.start_run('fo_f2', '{"n": [0, 1, 2]}') AS rf3 \gset
SELECT is((SELECT tolerated_failures FROM flowforge.checkpoint WHERE run_id = :'rf3'), 0::bigint,
          'F: "25%" of 3 elements tolerates floor(0.75) = 0');
SELECT flowforge_test.fail_child(:'rf3', 'm', 0, 'z') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT state::text, error FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'rf3'),
    $$VALUES ('failed', 'element 0 failed after 1 attempt(s): z')$$,
    'F: so the first failure fails the node (no tolerance part in the message when none is tolerated)');

-- ===========================================================================
-- G  an empty array completes the node at once
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_g", "tasks": [
    {"key": "m", "queue": "fo_g", "map": {"over": "$.run.n"}},
    {"key": "each", "queue": "fo_g", "map": {"over": "$.run.n", "mode": "foreach"}},
    {"key": "inner", "queue": "fo_g", "depends_on": ["m"], "map": {"over": "$.deps.m"}},
    {"key": "after", "queue": "fo_g", "depends_on": ["inner", "each"]}]}$$) \gset
SELECT flowforge.start_run('fo_g', '{"n": []}') AS rg \gset
SELECT results_eq(
    format($$SELECT task_key::text, state::text, output, lease_expires_at FROM flowforge.task_run WHERE workflow_run_id = %L
             ORDER BY task_key$$, :'rg'),
    $$VALUES ('after', 'ready', NULL::jsonb, NULL::timestamptz),
             ('each', 'succeeded', '{"count": 0, "failed": 0, "succeeded": 0}', NULL),
             ('inner', 'succeeded', '[]', NULL),
             ('m', 'succeeded', '[]', NULL)$$,
    'G: in start_run''s transaction an empty map succeeds with [], an empty foreach with zero counts, and the map '
    'that fans out over the first''s [] succeeds too; their dependent is ready');
SELECT results_eq(
    format($$SELECT node_name::text, total, cursor, idx, live, done, outcome::text FROM flowforge.checkpoint WHERE run_id = %L
             ORDER BY node_name$$, :'rg'),
    $$VALUES ('each', 0::bigint, 0::bigint, 0::bigint, 0, true, 'succeeded'),
             ('inner', 0, 0, 0, 0, true, 'succeeded'), ('m', 0, 0, 0, 0, true, 'succeeded')$$,
    'G: each empty fan-out has a done checkpoint of total 0');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint_page p JOIN flowforge.checkpoint c ON c.id = p.checkpoint_id
           WHERE c.run_id = :'rg'), 0, 'G: no element page');
SELECT is((SELECT count(*)::int FROM flowforge.work_item WHERE run_id = :'rg'), 0, 'G: no child');
SELECT is((SELECT string_agg(kind || ' ' || task_key, ', ' ORDER BY seq) FROM flowforge.run_events(:'rg')
           WHERE kind IN ('fanned_out', 'completed', 'released')),
          'fanned_out each, completed each, fanned_out m, completed m, released inner, fanned_out inner, completed inner, released after',
          'G: each fanned out and completed at once, releasing its dependent within the same transaction');

-- ===========================================================================
-- H  an "over" that yields no array: the task fails for good, the error on it
-- ===========================================================================
SELECT flowforge.define_workflow($${"name": "fo_h", "tasks": [
    {"key": "m", "queue": "fo_h", "map": {"over": "$.run.images"}},
    {"key": "after", "queue": "fo_h", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.define_workflow($${"name": "fo_h2", "tasks": [
    {"key": "m", "queue": "fo_h", "map": {"over": "$.run.images[*]"}}]}$$) \gset
CREATE TEMP TABLE h_runs AS
SELECT x.label, x.n, flowforge.start_run(x.wf, x.input::jsonb) AS r
FROM (VALUES (1, 'a string', 'fo_h', '{"images": "i0.png"}'),
             (2, 'an object', 'fo_h', '{"images": {"i0": "png"}}'),
             (3, 'a number', 'fo_h', '{"images": 3}'),
             (4, 'JSON null', 'fo_h', '{"images": null}'),
             (5, 'nothing', 'fo_h', '{"pictures": []}'),
             (6, 'several values', 'fo_h2', '{"images": ["i0", "i1"]}')) AS x(n, label, wf, input);
SELECT results_eq(
    $$SELECT h.label, tr.state::text, tr.error, tr.lease_expires_at, tr.finished_at
      FROM h_runs h JOIN flowforge.task_run tr ON tr.workflow_run_id = h.r AND tr.task_key = 'm' ORDER BY h.n$$,
    $$VALUES ('a string', 'failed', 'map over $."run"."images": the input yields a string, not an array', NULL::timestamptz,
              '2030-01-03 00:00:01+00'::timestamptz),
             ('an object', 'failed', 'map over $."run"."images": the input yields an object, not an array', NULL, '2030-01-03 00:00:01+00'),
             ('a number', 'failed', 'map over $."run"."images": the input yields a number, not an array', NULL, '2030-01-03 00:00:01+00'),
             ('JSON null', 'failed', 'map over $."run"."images": the input yields null, not an array', NULL, '2030-01-03 00:00:01+00'),
             ('nothing', 'failed', 'map over $."run"."images": the input yields nothing, not an array', NULL, '2030-01-03 00:00:01+00'),
             ('several values', 'failed', 'map over $."run"."images"[*]: the input yields 2 values, not an array', NULL,
              '2030-01-03 00:00:01+00')$$,
    'H: each wrong over fails the task for good in start_run, the error recorded on the task run');
SELECT results_eq(
    $$SELECT h.label, e.from_state::text, e.to_state::text, e.detail ->> 'error' = tr.error, e.detail -> 'retryable'
      FROM h_runs h JOIN flowforge.task_run tr ON tr.workflow_run_id = h.r AND tr.task_key = 'm'
      JOIN flowforge.task_run_event e ON e.task_run_id = tr.id AND e.kind = 'failed' ORDER BY h.n$$,
    $$VALUES ('a string', 'running', 'failed', true, 'false'::jsonb), ('an object', 'running', 'failed', true, 'false'),
             ('a number', 'running', 'failed', true, 'false'), ('JSON null', 'running', 'failed', true, 'false'),
             ('nothing', 'running', 'failed', true, 'false'), ('several values', 'running', 'failed', true, 'false')$$,
    'H: event failed with the error and retryable false (retrying would meet the same input)');
SELECT results_eq(
    $$SELECT h.label, r.state::text, (SELECT tr.state::text FROM flowforge.task_run tr WHERE tr.workflow_run_id = h.r AND tr.task_key = 'after')
      FROM h_runs h JOIN flowforge.workflow_run r ON r.id = h.r ORDER BY h.n$$,
    $$VALUES ('a string', 'failed', 'skipped'), ('an object', 'failed', 'skipped'), ('a number', 'failed', 'skipped'),
             ('JSON null', 'failed', 'skipped'), ('nothing', 'failed', 'skipped'), ('several values', 'failed', NULL)$$,
    'H: the dependent is skipped and the run fails');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint c JOIN h_runs h ON h.r = c.run_id)
          + (SELECT count(*)::int FROM flowforge.work_item w JOIN h_runs h ON h.r = w.run_id), 0,
          'H: no checkpoint, no child');
SELECT flowforge.start_run('fo_h2', '{"images": [["i0", "i1"]]}') AS rh \gset
SELECT is(flowforge_test.fanout_state(:'rh', 'm'), '2/0/2 live:2 children:2 succeeded:0 failed:0 open',
          'H: a path that yields exactly one array fans out over it ($.run.images[*] over [[i0, i1]])');

-- ===========================================================================
-- I  more elements than setting.max_fanout_items: failed, nothing half-created
-- ===========================================================================
UPDATE flowforge.setting SET max_fanout_items = 3;
SELECT flowforge.start_run('fo_h', '{"images": ["i0", "i1", "i2", "i3"]}') AS ri \gset
SELECT results_eq(
    format($$SELECT state::text, error FROM flowforge.task_run WHERE workflow_run_id = %L AND task_key = 'm'$$, :'ri'),
    $$VALUES ('failed', 'map over $."run"."images": 4 elements, over the limit of 3 (setting max_fanout_items)')$$,
    'I: four elements over a limit of three: the task fails for good, the error names the setting');
SELECT is((SELECT detail -> 'retryable' FROM flowforge.run_events(:'ri') WHERE kind = 'failed' AND task_key = 'm'), 'false'::jsonb,
          'I: not retryable');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint WHERE run_id = :'ri')
          + (SELECT count(*)::int FROM flowforge.checkpoint_page p JOIN flowforge.checkpoint c ON c.id = p.checkpoint_id
             WHERE c.run_id = :'ri')
          + (SELECT count(*)::int FROM flowforge.work_item WHERE run_id = :'ri'), 0,
          'I: nothing half-created: no checkpoint, no page, no child');
SELECT flowforge.start_run('fo_h', '{"images": ["i0", "i1", "i2"]}') AS ri2 \gset
SELECT is(flowforge_test.fanout_state(:'ri2', 'm'), '3/0/3 live:3 children:3 succeeded:0 failed:0 open',
          'I: exactly the limit fans out');
UPDATE flowforge.setting SET max_fanout_items = 100000;

-- ===========================================================================
-- J  the reaper never takes the held task; a child's expired lease is retried
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-04 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_j", "tasks": [
    {"key": "m", "queue": "fo_j", "max_attempts": 2, "backoff": "1 second", "map": {"over": "$.run.n", "max_concurrency": 2}}]}$$) \gset
SELECT flowforge.start_run('fo_j', '{"n": [0, 1, 2]}') AS rj \gset
SELECT pg_temp.tr(:'rj', 'm') AS rj_m \gset
SELECT work_item_id AS j0, fencing_token AS j0_tok FROM flowforge_test.claim_child(:'rj', 'm', 0, 'fan-agent', '10 seconds') \gset
SELECT flowforge_test.advance_clock('5 seconds') \gset
-- (The partitions duties count the history partitions made and dropped: the steered clock decides, not this test.)
SELECT is(flowforge.tick() - 'at' - 'partitions' - 'partitions_dropped', '{"purged": 0, "reaped": 0, "dispatched": 0, "reaped_items": 0, "timers_fired": 0, "agents_inactive": 0, "cron_fired": 0}'::jsonb,
          'J: tick() within the child''s lease reaps nothing');
SELECT flowforge_test.advance_clock('6 seconds') \gset
SELECT is(flowforge.tick() - 'at' - 'partitions' - 'partitions_dropped', '{"purged": 0, "reaped": 0, "dispatched": 0, "reaped_items": 1, "timers_fired": 0, "agents_inactive": 0, "cron_fired": 0}'::jsonb,
          'J: past the child''s lease, tick() reaps the child (reaped_items 1) and not the map task (reaped 0)');
SELECT results_eq(
    format($$SELECT status::text, retry_count, fencing_token, lease_expires_at, next_attempt_at, error FROM flowforge.work_item WHERE id = %L$$, :'j0'),
    format($$VALUES ('pending', 1, %s::bigint, NULL::timestamptz, '2030-01-04 00:00:12+00'::timestamptz, 'lease expired (held by fan-agent)')$$,
           :'j0_tok'::bigint + 1),
    'J: the child is pending again after its backoff, token moved on, its second attempt to come');
SELECT is((SELECT kind || ' ' || from_state || '->' || to_state FROM flowforge.run_events(:'rj') WHERE work_item_id = :'j0'
           ORDER BY seq DESC LIMIT 1), 'lease_expired dispatched->pending', 'J: event lease_expired');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '0')$$, :'j0', :'j0_tok'), 'FF004', NULL,
                 'J: the reaped holder''s complete_work is refused (FF004)');
SELECT is(flowforge_test.fanout_state(:'rj', 'm'), '2/0/3 live:2 children:2 succeeded:0 failed:0 open',
          'J: a retried child stays live: no count changed');
SELECT flowforge_test.advance_clock('365 days') \gset
SELECT is((flowforge.tick() ->> 'reaped')::int, 0, 'J: a year later tick() still does not reap the map task');
SELECT results_eq(
    format($$SELECT state::text, lease_owner::text, lease_expires_at, fencing_token::bigint FROM flowforge.task_run WHERE id = %L$$, :'rj_m'),
    $$VALUES ('running', 'flowforge:fan-out', 'infinity'::timestamptz, 1::bigint)$$,
    'J: the map task is untouched: running under its holder, the lease infinite, its token');
SELECT is((SELECT string_agg(kind, ', ' ORDER BY seq) FROM flowforge.run_events(:'rj') WHERE task_run_id = :'rj_m'),
          'created, fanned_out', 'J: no reaper event on the map task');
SELECT flowforge_test.claim_child(:'rj', 'm', 0, 'fan-agent', '10 seconds') IS NOT NULL AS x \gset
SELECT flowforge_test.advance_clock('11 seconds') \gset
SELECT is((flowforge.tick() ->> 'reaped_items')::int, 1, 'J: the last attempt''s lease expires too');
SELECT results_eq(
    format($$SELECT state::text, error FROM flowforge.task_run WHERE id = %L$$, :'rj_m'),
    $$VALUES ('failed', 'element 0 failed after 2 attempt(s): lease expired (held by fan-agent)')$$,
    'J: reaped with no attempts left, the child failed for good and so the node (fail)');
SELECT is(pg_temp.children(:'rj'), '0:failed:2 1:cancelled:1', 'J: the other live child is cancelled');

-- ===========================================================================
-- K  cancel mid-map cancels every child; retry_run after the cancel resumes
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-05 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_k", "tasks": [
    {"key": "m", "queue": "fo_k", "max_attempts": 1, "map": {"over": "$.run.n", "max_concurrency": 2}},
    {"key": "after", "queue": "fo_k", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.start_run('fo_k', '{"n": [0, 1, 2, 3]}') AS rk \gset
SELECT pg_temp.tr(:'rk', 'm') AS rk_m \gset
SELECT flowforge_test.complete_child(:'rk', 'm', 0, '"k0"') AS k0 \gset
SELECT work_item_id AS k1, fencing_token AS k1_tok FROM flowforge_test.claim_child(:'rk', 'm', 1) \gset
SELECT flowforge_test.child_of(:'rk', 'm', 2) AS k2 \gset
SELECT is(pg_temp.children(:'rk'), '0:completed:1 1:dispatched:1 2:pending:1', 'K: before the cancel: one completed, one dispatched, one pending');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT lives_ok(format($$SELECT flowforge.cancel_run(%L, 'stop it')$$, :'rk'), 'K: cancel_run mid-map');
SELECT is(pg_temp.children(:'rk'), '0:completed:1 1:cancelled:1 2:cancelled:1', 'K: every live child is cancelled; the completed one stays');
SELECT results_eq(
    format($$SELECT id, fencing_token, completed_at FROM flowforge.work_item WHERE id IN (%L, %L) ORDER BY item_index$$, :'k1', :'k2'),
    format($$VALUES (%L::uuid, %s::bigint, '2030-01-05 00:00:01+00'::timestamptz), (%L, 0, '2030-01-05 00:00:01+00')$$,
           :'k1', :'k1_tok'::bigint + 1, :'k2'),
    'K: the dispatched child''s token moved on, the pending one''s did not (nobody held it)');
SELECT throws_ok(format($$SELECT flowforge.complete_work(%L, %s, '"late"')$$, :'k1', :'k1_tok'), 'FF004', NULL,
                 'K: the holder''s complete_work after the cancel: FF004');
SELECT throws_ok(format($$SELECT flowforge.heartbeat_work(%L, %s)$$, :'k1', :'k1_tok'), 'FF004', NULL,
                 'K: its heartbeat_work: FF004');
SELECT throws_ok(format($$SELECT flowforge.fail_work(%L, %s, 'late')$$, :'k1', :'k1_tok'), 'FF004', NULL, 'K: its fail_work: FF004');
SELECT results_eq(
    format($$SELECT task_key::text, state::text, fencing_token::bigint FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$, :'rk'),
    $$VALUES ('after', 'cancelled', 0::bigint), ('m', 'cancelled', 2)$$,
    'K: the map task and its dependent are cancelled (the held task''s token moved on)');
SELECT results_eq(
    format($$SELECT cursor, idx, succeeded, failed, live, done, outcome::text FROM flowforge.checkpoint WHERE run_id = %L$$, :'rk'),
    $$VALUES (3::bigint, 1::bigint, 1::bigint, 0::bigint, 0, true, 'cancelled')$$,
    'K: the checkpoint stops where it was: done, outcome cancelled, nothing live, its succeeded element kept');
SELECT set_eq(
    format($$SELECT coalesce(task_key, '?'), work_item_id IS NOT NULL, from_state::text FROM flowforge.run_events(%L)
             WHERE kind = 'cancelled'$$, :'rk'),
    $$VALUES ('m', false, 'running'), ('after', false, 'pending'), ('m[1]', true, 'dispatched'), ('m[2]', true, 'pending')$$,
    'K: one cancelled event per task run and per live child');
SELECT is((SELECT t -> 'fan_out' ->> 'outcome' FROM jsonb_array_elements(flowforge.get_run(:'rk') -> 'tasks') t
           WHERE t ->> 'key' = 'm'), 'cancelled', 'K: get_run shows the fan-out cancelled');
CREATE TEMP TABLE k_before AS
SELECT id, item_index, status, retry_count, fencing_token, output, agent_id, dispatched_at, completed_at, created_at
FROM flowforge.work_item WHERE run_id = :'rk' AND status = 'completed';
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rk'), 'K: retry_run of the cancelled run');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, lease_owner::text, lease_expires_at, fencing_token::bigint FROM flowforge.task_run WHERE id = %L$$, :'rk_m'),
    $$VALUES ('running', 2, 'flowforge:fan-out', 'infinity'::timestamptz, 3::bigint)$$,
    'K: the map task is held again (attempt 2, a new token)');
SELECT is(flowforge_test.fanout_state(:'rk', 'm'), '3/1/4 live:2 children:2 succeeded:1 failed:0 open',
          'K: the fan-out resumes: element 0 kept, elements 1 and 2 dispatched again up to the bound');
SELECT is(pg_temp.children(:'rk'), '0:completed:1 1:cancelled:1 1:pending:1 2:cancelled:1 2:pending:1',
          'K: new children for 1 and 2 only; nothing for element 0');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'm', i, to_jsonb('k' || i)) FROM generate_series(1, 3) i$$, :'rk'),
                'K: elements 1, 2, 3 complete');
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE id = %L$$, :'rk_m'),
    $$VALUES ('succeeded', '["k0", "k1", "k2", "k3"]'::jsonb)$$,
    'K: the map completes with element 0''s output from before the cancel, in order');
SELECT results_eq(
    format($$SELECT id, item_index, status, retry_count, fencing_token, output, agent_id, dispatched_at, completed_at, created_at
             FROM flowforge.work_item WHERE id = %L$$, :'k0'),
    'SELECT * FROM k_before',
    'K: element 0''s child, the one success before the cancel, was never touched again (id, attempts, token, output, times)');
SELECT is(flowforge_test.task_state(:'rk', 'after'), 'ready', 'K: the dependent is ready');

-- ===========================================================================
-- L  retry_run after a failure resumes: succeeded children untouched, only the others run again
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-06 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_l", "tasks": [
    {"key": "m", "queue": "fo_l", "max_attempts": 2, "backoff": "1 second", "map": {"over": "$.run.n", "max_concurrency": 2}},
    {"key": "after", "queue": "fo_l", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.start_run('fo_l', '{"n": [0, 1, 2, 3, 4, 5]}') AS rl \gset
SELECT pg_temp.tr(:'rl', 'm') AS rl_m \gset
SELECT flowforge_test.complete_child(:'rl', 'm', 0, '"l0"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rl', 'm', 1, 'flaky', true) IS NOT NULL AS x \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.complete_child(:'rl', 'm', 1, '"l1"') IS NOT NULL AS x \gset
SELECT flowforge_test.complete_child(:'rl', 'm', 2, '"l2"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'rl', 'm', 3, 'bad', true) IS NOT NULL AS x \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT flowforge_test.fail_child(:'rl', 'm', 3, 'bad again', true) IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT r.state::text, tr.state::text, tr.error FROM flowforge.workflow_run r
             JOIN flowforge.task_run tr ON tr.workflow_run_id = r.id AND tr.task_key = 'm' WHERE r.id = %L$$, :'rl'),
    $$VALUES ('failed', 'failed', 'element 3 failed after 2 attempt(s): bad again')$$,
    'L: element 3 exhausted its attempts: the node and the run failed');
SELECT is(pg_temp.children(:'rl'), '0:completed:1 1:completed:2 2:completed:1 3:failed:2 4:cancelled:1',
          'L: before the retry: 0, 1 (on its second attempt) and 2 succeeded, 3 failed, 4 cancelled, 5 never created');
CREATE TEMP TABLE l_before AS
SELECT id, item_index, status, retry_count, fencing_token, output, agent_id, dispatched_at, completed_at, created_at
FROM flowforge.work_item WHERE run_id = :'rl' AND status = 'completed';
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT lives_ok(format($$SELECT flowforge.retry_run(%L)$$, :'rl'), 'L: retry_run of the failed run');
SELECT is(flowforge_test.fanout_state(:'rl', 'm'), '5/3/6 live:2 children:2 succeeded:3 failed:0 open',
          'L: the fan-out resumes from its checkpoint: three succeeded kept, the failure forgotten, the next two '
          'not-succeeded elements (3 and 4) dispatched');
SELECT ok(flowforge_test.within_bound(:'rl', 'm'), 'L: within the bound on resume');
SELECT set_eq(
    format($$SELECT item_index FROM flowforge.work_item WHERE run_id = %L AND created_at = '2030-01-06 00:01:02+00'$$, :'rl'),
    ARRAY[3, 4], 'L: the retry created children for elements 3 and 4 only');
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'm', i, to_jsonb('L' || i)) FROM generate_series(3, 5) i$$, :'rl'),
                'L: elements 3, 4 and 5 complete');
SELECT results_eq(
    format($$SELECT state::text, attempt::int, output FROM flowforge.task_run WHERE id = %L$$, :'rl_m'),
    $$VALUES ('succeeded', 2, '["l0", "l1", "l2", "L3", "L4", "L5"]'::jsonb)$$,
    'L: the node succeeds with the kept outputs of 0-2 and the new ones of 3-5, in element order');
SELECT results_eq(
    format($$SELECT id, item_index, status, retry_count, fencing_token, output, agent_id, dispatched_at, completed_at, created_at
             FROM flowforge.work_item WHERE run_id = %L AND item_index < 3 ORDER BY item_index$$, :'rl'),
    'SELECT * FROM l_before ORDER BY item_index',
    'L: the succeeded children are untouched: the same ids, attempt counts, tokens, outputs, times');
SELECT is((SELECT count(*)::int FROM flowforge.run_events(:'rl') e JOIN l_before b ON b.id = e.work_item_id
           WHERE e.created_at > '2030-01-06 00:00:02+00'), 0, 'L: and no event names them after the retry');
SELECT is(pg_temp.children(:'rl'),
          '0:completed:1 1:completed:2 2:completed:1 3:failed:2 3:completed:1 4:cancelled:1 4:completed:1 5:completed:1',
          'L: every element ran to success exactly once');
SELECT is(flowforge_test.run_state(:'rl'), 'running', 'L: the run goes on (its dependent is ready)');

-- ===========================================================================
-- M  fan_out_output: the children's outputs in element order, page by page
-- ===========================================================================
SELECT flowforge_test.set_clock('2030-01-07 00:00:00+00') \gset
SELECT flowforge.define_workflow($${"name": "fo_m", "tasks": [
    {"key": "m", "queue": "fo_m", "max_attempts": 1, "map": {"over": "$.run.n", "max_concurrency": 3}},
    {"key": "after", "queue": "fo_m", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.start_run('fo_m', '{"n": [0, 1, 2, 3, 4, 5]}') AS rm \gset
SELECT flowforge_test.complete_child(:'rm', 'm', 0, '{"v": "a"}') IS NOT NULL AS x \gset
SELECT flowforge_test.claim_child(:'rm', 'm', 1) IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT index, status, output FROM flowforge.fan_out_output(%L, 'm')$$, :'rm'),
    $$VALUES (0::bigint, 'completed', '{"v": "a"}'::jsonb), (1, 'dispatched', NULL), (2, 'pending', NULL),
             (3, 'pending', NULL), (4, 'not_started', NULL), (5, 'not_started', NULL)$$,
    'M: mid-map, every element in order: completed with its output, or its child''s status, or not_started');
SELECT results_eq(
    format($$SELECT index, status FROM flowforge.fan_out_output(run_id => %L, node => 'm', after_index => 1, max_items => 2)$$, :'rm'),
    $$VALUES (2::bigint, 'pending'), (3, 'pending')$$,
    'M: a page: after_index 1, max_items 2 -> elements 2 and 3');
SELECT results_eq(
    format($$SELECT index FROM flowforge.fan_out_output(%L, 'm', 4)$$, :'rm'),
    $$VALUES (5::bigint)$$, 'M: the last page holds what is left');
SELECT is_empty(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', 5)$$, :'rm'), 'M: after the last index: no row');
SELECT is_empty(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', 1000)$$, :'rm'), 'M: far past the end: no row');
SELECT is((SELECT count(*)::int FROM flowforge.fan_out_output(:'rm', 'm', -1, 10000)), 6, 'M: max_items 10000 is allowed');
SELECT flowforge_test.fail_child(:'rm', 'm', 1, 'no') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT index, status, output FROM flowforge.fan_out_output(%L, 'm')$$, :'rm'),
    $$VALUES (0::bigint, 'completed', '{"v": "a"}'::jsonb), (1, 'failed', NULL), (2, 'cancelled', NULL),
             (3, 'cancelled', NULL), (4, 'not_started', NULL), (5, 'not_started', NULL)$$,
    'M: after the failure: failed, cancelled, not_started');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', -1, 0)$$, :'rm'), 'FF003',
                 'max_items must be between 1 and 10000', 'M: max_items 0: FF003');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', -1, 10001)$$, :'rm'), 'FF003',
                 'max_items must be between 1 and 10000', 'M: max_items 10001: FF003');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', -1, NULL)$$, :'rm'), 'FF003',
                 'max_items must be between 1 and 10000', 'M: max_items NULL: FF003');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', -2)$$, :'rm'), 'FF003',
                 'after_index must be -1 (from the start) or an element index', 'M: after_index -2: FF003');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm', NULL)$$, :'rm'), 'FF003',
                 'after_index must be -1 (from the start) or an element index', 'M: after_index NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.fan_out_output('00000000-0000-0000-0000-00000000abcd', 'm')$$, 'FF001', NULL,
                 'M: an unknown run: FF001');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'after')$$, :'rm'), 'FF001',
                 format('node ''after'' of run %s never fanned out', :'rm'), 'M: a node that does not fan out: FF001');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'nope')$$, :'rm'), 'FF001',
                 format('node ''nope'' of run %s never fanned out', :'rm'), 'M: an unknown node: FF001');
SELECT throws_ok(format($$SELECT * FROM flowforge.fan_out_output(%L, 'm')$$, (SELECT r FROM h_runs WHERE n = 1)), 'FF001', NULL,
                 'M: a map that failed before fanning out (wrong over) has no checkpoint: FF001');

-- ===========================================================================
-- N  a map output over max_payload_bytes is passed by reference
-- ===========================================================================
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT flowforge.define_workflow($${"name": "fo_n", "tasks": [
    {"key": "m", "queue": "fo_n", "map": {"over": "$.run.n", "max_concurrency": 12}},
    {"key": "after", "queue": "fo_n", "depends_on": ["m"]}]}$$) \gset
SELECT flowforge.start_run('fo_n', jsonb_build_object('n', (SELECT jsonb_agg(i) FROM generate_series(0, 11) i))) AS rn \gset
SELECT lives_ok(format($$SELECT flowforge_test.complete_child(%L, 'm', i, to_jsonb(i || repeat('x', 100))) FROM generate_series(0, 11) i$$, :'rn'),
                'N: twelve children complete with 100-byte outputs (each within the limit, 1.2 kB together)');
SELECT results_eq(
    format($$SELECT state::text, output FROM flowforge.task_run WHERE workflow_run_id = %L AND task_key = 'm'$$, :'rn'),
    format($$VALUES ('succeeded', jsonb_build_object('fan_out', jsonb_build_object('by_reference', true, 'run_id', %L::text,
                 'node', 'm', 'count', 12, 'failed', 0,
                 'read', format('SELECT * FROM flowforge.fan_out_output(%%L, %%L)', %L, 'm'))))$$, :'rn', :'rn'),
    'N: the node''s output is a reference (run, node, count, failed, the read to run), not the 1.2 kB array');
SELECT is((SELECT output_by_reference FROM flowforge.checkpoint WHERE run_id = :'rn'), true, 'N: the checkpoint says so');
SELECT is((SELECT t -> 'fan_out' -> 'output_by_reference' FROM jsonb_array_elements(flowforge.get_run(:'rn') -> 'tasks') t
           WHERE t ->> 'key' = 'm'), 'true'::jsonb, 'N: and get_run');
SELECT is((SELECT input -> 'deps' -> 'm' FROM flowforge.claim(ARRAY['fo_n'], 'dag-worker', '30 seconds', 10) WHERE workflow_run_id = :'rn'),
          (SELECT output FROM flowforge.task_run WHERE workflow_run_id = :'rn' AND task_key = 'm'),
          'N: the dependent receives the reference under deps.m');
CREATE TEMP TABLE n_pages (page int, index bigint, status text, output jsonb);
INSERT INTO n_pages SELECT 1, * FROM flowforge.fan_out_output(:'rn', 'm', -1, 5);
INSERT INTO n_pages SELECT 2, * FROM flowforge.fan_out_output(:'rn', 'm', (SELECT max(index) FROM n_pages), 5);
INSERT INTO n_pages SELECT 3, * FROM flowforge.fan_out_output(:'rn', 'm', (SELECT max(index) FROM n_pages), 5);
SELECT results_eq(
    'SELECT page, count(*)::int, min(index), max(index) FROM n_pages GROUP BY page ORDER BY page',
    $$VALUES (1, 5, 0::bigint, 4::bigint), (2, 5, 5, 9), (3, 2, 10, 11)$$,
    'N: fan_out_output reads it in pages of 5, each after the last index read');
SELECT results_eq(
    'SELECT index, status, output FROM n_pages ORDER BY index',
    $$SELECT i::bigint, 'completed', to_jsonb(i || repeat('x', 100)) FROM generate_series(0, 11) i$$,
    'N: the pages together are every child''s output, in element order');
CREATE FUNCTION pg_temp.read_reference(p_reference jsonb) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_count bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM (%s) r', p_reference -> 'fan_out' ->> 'read') INTO v_count;
    RETURN v_count;
END;
$$;
SELECT is(pg_temp.read_reference((SELECT output FROM flowforge.task_run WHERE workflow_run_id = :'rn' AND task_key = 'm')), 12::bigint,
          'N: the reference''s read statement runs as it is and returns every element');
-- The boundary: an output of exactly max_payload_bytes is inlined, one byte more is not.
SELECT flowforge.start_run('fo_n', '{"n": [0]}') AS rn1 \gset
SELECT flowforge_test.complete_child(:'rn1', 'm', 0, to_jsonb(repeat('y', 1020))) IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT octet_length(output::text), jsonb_typeof(output) FROM flowforge.task_run WHERE workflow_run_id = %L AND task_key = 'm'$$, :'rn1'),
    $$VALUES (1024, 'array')$$, 'N: an output of exactly 1024 bytes (the limit) is inlined');
SELECT flowforge.start_run('fo_n', '{"n": [0]}') AS rn2 \gset
SELECT flowforge_test.complete_child(:'rn2', 'm', 0, to_jsonb(repeat('y', 1021))) IS NOT NULL AS x \gset
SELECT is((SELECT output -> 'fan_out' -> 'by_reference' FROM flowforge.task_run WHERE workflow_run_id = :'rn2' AND task_key = 'm'),
          'true'::jsonb, 'N: 1025 bytes go by reference');
SELECT results_eq(
    format($$SELECT iterator_type::text, output_by_reference FROM flowforge.checkpoint WHERE run_id = %L$$, :'rc'),
    $$VALUES ('foreach', false)$$, 'N: (a foreach output, the counts, is always inline)');
UPDATE flowforge.setting SET max_payload_bytes = 1048576;

-- ===========================================================================
-- O  The held task refuses the worker protocol. Its fencing token is no
--    secret (get_run shows it; it is the ready task's + 1): when the protocol
--    checked only the token, heartbeat() gave it a finite lease that tick()
--    then reaped — the task went ready, fanned out again and failed for good
--    on work_item_checkpoint_live_uq, its children left live — and complete()
--    succeeded it with any output while its children ran.
-- ===========================================================================
SELECT flowforge.start_run('fo_k', '{"n": [0, 1, 2]}') AS ro \gset
SELECT id AS ro_m, fencing_token::bigint AS ro_tok FROM flowforge.task_run WHERE workflow_run_id = :'ro' AND task_key = 'm' \gset
SELECT is((SELECT (t ->> 'fencing_token')::bigint FROM jsonb_array_elements(flowforge.get_run(:'ro') -> 'tasks') t
           WHERE t ->> 'key' = 'm'), :'ro_tok'::bigint, 'O: get_run shows the held task''s fencing token');
SELECT throws_ok(format('SELECT flowforge.heartbeat(%L, %s)', :'ro_m', :'ro_tok'), 'FF004', NULL,
                 'O: heartbeat() of the held task is refused (FF004): it would make it reapable');
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, '"forged"')$$, :'ro_m', :'ro_tok'), 'FF004', NULL,
                 'O: complete() of the held task is refused (FF004): only its children complete it');
SELECT throws_ok(format($$SELECT flowforge.fail(%L, %s, 'forged')$$, :'ro_m', :'ro_tok'), 'FF004', NULL,
                 'O: fail() of the held task is refused (FF004)');

SELECT * FROM finish();
ROLLBACK;
