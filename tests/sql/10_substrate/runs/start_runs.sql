-- start_runs: many runs of one workflow in one call, each complete (its task
-- runs, directory row, events, audit row), one id per input in input order;
-- start_run's refusals and idempotency rules, with nothing written when any
-- input is refused.
BEGIN;
SELECT plan(36);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_diamond('bulk_dag', '{"queue": "bulk"}');

CREATE TEMP TABLE got AS
SELECT row_number() OVER () AS n, id
FROM flowforge.start_runs('bulk_dag', ARRAY['{"i": 1}', '{"i": 2}', NULL, '{"i": 4}']::jsonb[]) AS id;
SELECT is((SELECT count(*)::int FROM got), 4, 'one id per input');
SELECT is((SELECT count(DISTINCT id)::int FROM got), 4, 'four different runs');
SELECT results_eq($$SELECT w.input::jsonb FROM got g JOIN flowforge.workflow_run w ON w.id = g.id ORDER BY g.n$$,
                  $$VALUES ('{"i": 1}'::jsonb), ('{"i": 2}'), ('{}'), ('{"i": 4}')$$,
                  'ids come back in input order; a NULL input is {}');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.workflow_run w ON w.id = g.id
            WHERE w.state = 'running' AND w.tasks_total = 4 AND w.tasks_remaining = 4
              AND w.started_at = '2030-01-01 00:00:00+00' AND w.idempotency_key IS NULL), 4,
          'every run is running with its counters');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.task_run tr ON tr.workflow_run_id = g.id), 16,
          'every run has its four task runs');
SELECT is((SELECT string_agg(tr.task_key || '=' || tr.state || '/' || tr.remaining_deps, ' ' ORDER BY tr.task_key)
            FROM flowforge.task_run tr WHERE tr.workflow_run_id = (SELECT id FROM got WHERE n = 2)),
          'a=ready/0 b=pending/1 c=pending/1 d=pending/2'::text,
          'the task runs of one run, as start_run makes them (d waits on b and c)');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.engine_run e ON e.run_id = g.id
            WHERE e.engine_kind = 'dag' AND e.ended_at IS NULL
              AND e.definition_id = (SELECT id FROM flowforge.workflow WHERE name = 'bulk_dag')), 4,
          'every run has its directory row');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.task_run_event e ON e.workflow_run_id = g.id
            WHERE e.kind = 'run_started' AND e.task_run_id IS NULL AND e.to_state = 'running'), 4,
          'one run_started per run');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.task_run_event e ON e.workflow_run_id = g.id
            WHERE e.kind = 'created'), 16, 'one created event per task run');
SELECT is((SELECT count(*)::int FROM got g JOIN flowforge.audit_log a ON a.entity_id = g.id::text
            WHERE a.action = 'start' AND a.entity = 'workflow_run' AND a.fields = ARRAY['workflow', 'input']), 4,
          'every run started is audited like start_run');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['bulk'], 'w', '30 seconds', 100)), 4,
          'the roots of all four runs are claimable');

SELECT is((SELECT count(*)::int FROM flowforge.start_runs('bulk_dag', '{}'::jsonb[])), 0,
          'no inputs: no runs');

-- Refusals: nothing is written.
CREATE TEMP TABLE before AS SELECT (SELECT count(*) FROM flowforge.workflow_run) AS runs,
                                   (SELECT count(*) FROM flowforge.task_run_event) AS events,
                                   (SELECT count(*) FROM flowforge.engine_run) AS dir;
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', NULL)$$, 'FF003', NULL, 'inputs NULL: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', array_fill('{}'::jsonb, ARRAY[100001]))$$, 'FF003',
                 NULL, 'over 100,000 inputs: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', ARRAY['{}', '{}']::jsonb[], ARRAY['k']::text[])$$,
                 'FF003', NULL, 'keys not parallel to inputs: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', ARRAY['{}', '[1]', '{}']::jsonb[])$$, 'FF003',
                 'run input 2 must be a JSON object, got array', 'an input not an object: FF003 naming its position');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', ARRAY['{}', '{}']::jsonb[], ARRAY[NULL, '']::text[])$$,
                 'FF003', 'idempotency key 2 must be 1 to 200 characters', 'an empty key: FF003 naming its position');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag',
                     ARRAY['{}', jsonb_build_object('big', repeat('x', 1100000))]::jsonb[])$$,
                 'FF009', NULL, 'an input over the size limit: FF009');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag',
                     ARRAY['{}', jsonb_build_object('x', (repeat('[', 64) || '1' || repeat(']', 64))::jsonb)]::jsonb[])$$,
                 'FF009', 'run input 2: run input is nested more than 64 levels deep',
                 'an input nested deeper than the limit: FF009 naming its position');
SAVEPOINT deep;
SELECT is((SELECT count(*)::int FROM flowforge.start_runs('bulk_dag',
              ARRAY[jsonb_build_object('x', (repeat('[', 63) || '1' || repeat(']', 63))::jsonb)]::jsonb[])), 1,
          'an input nested exactly to the limit is accepted');
ROLLBACK TO SAVEPOINT deep;
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('no_such_workflow', ARRAY['{}']::jsonb[])$$, 'FF001', NULL,
                 'unknown workflow: FF001');
SELECT is((SELECT row((SELECT count(*) FROM flowforge.workflow_run), (SELECT count(*) FROM flowforge.task_run_event),
                      (SELECT count(*) FROM flowforge.engine_run))::text),
          (SELECT row(runs, events, dir)::text FROM before), 'a refused call wrote nothing');

-- Idempotency keys: the rules of start_run, within one call and across calls.
CREATE TEMP TABLE keyed AS
SELECT row_number() OVER () AS n, id
FROM flowforge.start_runs('bulk_dag', ARRAY['{"o": 1}', '{"o": 2}', '{"o": 1}', '{"o": 3}']::jsonb[],
                          ARRAY['order-1', 'order-2', 'order-1', NULL]::text[]) AS id;
SELECT is((SELECT id FROM keyed WHERE n = 3), (SELECT id FROM keyed WHERE n = 1),
          'a key repeated in one call with the same input names the same run');
SELECT is((SELECT count(DISTINCT id)::int FROM keyed), 3, 'three runs for four inputs');
SELECT is((SELECT count(*)::int FROM flowforge.workflow_run w JOIN keyed k ON k.id = w.id
            WHERE w.idempotency_key IS NOT DISTINCT FROM CASE k.n WHEN 1 THEN 'order-1' WHEN 2 THEN 'order-2'
                                                                  WHEN 3 THEN 'order-1' END), 4,
          'each run records its key');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log a WHERE a.entity_id IN (SELECT id::text FROM keyed)
            AND a.fields = ARRAY['workflow', 'input', 'idempotency_key']), 2,
          'keyed runs are audited with the key field, once each');
SELECT is((SELECT array_agg(id ORDER BY n) FROM flowforge.start_runs('bulk_dag',
              ARRAY['{"o": 2}', '{"o": 5}']::jsonb[], ARRAY['order-2', 'order-5']::text[]) WITH ORDINALITY AS s(id, n))
            [1], (SELECT id FROM keyed WHERE n = 2), 'a key from an earlier call names its run');
SELECT is((SELECT count(*)::int FROM flowforge.workflow_run WHERE idempotency_key = 'order-2'), 1,
          'and starts nothing for it');
SELECT is(flowforge.start_run('bulk_dag', '{"o": 5}', 'order-5'),
          (SELECT workflow_run_id FROM flowforge.idempotency_key WHERE key = 'order-5'),
          'start_run honours a key start_runs took');
DELETE FROM before;
INSERT INTO before SELECT (SELECT count(*) FROM flowforge.workflow_run), (SELECT count(*) FROM flowforge.task_run_event),
                          (SELECT count(*) FROM flowforge.engine_run);
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', ARRAY['{"o": 9}', '{"o": 99}']::jsonb[],
                                                      ARRAY['order-9', 'order-1']::text[])$$,
                 'FF006', NULL, 'a key reused for a different input: FF006');
SELECT throws_ok($$SELECT * FROM flowforge.start_runs('bulk_dag', ARRAY['{"o": 7}', '{"o": 8}']::jsonb[],
                                                      ARRAY['order-7', 'order-7']::text[])$$,
                 'FF006', NULL, 'one key for two different inputs in one call: FF006');
SELECT is((SELECT row((SELECT count(*) FROM flowforge.workflow_run), (SELECT count(*) FROM flowforge.task_run_event),
                      (SELECT count(*) FROM flowforge.engine_run))::text),
          (SELECT row(runs, events, dir)::text FROM before), 'the refused calls wrote nothing');
SELECT is((SELECT count(*)::int FROM flowforge.idempotency_key WHERE key IN ('order-9', 'order-7')), 0,
          'not even their keys');

-- Other kinds: each run started by its engine, as start_run would.
SELECT flowforge_test.define_graph_single('bulk_graph', '{"queue": "bulk_g"}');
CREATE TEMP TABLE graphs AS SELECT id FROM flowforge.start_runs('bulk_graph', ARRAY['{"g": 1}', '{"g": 2}']::jsonb[]) AS id;
SELECT is((SELECT count(*)::int FROM graphs g JOIN flowforge.engine_run e ON e.run_id = g.id WHERE e.engine_kind = 'graph'),
          2, 'a graph workflow: two graph runs in the directory');
SELECT is((SELECT count(*)::int FROM graphs g JOIN flowforge.work_item w ON w.run_id = g.id WHERE w.status = 'pending'), 2,
          'each entered its start node (one pending work item each)');
SELECT is((SELECT count(*)::int FROM graphs g JOIN flowforge.audit_log a ON a.entity_id = g.id::text), 2,
          'and is audited');

SELECT * FROM finish();
ROLLBACK;
