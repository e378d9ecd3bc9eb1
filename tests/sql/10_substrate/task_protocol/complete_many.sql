-- complete_many: batched completion with per-task outcomes.
BEGIN;
SELECT plan(16);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_diamond('batch_dag');
SELECT flowforge_test.define_single('batch_one');

CREATE TEMP TABLE runs AS SELECT flowforge.start_run('batch_dag') AS id FROM generate_series(1, 2);
INSERT INTO runs SELECT flowforge.start_run('batch_one');
CREATE TEMP TABLE c1 AS SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '30 seconds', 10);
SELECT is((SELECT count(*)::int FROM c1), 3, 'fixture: three roots claimed');
CREATE TEMP TABLE ev0 AS SELECT count(*) AS n FROM flowforge.task_run_event;

CREATE TEMP TABLE out1 AS
SELECT * FROM flowforge.complete_many(
    (SELECT array_agg(task_run_id ORDER BY task_run_id) FROM c1),
    (SELECT array_agg(fencing_token ORDER BY task_run_id) FROM c1),
    (SELECT array_agg(jsonb_build_object('k', task_key) ORDER BY task_run_id) FROM c1));
SELECT is((SELECT array_agg(DISTINCT outcome) FROM out1), ARRAY['completed'], 'every current holder completes');
SELECT results_eq($$SELECT task_run_id FROM out1$$, $$SELECT task_run_id FROM c1 ORDER BY task_run_id$$,
    'one outcome per task, in the order given');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE id IN (SELECT task_run_id FROM c1) AND state = 'succeeded'
                                                        AND output = jsonb_build_object('k', task_key)), 3,
    'each task succeeded with its own output');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE workflow_run_id IN (SELECT id FROM runs)
                                                        AND task_key IN ('b', 'c') AND state = 'ready'), 4,
    'dependents released in the same call');
SELECT is(flowforge_test.run_state((SELECT id FROM runs OFFSET 2)), 'succeeded', 'a single-task run settles');
SELECT is(((SELECT count(*) FROM flowforge.task_run_event) - (SELECT n FROM ev0))::int, 3 + 4 + 1,
    'events: completed ×3, released ×4, run_succeeded ×1');

-- Refusals are per task and do not abort the batch.
CREATE TEMP TABLE c2 AS SELECT * FROM flowforge.claim(ARRAY['default'], 'w', '30 seconds', 10);
SELECT is((SELECT count(*)::int FROM c2), 4, 'fixture: b and c of both runs claimed');
CREATE TEMP TABLE out2 AS
SELECT * FROM flowforge.complete_many(
    ARRAY[(SELECT task_run_id FROM c2 ORDER BY task_run_id LIMIT 1),
          (SELECT task_run_id FROM c2 ORDER BY task_run_id OFFSET 1 LIMIT 1),
          (SELECT task_run_id FROM c1 LIMIT 1),
          gen_random_uuid()],
    ARRAY[(SELECT fencing_token FROM c2 ORDER BY task_run_id LIMIT 1),
          (SELECT fencing_token + 1 FROM c2 ORDER BY task_run_id OFFSET 1 LIMIT 1),
          (SELECT fencing_token FROM c1 LIMIT 1),
          1],
    NULL);
SELECT results_eq($$SELECT outcome FROM out2$$,
    $$VALUES ('completed'::text), ('stale'), ('not_running'), ('not_found')$$,
    'completed, stale token, already succeeded, unknown id — each reported, none aborts the batch');
SELECT is((SELECT state::text FROM flowforge.task_run WHERE id = (SELECT task_run_id FROM c2 ORDER BY task_run_id OFFSET 1 LIMIT 1)),
    'running', 'the stale write changed nothing');

-- A join released by two completions in one batch becomes ready exactly once.
CREATE TEMP TABLE rest AS SELECT * FROM c2 WHERE task_run_id NOT IN (SELECT task_run_id FROM out2 WHERE outcome = 'completed');
SELECT is((SELECT count(*)::int FROM flowforge.complete_many(
              (SELECT array_agg(task_run_id) FROM rest), (SELECT array_agg(fencing_token) FROM rest), NULL)
           WHERE outcome = 'completed'), 3, 'the rest complete');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE task_key = 'd' AND state = 'ready'
                                                        AND workflow_run_id IN (SELECT id FROM runs)), 2,
    'both joins are ready');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE kind = 'released'
                                                             AND task_run_id IN (SELECT id FROM flowforge.task_run WHERE task_key = 'd')), 2,
    'each join was released exactly once');

SELECT throws_ok($$SELECT * FROM flowforge.complete_many(ARRAY[gen_random_uuid()], ARRAY[1, 2]::bigint[], NULL)$$,
    'FF003', NULL, 'arrays of different lengths are FF003');
SELECT throws_ok($$SELECT * FROM flowforge.complete_many(ARRAY[gen_random_uuid()], ARRAY[1]::bigint[], ARRAY['{}', '{}']::jsonb[])$$,
    'FF003', NULL, 'outputs of another length are FF003');
SELECT throws_ok($$SELECT * FROM flowforge.complete_many(
                     (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1001)),
                     (SELECT array_agg(1::bigint) FROM generate_series(1, 1001)), NULL)$$,
    'FF003', NULL, 'more than 1000 items is FF003');

SELECT * FROM finish();
ROLLBACK;
