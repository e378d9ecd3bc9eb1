-- A graph run's own bounds: a step beyond max_steps fails it (reason
-- max_steps), a node entered more than its max_visits fails it (reason
-- max_visits), a node none of whose edges holds fails it (the reason names
-- the node); visits and state are usable in a when, and edges are tried in
-- definition order. A run stopped by its own bound is not retried (FF005).
BEGIN;
SELECT plan(38);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- The run's outcome as one row: status, reason, steps, path, outstanding items.
CREATE FUNCTION pg_temp.outcome(p_run uuid)
RETURNS TABLE (status text, reason text, steps bigint, path text, outstanding bigint)
LANGUAGE sql AS $$
    SELECT g.status::text, g.reason, g.steps, flowforge_test.path_of(p_run),
           (SELECT count(*) FROM flowforge.work_item w WHERE w.run_id = p_run AND w.status IN ('pending', 'dispatched'))
    FROM flowforge.graph_run g WHERE g.run_id = p_run
$$;

-- ---------------------------------------------------------------- max_steps
SELECT flowforge_test.define_review_loop('short_loop', '{"queue": "qs"}', '{"max_steps": 3}') \gset
SELECT flowforge.start_run('short_loop') AS r1 \gset
SELECT is(flowforge_test.step(:'r1', '{"text": "v1"}') ->> 'node', 'draft', 'max_steps: draft (step 1)');
SELECT is(flowforge_test.step(:'r1', '{"approved": false}') ->> 'node', 'review', 'max_steps: review (step 2), sent back');
SELECT is(flowforge_test.graph_status(:'r1'), 'running', 'max_steps: draft again is step 3 of 3, still running');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(flowforge_test.step(:'r1', '{"text": "v2"}') ->> 'visit', '2', 'max_steps: draft visit 2 done, review would be step 4');
SELECT results_eq(format('SELECT * FROM pg_temp.outcome(%L)', :'r1'),
    $$VALUES ('failed', 'max_steps', 3::bigint, 'draft -> review -> draft', 0::bigint)$$,
    'a step beyond max_steps: failed, reason max_steps, the walk stops at 3 steps, nothing queued');
SELECT is((SELECT error FROM flowforge.graph_run WHERE run_id = :'r1'),
          'entering node "review" would be step 4, over max_steps 3', 'the error says which node and step');
SELECT results_eq(
    format($$SELECT e.kind, e.detail ->> 'reason' FROM flowforge.run_events(%L) e WHERE e.kind LIKE 'run\_%%' ORDER BY e.seq$$, :'r1'),
    $$VALUES ('run_started', NULL::text), ('run_failed', 'max_steps')$$,
    'events: run_started, run_failed with reason max_steps');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'r1'), '2030-01-01 00:00:01+00'::timestamptz,
          'the directory row ended when the bound was hit');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'r1'), 'FF005', NULL,
                 'retry_run of a run that hit max_steps: FF005 (it would stop the same way)');
SELECT is(flowforge_test.graph_status(:'r1'), 'failed', 'and it stays failed');

-- Exactly max_steps steps is allowed: work (1), done (2) of max_steps 2.
SELECT flowforge_test.define_graph_single('two_steps', '{"queue": "qs2"}', '{"max_steps": 2}') \gset
SELECT flowforge.start_run('two_steps') AS r2 \gset
SELECT is(flowforge_test.step(:'r2') ->> 'node', 'work', 'max_steps 2: work done');
SELECT results_eq(format('SELECT * FROM pg_temp.outcome(%L)', :'r2'),
    $$VALUES ('succeeded', 'reached final node "done"', 2::bigint, 'work -> done', 0::bigint)$$,
    'reaching the final node at exactly max_steps succeeds (the final node''s entry is a step)');

-- --------------------------------------------------------------- max_visits
SELECT flowforge.define_workflow($${"name": "visits_loop", "kind": "graph", "start": "draft", "max_steps": 100,
    "nodes": [{"key": "draft", "queue": "qv"}, {"key": "review", "queue": "qv", "max_visits": 2},
              {"key": "done", "final": true}],
    "edges": [{"from": "draft", "to": "review"},
              {"from": "review", "to": "draft", "when": "$.output.approved == false"},
              {"from": "review", "to": "done"}]}$$) \gset
SELECT flowforge.start_run('visits_loop') AS r3 \gset
SELECT is(flowforge_test.step(:'r3') ->> 'node', 'draft', 'max_visits: draft 1');
SELECT is(flowforge_test.step(:'r3', '{"approved": false}') ->> 'visit', '1', 'max_visits: review 1 of 2, sent back');
SELECT is(flowforge_test.step(:'r3') ->> 'visit', '2', 'max_visits: draft 2');
SELECT is(flowforge_test.step(:'r3', '{"approved": false}') ->> 'visit', '2', 'max_visits: review 2 of 2, sent back');
SELECT is(flowforge_test.graph_status(:'r3'), 'running', 'max_visits: the run goes on (draft has no bound)');
SELECT is(flowforge_test.step(:'r3') ->> 'visit', '3', 'max_visits: draft 3; review would be entered a third time');
SELECT results_eq(format('SELECT * FROM pg_temp.outcome(%L)', :'r3'),
    $$VALUES ('failed', 'max_visits', 5::bigint, 'draft -> review -> draft -> review -> draft', 0::bigint)$$,
    'a node entered more than its max_visits: failed, reason max_visits, the third visit is not a step');
SELECT matches((SELECT error FROM flowforge.graph_run WHERE run_id = :'r3'), '^node "review" would be entered a 3',
               'the error names the node and the visit');
SELECT is((flowforge.get_run(:'r3') -> 'run_counts'), '{"draft": 3, "review": 2}'::jsonb,
          'run_counts: review stays at its bound');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'r3'), 'FF005', NULL, 'retry_run of a max_visits failure: FF005');

-- ------------------------------------------------------------ no edge holds
SELECT flowforge.define_workflow($${"name": "strict_review", "kind": "graph", "start": "review",
    "nodes": [{"key": "review", "queue": "qn"}, {"key": "done", "final": true}, {"key": "redo", "queue": "qn"}],
    "edges": [{"from": "review", "to": "done", "when": "$.output.approved == true"},
              {"from": "review", "to": "redo", "when": "$.output.approved == false"},
              {"from": "redo", "to": "review"}]}$$) \gset
SELECT flowforge.start_run('strict_review') AS r4 \gset
SELECT is(flowforge_test.step(:'r4', '{"approved": "maybe"}') ->> 'node', 'review', 'no edge: review answers neither true nor false');
SELECT results_eq(format('SELECT * FROM pg_temp.outcome(%L)', :'r4'),
    $$VALUES ('failed', 'no edge from node "review" matched', 1::bigint, 'review', 0::bigint)$$,
    'no edge of the node holds: failed, the reason names the node');
SELECT is((SELECT state FROM flowforge.graph_run WHERE run_id = :'r4'), '{"approved": "maybe"}'::jsonb,
          'the output was merged before the edges were tried');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'r4'), 'FF005', NULL, 'retry_run of a no-edge failure: FF005');
SELECT flowforge.start_run('strict_review') AS r5 \gset
SELECT is(flowforge_test.step(:'r5', '42') ->> 'node', 'review', 'no edge: a bare number as output');
SELECT is((SELECT reason FROM flowforge.graph_run WHERE run_id = :'r5'), 'no edge from node "review" matched',
          'a condition that cannot be evaluated on the output (no $.output.approved) is not taken');
SELECT is((SELECT state FROM flowforge.graph_run WHERE run_id = :'r5'), '{"review": 42}'::jsonb,
          'the bare number sits under the node''s key');

-- ----------------------------------------------- visits and state in a when
SELECT flowforge.define_workflow($${"name": "second_look", "kind": "graph", "start": "draft",
    "nodes": [{"key": "draft", "queue": "qw"}, {"key": "review", "queue": "qw"}, {"key": "publish", "queue": "qw"},
              {"key": "done", "final": true}],
    "edges": [{"from": "draft", "to": "review"},
              {"from": "review", "to": "publish", "when": "$.visits.review >= 2 || $.state.score > 0.9"},
              {"from": "review", "to": "draft"},
              {"from": "publish", "to": "done"}]}$$) \gset
SELECT flowforge.start_run('second_look', '{"score": 0.5}') AS r6 \gset
SELECT is(flowforge_test.step(:'r6') ->> 'node', 'draft', 'visits: draft 1');
SELECT is(flowforge_test.step(:'r6') ->> 'node', 'review', 'visits: review 1 — visits.review is 1, score 0.5: back to draft');
SELECT is(flowforge_test.step(:'r6') ->> 'node', 'draft', 'visits: draft 2');
SELECT is(flowforge_test.step(:'r6') ->> 'node', 'review', 'visits: review 2 — visits.review is 2: both edges hold, the first is taken');
SELECT is(flowforge_test.step(:'r6') ->> 'node', 'publish', 'visits: publish');
SELECT results_eq(format('SELECT * FROM pg_temp.outcome(%L)', :'r6'),
    $$VALUES ('succeeded', 'reached final node "done"', 6::bigint, 'draft -> review -> draft -> review -> publish -> done', 0::bigint)$$,
    '$.visits.review >= 2 held on the second review');
SELECT flowforge.start_run('second_look', '{"score": 0.5}') AS r7 \gset
SELECT is(flowforge_test.step(:'r7') ->> 'node', 'draft', 'state: draft 1');
SELECT is(flowforge_test.step(:'r7', '{"score": 0.95}') ->> 'node', 'review', 'state: review 1 raises the score in the data');
SELECT is(flowforge_test.path_of(:'r7'), 'draft -> review -> publish', '$.state.score > 0.9 held on the first review (the merged data)');

SELECT * FROM finish();
ROLLBACK;
