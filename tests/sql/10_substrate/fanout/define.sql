-- A fanning node's map (issue 15), as define_workflow validates it
-- (_spec_map): every refusal is FF002 naming the node and the field, and
-- writes nothing; a valid map is normalized (defaults filled in, "over" as
-- canonical jsonpath text, so equal content hashes equal), on DAG tasks and
-- graph nodes alike; the task row carries it in task.spec ({"map": ...}); and
-- start_run marks a fanning DAG task's run (task_run.fans_out).
BEGIN;
SELECT plan(102);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Rows a definition writes, as "workflows/tasks/dependencies/edges".
CREATE FUNCTION pg_temp.definition_rows() RETURNS text LANGUAGE sql AS $$
    SELECT format('%s/%s/%s/%s', (SELECT count(*) FROM flowforge.workflow), (SELECT count(*) FROM flowforge.task),
                  (SELECT count(*) FROM flowforge.task_dependency), (SELECT count(*) FROM flowforge.graph_edge))
$$;

-- A DAG of one task "t" with the given map.
CREATE FUNCTION pg_temp.dag(p_map jsonb, p_name text DEFAULT 'fo_define') RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', p_name, 'tasks', jsonb_build_array(jsonb_build_object('key', 't', 'map', p_map)))
$$;

-- A refused map on DAG task "t": FF002 with exactly this message, and nothing written (two tests).
CREATE FUNCTION pg_temp.refused(p_map jsonb, p_problem text, p_what text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    v_before text := pg_temp.definition_rows();
BEGIN
    RETURN NEXT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.dag(p_map)), 'FF002'::char(5),
                          'invalid workflow definition: task "t"' || p_problem, p_what || ': FF002 naming the field');
    RETURN NEXT is(pg_temp.definition_rows(), v_before, p_what || ': nothing written');
END;
$$;

-- The map the stored spec of workflow version p_workflow carries on its first task.
CREATE FUNCTION pg_temp.map_of(p_workflow uuid) RETURNS jsonb LANGUAGE sql AS $$
    SELECT spec -> 'tasks' -> 0 -> 'map' FROM flowforge.workflow WHERE id = p_workflow
$$;

-- ---------------------------------------------------------------- not an object, unknown fields
SELECT * FROM pg_temp.refused('[]', ': map must be an object such as {"over": "$.run.images", "mode": "map"}',
                              'map an array');
SELECT * FROM pg_temp.refused('"$.run.images"', ': map must be an object such as {"over": "$.run.images", "mode": "map"}',
                              'map a bare jsonpath string');
SELECT * FROM pg_temp.refused('null', ': map must be an object such as {"over": "$.run.images", "mode": "map"}',
                              'map JSON null');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "size": 3}',
    ', map: unknown field "size" (known: over, mode, max_concurrency, on_item_failure, tolerated_failures)',
    'an unknown field in the map');

-- ---------------------------------------------------------------- over
SELECT * FROM pg_temp.refused('{"mode": "map"}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got nothing', 'over missing');
SELECT * FROM pg_temp.refused('{}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got nothing',
    'an empty map (over missing)');
SELECT * FROM pg_temp.refused('{"over": 5}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got 5', 'over a number');
SELECT * FROM pg_temp.refused('{"over": ["$.run.images"]}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got ["$.run.images"]',
    'over an array of strings');
SELECT * FROM pg_temp.refused('{"over": "$.run.["}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "$.run.["',
    'over not valid jsonpath (unclosed bracket)');
SELECT * FROM pg_temp.refused('{"over": "$.run.images ++"}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "$.run.images ++"',
    'over not valid jsonpath (trailing operator)');
SELECT * FROM pg_temp.refused('{"over": ""}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got ""',
    'over an empty string');
SELECT * FROM pg_temp.refused('{"over": "$.run.n > 1"}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "$.run.n > 1"',
    'over a comparison predicate');
SELECT * FROM pg_temp.refused('{"over": "exists($.run.images)"}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "exists($.run.images)"',
    'over an exists() predicate');
SELECT * FROM pg_temp.refused('{"over": "true"}',
    ', map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "true"',
    'over the predicate true');

-- ---------------------------------------------------------------- mode, on_item_failure
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "mode": "parallel"}',
    ', map: mode must be "map" or "foreach", got "parallel"', 'an unknown mode');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "mode": 1}',
    ', map: mode must be "map" or "foreach", got 1', 'mode a number');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "mode": null}',
    ', map: mode must be "map" or "foreach", got null', 'mode JSON null');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "on_item_failure": "ignore"}',
    ', map: on_item_failure must be "fail" or "continue", got "ignore"', 'an unknown on_item_failure');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "on_item_failure": true}',
    ', map: on_item_failure must be "fail" or "continue", got true', 'on_item_failure a boolean');

-- ---------------------------------------------------------------- max_concurrency 1..10000
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "max_concurrency": 0}',
    ', map: max_concurrency must be an integer between 1 and 10000, got 0', 'max_concurrency 0');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "max_concurrency": -1}',
    ', map: max_concurrency must be an integer between 1 and 10000, got -1', 'a negative max_concurrency');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "max_concurrency": 10001}',
    ', map: max_concurrency must be an integer between 1 and 10000, got 10001', 'max_concurrency 10001');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "max_concurrency": 1.5}',
    ', map: max_concurrency must be an integer between 1 and 10000, got 1.5', 'max_concurrency not an integer');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "max_concurrency": "10"}',
    ', map: max_concurrency must be an integer, got "10"', 'max_concurrency a string');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag('{"over": "$.run.images", "max_concurrency": 1}', 'fo_c1'))) -> 'max_concurrency',
          '1'::jsonb, 'max_concurrency 1 (the lower bound) is accepted');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag('{"over": "$.run.images", "max_concurrency": 10000}', 'fo_c2'))) -> 'max_concurrency',
          '10000'::jsonb, 'max_concurrency 10000 (the upper bound) is accepted');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag('{"over": "$.run.images", "max_concurrency": 7.0}', 'fo_c3'))) -> 'max_concurrency',
          '7'::jsonb, 'max_concurrency 7.0 is the integer 7');

-- ---------------------------------------------------------------- tolerated_failures: a count or "p%", with fail only
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": -1}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got -1', 'a negative count');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": 1.5}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got 1.5', 'a fractional count');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": 10000000}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got 10000000',
    'a count over 9999999');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": "5"}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got "5"',
    'a count written as a string (no %)');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": "101%"}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got "101%"',
    'a percentage over 100');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": "-5%"}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got "-5%"',
    'a negative percentage');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": "5.255%"}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got "5.255%"',
    'a percentage with three decimals');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": "x%"}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got "x%"',
    'a percentage that is no number');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": true}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got true', 'a boolean');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "tolerated_failures": null}',
    ', map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got null', 'JSON null');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "on_item_failure": "continue", "tolerated_failures": 2}',
    ', map: tolerated_failures goes with on_item_failure "fail" ("continue" tolerates every failure)',
    'tolerated_failures with on_item_failure continue');
SELECT * FROM pg_temp.refused('{"over": "$.run.images", "on_item_failure": "continue", "tolerated_failures": "5%"}',
    ', map: tolerated_failures goes with on_item_failure "fail" ("continue" tolerates every failure)',
    'a tolerated percentage with on_item_failure continue');
SELECT results_eq(
    $$SELECT t, pg_temp.map_of(flowforge.define_workflow(pg_temp.dag(jsonb_build_object('over', '$.run.images', 'tolerated_failures', t::jsonb),
                                                                   'fo_t' || n))) -> 'tolerated_failures'
      FROM unnest(ARRAY['0', '3', '9999999', '"0%"', '"5%"', '"12.5%"', '"99.99%"', '"100%"']) WITH ORDINALITY AS x(t, n)
      ORDER BY n$$,
    $$VALUES ('0', '0'::jsonb), ('3', '3'), ('9999999', '9999999'), ('"0%"', '"0%"'), ('"5%"', '"5%"'),
             ('"12.5%"', '"12.5%"'), ('"99.99%"', '"99.99%"'), ('"100%"', '"100%"')$$,
    'tolerated_failures accepted as a count 0..9999999 or a percentage 0%..100% (two decimals at most)');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag('{"over": "$.run.images", "on_item_failure": "fail", "tolerated_failures": 2}', 'fo_t9'))),
          '{"over": "$.\"run\".\"images\"", "mode": "map", "max_concurrency": 100, "on_item_failure": "fail", "tolerated_failures": 2}',
          'tolerated_failures with on_item_failure fail (explicit) is accepted');

SELECT is(pg_temp.definition_rows(), '12/12/0/0',
          'of everything above, only the 12 accepted maps wrote a definition (one workflow row, one task row each)');

-- ---------------------------------------------------------------- normalization
SELECT flowforge.define_workflow(pg_temp.dag('{"over": "$.run.images"}', 'fo_norm')) AS norm \gset
SELECT is(pg_temp.map_of(:'norm'),
          '{"over": "$.\"run\".\"images\"", "mode": "map", "max_concurrency": 100, "on_item_failure": "fail"}',
          'defaults filled in (mode map, max_concurrency 100, on_item_failure fail), over as canonical jsonpath text');
SELECT is(flowforge.define_workflow(pg_temp.dag(
              '{"over": "$.\"run\".\"images\"", "mode": "map", "max_concurrency": 100, "on_item_failure": "fail"}', 'fo_norm')),
          :'norm'::uuid, 'the defaults written out and over already canonical: the same content, the same id');
SELECT is(flowforge.define_workflow(pg_temp.dag('{"on_item_failure": "fail", "over": "$.run.images", "max_concurrency": 100.0}', 'fo_norm')),
          :'norm'::uuid, 'fields in another order, 100.0 for 100: the same id');
SELECT is(flowforge.define_workflow(pg_temp.dag('{"over": "$  .  run  .  images"}', 'fo_norm')),
          :'norm'::uuid, 'over written with spaces parses to the same path: the same id');
SELECT isnt(flowforge.define_workflow(pg_temp.dag('{"over": "$.run.photos"}', 'fo_norm')), :'norm'::uuid,
            'another over is another content: a new version');
SELECT is((SELECT max(version) FROM flowforge.workflow WHERE name = 'fo_norm'), 2, 'fo_norm has two versions');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag(
              '{"over": "$.run.items[*] ? (@.size > 2)", "mode": "foreach", "max_concurrency": 3, "on_item_failure": "continue"}', 'fo_n2'))),
          '{"over": "$.\"run\".\"items\"[*]?(@.\"size\" > 2)", "mode": "foreach", "max_concurrency": 3, "on_item_failure": "continue"}',
          'every field given is kept (mode foreach, continue), a filter path canonical too');
SELECT is(pg_temp.map_of(flowforge.define_workflow(pg_temp.dag('{"over": "$"}', 'fo_n3'))) ->> 'over', '$',
          'over "$" (the whole input) is a path, accepted at definition (what it yields is judged at run time)');

-- ---------------------------------------------------------------- task rows: task.spec holds {"map": ...}
SELECT flowforge.define_workflow($${"name": "fo_rows", "tasks": [
    {"key": "list"},
    {"key": "resize", "depends_on": ["list"], "map": {"over": "$.deps.list", "max_concurrency": 4}},
    {"key": "report", "depends_on": ["resize"]}]}$$) AS rows_wf \gset
SELECT results_eq(
    format($$SELECT key::text, spec FROM flowforge.task WHERE workflow_id = %L ORDER BY key$$, :'rows_wf'),
    $$VALUES ('list', NULL::jsonb),
             ('report', NULL),
             ('resize', '{"map": {"over": "$.\"deps\".\"list\"", "mode": "map", "max_concurrency": 4, "on_item_failure": "fail"}}')$$,
    'the fanning task''s row carries its normalized map in task.spec; the others carry no spec');
SELECT is((SELECT spec -> 'tasks' FROM flowforge.workflow WHERE id = :'rows_wf') -> 1 -> 'map',
          '{"over": "$.\"deps\".\"list\"", "mode": "map", "max_concurrency": 4, "on_item_failure": "fail"}',
          'the stored spec carries the same normalized map on its task');
SELECT is((SELECT spec -> 'tasks' FROM flowforge.workflow WHERE id = :'rows_wf') -> 0 ? 'map', false,
          'a task without a map gets no map in the stored spec (its content hash is as before issue 15)');

-- ---------------------------------------------------------------- task_run.fans_out at start_run
SELECT flowforge.start_run('fo_rows', '{}') AS rows_run \gset
SELECT results_eq(
    format($$SELECT task_key::text, fans_out, state::text FROM flowforge.task_run WHERE workflow_run_id = %L ORDER BY task_key$$,
           :'rows_run'),
    $$VALUES ('list', false, 'ready'), ('report', false, 'pending'), ('resize', true, 'pending')$$,
    'start_run marks the fanning task''s run fans_out, and only that one');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint WHERE run_id = :'rows_run'), 0,
          'a fanning task that is not ready yet has no checkpoint');
SELECT col_default_is('flowforge', 'task_run', 'fans_out', false,
                      'a task run written by anything else (an old start_run) does not fan out');

-- ---------------------------------------------------------------- graph nodes
CREATE FUNCTION pg_temp.graph(p_node jsonb, p_name text DEFAULT 'fo_graph') RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', p_name, 'kind', 'graph', 'start', 'work',
        'nodes', jsonb_build_array(jsonb_build_object('key', 'work') || p_node, jsonb_build_object('key', 'done', 'final', true)),
        'edges', jsonb_build_array(jsonb_build_object('from', 'work', 'to', 'done')))
$$;
SELECT pg_temp.definition_rows() AS before \gset
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.graph('{"map": {"over": "$.state.items", "mode": "both"}}')),
                 'FF002', 'invalid workflow definition: node "work", map: mode must be "map" or "foreach", got "both"',
                 'a graph node''s map is validated the same way, the message naming the node');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.graph('{"map": {"over": "$.output.ok == true"}}')),
                 'FF002', 'invalid workflow definition: node "work", map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got "$.output.ok == true"',
                 'a graph node''s over that is a predicate is refused');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.graph('{"map": {"over": "$.state.items", "max_concurrency": 0}}')),
                 'FF002', 'invalid workflow definition: node "work", map: max_concurrency must be an integer between 1 and 10000, got 0',
                 'a graph node''s max_concurrency out of bounds is refused');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.graph('{"map": ["$.state.items"]}')),
                 'FF002', 'invalid workflow definition: node "work": map must be an object such as {"over": "$.run.images", "mode": "map"}',
                 'a graph node''s map that is not an object is refused');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', $${"name": "fo_final", "kind": "graph", "start": "work",
                    "nodes": [{"key": "work"}, {"key": "done", "final": true, "map": {"over": "$.state.items"}}],
                    "edges": [{"from": "work", "to": "done"}]}$$),
                 'FF002', 'invalid workflow definition: node "done": a final node runs nothing and takes only key, final, description (got "map")',
                 'a final node cannot fan out (it runs nothing)');
SELECT is(pg_temp.definition_rows(), :'before', 'the refused graphs wrote nothing');

SELECT flowforge.define_workflow(pg_temp.graph('{"map": {"over": "$.state.items", "mode": "foreach", "tolerated_failures": "10%"}}')) AS g1 \gset
SELECT is((SELECT spec -> 'nodes' -> 0 FROM flowforge.workflow WHERE id = :'g1'),
          '{"key": "work", "map": {"over": "$.\"state\".\"items\"", "mode": "foreach", "max_concurrency": 100, "on_item_failure": "fail", "tolerated_failures": "10%"}, "final": false, "queue": "default", "backoff": "00:00:01", "timeout": null, "priority": 0, "max_backoff": "00:10:00", "max_attempts": 3, "backoff_factor": 2}'::jsonb,
          'a graph node''s map is normalized into the stored spec like a DAG task''s');
SELECT results_eq(
    format($$SELECT key::text, spec FROM flowforge.task WHERE workflow_id = %L ORDER BY key$$, :'g1'),
    $$VALUES ('done', NULL::jsonb),
             ('work', '{"map": {"over": "$.\"state\".\"items\"", "mode": "foreach", "max_concurrency": 100, "on_item_failure": "fail", "tolerated_failures": "10%"}}')$$,
    'the fanning node''s task row carries {"map": ...} in task.spec; the final node none');
SELECT is(flowforge.define_workflow(pg_temp.graph('{"map": {"tolerated_failures": "10%", "mode": "foreach", "over": "$.\"state\".\"items\""}}')),
          :'g1'::uuid, 'the graph node''s map written another way (order, canonical over): the same id');
SELECT is(flowforge.define_workflow(pg_temp.graph('{"map": {"over": "$.state.items", "mode": "foreach", "tolerated_failures": "10%"}, "queue": "default"}')),
          :'g1'::uuid, 'a node default written out beside the map: the same id');

SELECT * FROM finish();
ROLLBACK;
