-- define_workflow with "kind": "graph": every refusal of issue 13 is FF002
-- and writes nothing; a valid graph writes its node and edge rows, is
-- versioned by content like a DAG, and list_workflows shows it.
BEGIN;
SELECT plan(66);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Rows a definition writes, as "workflows/tasks/edges".
CREATE FUNCTION pg_temp.definition_rows() RETURNS text LANGUAGE sql AS $$
    SELECT format('%s/%s/%s', (SELECT count(*) FROM flowforge.workflow), (SELECT count(*) FROM flowforge.task),
                  (SELECT count(*) FROM flowforge.graph_edge))
$$;

-- The review loop of the issue, as a spec to vary.
CREATE FUNCTION pg_temp.spec() RETURNS jsonb LANGUAGE sql AS $$
    SELECT $j${"name": "review_loop", "kind": "graph", "start": "draft", "max_steps": 20,
              "nodes": [{"key": "draft", "queue": "default", "max_attempts": 3, "backoff": "1 second", "timeout": "5 minutes"},
                        {"key": "review", "max_visits": 5},
                        {"key": "publish", "affinity": "run"},
                        {"key": "done", "final": true}],
              "edges": [{"from": "draft", "to": "review"},
                        {"from": "review", "to": "draft", "when": "$.output.approved == false"},
                        {"from": "review", "to": "publish"},
                        {"from": "publish", "to": "done"}]}$j$::jsonb
$$;

-- A refused spec: FF002, and nothing written (two tests).
CREATE FUNCTION pg_temp.refused(p_spec jsonb, p_what text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_before text := pg_temp.definition_rows();
BEGIN
    RETURN NEXT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', p_spec), 'FF002'::char(5), NULL::text,
                          p_what || ': FF002 invalid definition');
    RETURN NEXT is(pg_temp.definition_rows(), v_before, p_what || ': nothing written');
END;
$$;

-- ------------------------------------------------------------- refusals
SELECT pg_temp.definition_rows() AS empty \gset
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,3,from}', '"nowhere"'), 'an edge from an unknown node');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,0,to}', '"nowhere"'), 'an edge to an unknown node');
SELECT * FROM pg_temp.refused(pg_temp.spec() - 'start', 'no start');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"start": "nowhere"}', 'a start naming an unknown node');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"start": 1}', 'a start that is not a node key');
SELECT * FROM pg_temp.refused(
    jsonb_set(pg_temp.spec(), '{nodes}', (pg_temp.spec() -> 'nodes') || '[{"key": "orphan", "final": true}]'),
    'a node unreachable from start (nothing leads to it)');
SELECT * FROM pg_temp.refused(
    jsonb_set(jsonb_set(pg_temp.spec(), '{nodes}', (pg_temp.spec() -> 'nodes') || '[{"key": "island"}]'),
              '{edges}', (pg_temp.spec() -> 'edges') || '[{"from": "island", "to": "done"}]'),
    'a node unreachable from start (it leads somewhere, nothing leads to it)');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges}', (pg_temp.spec() -> 'edges') - 3),
    'a non-final node with no outgoing edge (publish)');
SELECT * FROM pg_temp.refused(
    jsonb_set(pg_temp.spec(), '{edges}', (pg_temp.spec() -> 'edges') || '[{"from": "done", "to": "draft"}]'),
    'a final node with an outgoing edge');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,1,when}', '"$.output.approved"'),
    'a when that is a path, not a predicate');
SELECT throws_like(format('SELECT flowforge.define_workflow(%L::jsonb)',
                          jsonb_set(pg_temp.spec(), '{edges,1,when}', '"$.output.approved"')),
    '%edge 2 (review -> draft): when must be a jsonpath predicate%',
    'a bad when: the message names the edge (its position, from and to)');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,1,when}', '"$.output.approved =="'),
    'a when that does not parse');
SELECT throws_like(format('SELECT flowforge.define_workflow(%L::jsonb)',
                          jsonb_set(pg_temp.spec(), '{edges,1,when}', '"$.output.approved =="')),
    '%edge 2 (review -> draft)%', 'a when that does not parse: the message names the edge');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,1,when}', 'true'), 'a when that is not a string');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"max_steps": 0}', 'max_steps 0');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"max_steps": 100001}', 'max_steps 100001');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"max_steps": 2.5}', 'a fractional max_steps');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{nodes,1,max_visits}', '0'), 'max_visits 0');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{nodes,1,key}', '"draft"'), 'a duplicate node key');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"tasks": []}', 'an unknown top-level field');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{nodes,1,depends_on}', '["draft"]'), 'an unknown node field (a DAG''s)');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{edges,0,weight}', '1'), 'an unknown edge field');
SELECT * FROM pg_temp.refused(jsonb_set(pg_temp.spec(), '{nodes,3,queue}', '"default"'),
    'a final node with a unit field (it runs nothing)');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"kind": "machine"}', 'an unknown kind');
SELECT * FROM pg_temp.refused(pg_temp.spec() || '{"nodes": []}', 'no nodes');
SELECT is(pg_temp.definition_rows(), :'empty', 'after every refusal: no workflow, task or edge row at all');

-- ---------------------------------------------------------- a valid graph
SELECT flowforge.define_workflow(pg_temp.spec()) AS v1 \gset
SELECT results_eq(
    format($$SELECT name::text, version, kind::text, spec ->> 'start', (spec ->> 'max_steps')::int
             FROM flowforge.workflow WHERE id = %L$$, :'v1'),
    $$VALUES ('review_loop', 1, 'graph', 'draft', 20)$$,
    'the first definition is version 1 of kind graph, its start and max_steps in the stored spec');
SELECT results_eq(
    format($$SELECT key::text, queue::text, max_attempts, timeout, max_visits, is_final, affinity, affinity_policy::text
             FROM flowforge.task WHERE workflow_id = %L ORDER BY key$$, :'v1'),
    $$VALUES ('done', 'default', 1, NULL::interval, NULL::int, true, NULL::text, 'soft'),
             ('draft', 'default', 3, interval '5 minutes', NULL, false, NULL, 'soft'),
             ('publish', 'default', 3, NULL, NULL, false, 'run', 'soft'),
             ('review', 'default', 3, NULL, 5, false, NULL, 'soft')$$,
    'a node per task row: its unit fields with defaults, max_visits, final, affinity');
SELECT results_eq(
    format($$SELECT f.key::text, e.position, t.key::text, e.condition::text
             FROM flowforge.graph_edge e JOIN flowforge.task f ON f.id = e.from_task_id JOIN flowforge.task t ON t.id = e.to_task_id
             WHERE e.workflow_id = %L ORDER BY f.key, e.position$$, :'v1'),
    $$VALUES ('draft', 1, 'review', NULL::text), ('publish', 1, 'done', NULL),
             ('review', 1, 'draft', '($."output"."approved" == false)'), ('review', 2, 'publish', NULL)$$,
    'an edge per graph_edge row, numbered per node in definition order, its when parsed');
SELECT flowforge.define_workflow((pg_temp.spec() - 'max_steps') || '{"name": "no_bound"}') AS no_bound \gset
SELECT is((SELECT (spec ->> 'max_steps')::int FROM flowforge.workflow WHERE id = :'no_bound'), 1000,
          'max_steps defaults to 1000');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.spec() || '{"name": "edge_1", "max_steps": 1}'),
    'max_steps 1 is accepted');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.spec() || '{"name": "edge_100000", "max_steps": 100000}'),
    'max_steps 100000 is accepted');
SELECT lives_ok($$SELECT flowforge.define_workflow('{"name": "just_done", "kind": "graph", "start": "done",
                                                     "nodes": [{"key": "done", "final": true}]}')$$,
    'a graph that starts at its final node is accepted (edges are optional)');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)',
                       jsonb_set(pg_temp.spec() || '{"name": "visits_when"}', '{edges,1,when}',
                                 '"$.visits.review < 3 && $.state.score < 0.5"')),
    'a when over visits and state is accepted');

-- ------------------------------------------------------- versioned by content
SELECT pg_temp.definition_rows() AS before \gset
SELECT is(flowforge.define_workflow(pg_temp.spec()), :'v1'::uuid, 'the same spec again returns the same id');
SELECT is(flowforge.define_workflow($${"kind": "graph", "name": "review_loop", "max_steps": 20, "start": "draft",
        "edges": [{"to": "review", "from": "draft"},
                  {"from": "review", "to": "draft", "when": "$.output.approved==false"},
                  {"from": "review", "to": "publish"}, {"from": "publish", "to": "done"}],
        "nodes": [{"key": "draft", "timeout": "300 seconds", "backoff": "00:00:01", "max_attempts": 3.0},
                  {"max_visits": 5, "key": "review"}, {"key": "publish", "affinity": "run", "affinity_policy": "soft"},
                  {"key": "done", "final": true}]}$$),
    :'v1'::uuid,
    'fields in another order, defaults written out, durations and the when written differently: the same id');
SELECT is(pg_temp.definition_rows(), :'before', 'defining the same content again wrote nothing');
SELECT flowforge.define_workflow(jsonb_set(pg_temp.spec(), '{edges,1,when}', '"$.output.approved != true"')) AS v2 \gset
SELECT isnt(:'v2'::uuid, :'v1'::uuid, 'a changed edge condition is a new definition');
SELECT is((SELECT version FROM flowforge.workflow WHERE id = :'v2'), 2, 'it is version 2 of review_loop');
SELECT is(flowforge.define_workflow(pg_temp.spec()), (SELECT flowforge.define_workflow(pg_temp.spec())),
          'defining the first content again after it is stable');
SELECT is((SELECT max(version) FROM flowforge.workflow WHERE name = 'review_loop'), 3,
          'the first content, defined after version 2, is version 3 (versions are by content of the latest)');
SELECT results_eq(
    $$SELECT name, version, kind, tasks FROM flowforge.list_workflows() WHERE name IN ('review_loop', 'just_done') ORDER BY name$$,
    $$VALUES ('just_done', 1, 'graph', 1), ('review_loop', 3, 'graph', 4)$$,
    'list_workflows shows a graph''s kind and its node count');
SELECT is((flowforge.get_workflow('review_loop', 2) -> 'spec' -> 'edges' -> 1 ->> 'when'), '($."output"."approved" != true)',
          'get_workflow returns the normalized spec of a graph version');

SELECT * FROM finish();
ROLLBACK;
