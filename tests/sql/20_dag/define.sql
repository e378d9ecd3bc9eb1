-- define_workflow: validation, defaults, content versioning.
BEGIN;
SELECT plan(85);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Rows a definition writes, as "workflows/tasks/dependencies".
CREATE FUNCTION pg_temp.definition_rows() RETURNS text LANGUAGE sql AS $$
    SELECT format('%s/%s/%s',
        (SELECT count(*) FROM flowforge.workflow),
        (SELECT count(*) FROM flowforge.task),
        (SELECT count(*) FROM flowforge.task_dependency))
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

-- ---------------------------------------------------------------- valid specs
CREATE TEMP TABLE ids (label text PRIMARY KEY, id uuid);

INSERT INTO ids SELECT 'single', flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only"}]}');
SELECT isnt((SELECT id FROM ids WHERE label = 'single'), NULL, 'a valid spec returns the id of the workflow version');
SELECT results_eq(
    $$SELECT name::text, version, kind::text, organization_id FROM flowforge.workflow WHERE id = (SELECT id FROM ids WHERE label = 'single')$$,
    $$VALUES ('single', 1, 'dag', '00000000-0000-0000-0000-000000000001'::uuid)$$,
    'the first definition of a name is version 1, kind dag, in the default organization');
SELECT results_eq(
    $$SELECT key::text, queue::text, priority, max_attempts, backoff, backoff_factor, max_backoff, timeout, dependency_count
      FROM flowforge.task WHERE workflow_id = (SELECT id FROM ids WHERE label = 'single')$$,
    $$VALUES ('only', 'default', 0, 3, interval '1 second', 2::numeric, interval '10 minutes', NULL::interval, 0)$$,
    'an omitted task field gets its default (queue default, priority 0, 3 attempts, 1s backoff, factor 2, 10 min cap, no timeout)');

-- Same content again: same id, nothing written.
SELECT pg_temp.definition_rows() AS before \gset
SELECT is(flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only"}]}'),
          (SELECT id FROM ids WHERE label = 'single'), 'the same spec again returns the same id');
SELECT is(flowforge.define_workflow($${
    "name": "single", "kind": "dag",
    "tasks": [{"key": "only", "depends_on": [], "queue": "default", "priority": 0, "max_attempts": 3,
               "backoff": "00:00:01", "backoff_factor": 2, "max_backoff": "600 seconds", "timeout": null}]}$$),
    (SELECT id FROM ids WHERE label = 'single'),
    'defaults written out explicitly, durations written differently ("00:00:01", "600 seconds"): the same id');
SELECT is(flowforge.define_workflow(
    '{"tasks": [{"max_backoff": "PT10M", "backoff": "1 second", "key": "only"}], "name": "single"}'),
    (SELECT id FROM ids WHERE label = 'single'),
    'fields in another order, ISO 8601 durations: the same id');
SELECT is(flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only", "backoff_factor": 2.0, "max_attempts": 3.0}]}'),
    (SELECT id FROM ids WHERE label = 'single'),
    'numbers written differently (2.0 for 2, 3.0 for 3): the same id');
SET LOCAL intervalstyle = 'iso_8601';
SELECT is(flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only"}]}'),
    (SELECT id FROM ids WHERE label = 'single'),
    'the same spec under another session IntervalStyle: the same id (the content hash does not depend on session settings)');
RESET intervalstyle;
SELECT is(pg_temp.definition_rows(), :'before', 'defining the same content again wrote nothing');

INSERT INTO ids SELECT 'timed', flowforge.define_workflow('{"name": "timed", "tasks": [{"key": "t", "timeout": "1 minute"}]}');
SELECT is(flowforge.define_workflow('{"name": "timed", "tasks": [{"key": "t", "timeout": "60 seconds"}]}'),
    (SELECT id FROM ids WHERE label = 'timed'), 'timeout "1 minute" and "60 seconds" are the same content');
SELECT is((SELECT timeout FROM flowforge.task WHERE workflow_id = (SELECT id FROM ids WHERE label = 'timed')),
    interval '1 minute', 'the task row carries the timeout');

-- Every field given explicitly lands in the task row.
INSERT INTO ids SELECT 'explicit', flowforge.define_workflow($${"name": "explicit", "tasks": [
    {"key": "x", "queue": "emails.high", "priority": -5, "max_attempts": 7, "backoff": "2 seconds",
     "backoff_factor": 1.5, "max_backoff": "1 minute", "timeout": "30 seconds"}]}$$);
SELECT results_eq(
    $$SELECT queue::text, priority, max_attempts, backoff, backoff_factor, max_backoff, timeout
      FROM flowforge.task WHERE workflow_id = (SELECT id FROM ids WHERE label = 'explicit')$$,
    $$VALUES ('emails.high', -5, 7, interval '2 seconds', 1.5::numeric, interval '1 minute', interval '30 seconds')$$,
    'explicit task fields are stored as given');

-- The diamond: dependency_count and task_dependency rows match the spec.
INSERT INTO ids SELECT 'diamond', flowforge_test.define_diamond();
SELECT results_eq(
    $$SELECT key::text, dependency_count FROM flowforge.task
      WHERE workflow_id = (SELECT id FROM ids WHERE label = 'diamond') ORDER BY key$$,
    $$VALUES ('a', 0), ('b', 1), ('c', 1), ('d', 2)$$,
    'dependency_count is the number of direct dependencies');
SELECT set_eq(
    $$SELECT t.key::text AS task, up.key::text AS depends_on FROM flowforge.task_dependency td
      JOIN flowforge.task t ON t.id = td.task_id JOIN flowforge.task up ON up.id = td.depends_on_task_id
      WHERE td.workflow_id = (SELECT id FROM ids WHERE label = 'diamond')$$,
    $$VALUES ('b', 'a'), ('c', 'a'), ('d', 'b'), ('d', 'c')$$,
    'one task_dependency row per edge, and no other');
SELECT is((SELECT count(*)::int FROM flowforge.task WHERE workflow_id = (SELECT id FROM ids WHERE label = 'diamond')), 4,
    'one task row per task');
SELECT is(flowforge.define_workflow($${"name": "diamond", "tasks": [
    {"key": "a"}, {"key": "b", "depends_on": ["a"]}, {"key": "c", "depends_on": ["a"]}, {"key": "d", "depends_on": ["b", "c"]}]}$$),
    (SELECT id FROM ids WHERE label = 'diamond'), 'the diamond defined again by hand: the same id');

-- A changed spec is version 2, and runs start the latest version.
SELECT pg_temp.definition_rows() AS before \gset
INSERT INTO ids SELECT 'single v2', flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only", "max_attempts": 5}]}');
SELECT isnt((SELECT id FROM ids WHERE label = 'single v2'), (SELECT id FROM ids WHERE label = 'single'),
    'a changed spec gets a new id');
SELECT is((SELECT version FROM flowforge.workflow WHERE id = (SELECT id FROM ids WHERE label = 'single v2')), 2,
    'a changed spec under the same name is version 2');
SELECT is(pg_temp.definition_rows(), (split_part(:'before', '/', 1)::int + 1) || '/' || (split_part(:'before', '/', 2)::int + 1) || '/' || split_part(:'before', '/', 3),
    'version 2 wrote one workflow row and its task row');
SELECT is((SELECT version FROM flowforge.workflow WHERE id = (SELECT id FROM ids WHERE label = 'single')), 1,
    'version 1 is kept unchanged');
SELECT flowforge.start_run('single') AS run_id \gset
SELECT is((SELECT workflow_id FROM flowforge.workflow_run WHERE id = :'run_id'),
    (SELECT id FROM ids WHERE label = 'single v2'), 'start_run starts the latest version');
SELECT is((SELECT max_attempts FROM flowforge.task_run WHERE workflow_run_id = :'run_id'),
    5, 'the run''s task comes from the latest version');
SELECT is(flowforge.define_workflow('{"name": "single", "tasks": [{"key": "only", "max_attempts": 5}]}'),
    (SELECT id FROM ids WHERE label = 'single v2'), 'version 2''s content again returns version 2');

-- A name of 63 characters is fine.
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L)',
    jsonb_build_object('name', 'n' || repeat('x', 62), 'tasks', '[{"key": "k"}]'::jsonb)),
    'a name of 63 characters is accepted');

-- ---------------------------------------------------------------- rejections
SELECT pg_temp.definition_rows() AS before \gset

SELECT * FROM pg_temp.refused('[]', 'spec is an array, not an object');
SELECT * FROM pg_temp.refused('"etl"', 'spec is a string, not an object');
SELECT * FROM pg_temp.refused(NULL, 'spec is NULL');
SELECT * FROM pg_temp.refused('{"tasks": [{"key": "a"}]}', 'missing name');
SELECT * FROM pg_temp.refused('{"name": "has space", "tasks": [{"key": "a"}]}', 'name with a space');
SELECT * FROM pg_temp.refused(jsonb_build_object('name', 'n' || repeat('x', 63), 'tasks', '[{"key": "a"}]'::jsonb),
                              'name of 64 characters');
SELECT * FROM pg_temp.refused('{"name": "1etl", "tasks": [{"key": "a"}]}', 'name starting with a digit');
SELECT * FROM pg_temp.refused('{"name": 7, "tasks": [{"key": "a"}]}', 'name not a string');
SELECT * FROM pg_temp.refused('{"name": "unk1", "tasks": [{"key": "a"}], "schedule": "daily"}', 'unknown top-level field');
SELECT * FROM pg_temp.refused('{"name": "unk2", "tasks": [{"key": "a", "retries": 3}]}', 'unknown task field');
SELECT * FROM pg_temp.refused('{"name": "graph1", "kind": "graph", "tasks": [{"key": "a"}]}', 'kind "graph"');
SELECT * FROM pg_temp.refused('{"name": "notasks"}', 'no tasks field');
SELECT * FROM pg_temp.refused('{"name": "notasks", "tasks": []}', 'empty tasks');
SELECT * FROM pg_temp.refused('{"name": "notasks", "tasks": {"key": "a"}}', 'tasks not an array');
SELECT * FROM pg_temp.refused('{"name": "nokey", "tasks": [{"queue": "default"}]}', 'task without key');
SELECT * FROM pg_temp.refused('{"name": "dup", "tasks": [{"key": "a"}, {"key": "a"}]}', 'duplicate task keys');
SELECT * FROM pg_temp.refused('{"name": "unkdep", "tasks": [{"key": "a", "depends_on": ["zz"]}]}', 'unknown dependency');
SELECT * FROM pg_temp.refused('{"name": "selfdep", "tasks": [{"key": "a", "depends_on": ["a"]}]}', 'self-dependency');
SELECT * FROM pg_temp.refused(
    '{"name": "cycle3", "tasks": [{"key": "a", "depends_on": ["c"]}, {"key": "b", "depends_on": ["a"]}, {"key": "c", "depends_on": ["b"]}, {"key": "e"}]}',
    'a 3-cycle');
SELECT throws_matching(
    $$SELECT flowforge.define_workflow('{"name": "cycle3", "tasks": [{"key": "a", "depends_on": ["c"]}, {"key": "b", "depends_on": ["a"]}, {"key": "c", "depends_on": ["b"]}, {"key": "e"}]}')$$,
    'cycle.*(a -> c -> b -> a|c -> b -> a -> c|b -> a -> c -> b)',
    'the cycle is named in the message');
SELECT throws_matching(
    $$SELECT flowforge.define_workflow('{"name": "selfdep", "tasks": [{"key": "a", "depends_on": ["a"]}]}')$$,
    'cycle.*a -> a', 'a self-dependency is reported as the cycle a -> a');
SELECT * FROM pg_temp.refused('{"name": "ma0", "tasks": [{"key": "a", "max_attempts": 0}]}', 'max_attempts 0');
SELECT * FROM pg_temp.refused('{"name": "negb", "tasks": [{"key": "a", "backoff": "-1 seconds"}]}', 'negative backoff');
SELECT * FROM pg_temp.refused('{"name": "to0", "tasks": [{"key": "a", "timeout": "0 seconds"}]}', 'timeout "0 seconds"');
SELECT * FROM pg_temp.refused('{"name": "toneg", "tasks": [{"key": "a", "timeout": "-5 seconds"}]}', 'negative timeout');
SELECT * FROM pg_temp.refused('{"name": "mb", "tasks": [{"key": "a", "backoff": "10 seconds", "max_backoff": "5 seconds"}]}',
                              'max_backoff shorter than backoff');
SELECT * FROM pg_temp.refused('{"name": "bnd", "tasks": [{"key": "a", "backoff": "soon"}]}', 'backoff not a duration');
SELECT * FROM pg_temp.refused('{"name": "bnum", "tasks": [{"key": "a", "backoff": 5}]}', 'backoff a number, not a duration string');
SELECT * FROM pg_temp.refused('{"name": "prio", "tasks": [{"key": "a", "priority": "high"}]}', 'priority not a number');
SELECT * FROM pg_temp.refused('{"name": "prio", "tasks": [{"key": "a", "priority": 1.5}]}', 'priority not an integer');
SELECT * FROM pg_temp.refused('{"name": "twice", "tasks": [{"key": "a"}, {"key": "b", "depends_on": ["a", "a"]}]}',
                              'depends_on naming a task twice');

SELECT is(pg_temp.definition_rows(), :'before', 'after every rejection, no definition row was written');

SELECT * FROM finish();
ROLLBACK;
