-- claim(task_names => ...): a worker takes only the tasks it has handlers for.
-- Before: a worker took every task on its queues and failed for good the ones
-- it had no handler for — another service's tasks on a shared queue (issue 11).
BEGIN;
SELECT plan(9);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge.define_workflow('{"name": "mixed", "tasks": [
    {"key": "extract", "queue": "shared"},
    {"key": "transform", "queue": "shared", "priority": 5},
    {"key": "load", "queue": "shared", "priority": 9}]}');
SELECT flowforge.start_run('mixed') FROM generate_series(1, 3);

CREATE TEMP TABLE mine AS
SELECT * FROM flowforge.claim(queues => ARRAY['shared'], worker => 'w-extract', batch => 10, task_names => ARRAY['extract']);
SELECT is((SELECT count(*)::int FROM mine), 3, 'the three extract tasks are claimed');
SELECT is((SELECT array_agg(DISTINCT task_key) FROM mine), ARRAY['extract'], 'and nothing but extract');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE task_key IN ('transform', 'load') AND state = 'ready'), 6,
    'tasks nobody here handles stay ready (and visible)');

CREATE TEMP TABLE two AS
SELECT * FROM flowforge.claim(ARRAY['shared'], 'w-two', '30 seconds', 4, ARRAY['transform', 'load', 'load']);
SELECT is((SELECT count(*)::int FROM two), 4, 'several names fill the batch (a name given twice counts once)');
SELECT is((SELECT count(*)::int FROM two WHERE task_key = 'transform'), 3, 'lowest priority number first across the names: every transform');
SELECT is((SELECT count(*)::int FROM two WHERE task_key = 'load'), 1, 'then one load');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['shared'], 'w', '30 seconds', 10, ARRAY['unknown'])), 0,
    'a name with no ready task claims nothing');

SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['shared'], 'w', '30 seconds', 1, ARRAY[]::text[])$$,
    'FF003', NULL, 'an empty task_names is FF003 (NULL means any task)');
SELECT throws_ok($$SELECT * FROM flowforge.claim(ARRAY['shared'], 'w', '30 seconds', 1, ARRAY['a', NULL])$$,
    'FF003', NULL, 'a NULL task name is FF003');

SELECT * FROM finish();
ROLLBACK;
