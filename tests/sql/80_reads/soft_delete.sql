-- Soft delete (issue 19, seed 002): delete_run (finished runs only, FF005
-- otherwise) and delete_workflow set deleted_at / deleted_by; listings hide
-- deleted rows unless include_deleted => true; a deleted definition starts no
-- run (FF013), by start_run or by a trigger; nothing a run's history needs is
-- lost — get_run, run_events, get_workflow(name, version), the firings and
-- the audit trail read it as before.
BEGIN;
SELECT plan(50);
SELECT flowforge_test.freeze_clock('2030-04-01 00:00:00+00');

SELECT isnt(flowforge_test.define_single('sd_single'), NULL, 'fixture: sd_single v1');
SELECT isnt(flowforge_test.define_single('sd_single', '{"priority": 3}'), NULL, 'fixture: sd_single v2');
SELECT isnt(flowforge_test.define_graph_single('sd_graph'), NULL, 'fixture: sd_graph');
CREATE TEMP TABLE runs (k text PRIMARY KEY, id uuid NOT NULL);
INSERT INTO runs VALUES ('live', flowforge.start_run('sd_single', '{"n": 1}'));
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs VALUES ('done', flowforge.start_run('sd_single', '{"n": 2}'));
SELECT lives_ok($$SELECT flowforge.complete(c.task_run_id, c.fencing_token, '{"ok": true}')
                  FROM flowforge_test.claim_key((SELECT id FROM runs WHERE k = 'done'), 'only') c$$, 'fixture: run done succeeded');
SELECT flowforge_test.advance_clock('1 second');
INSERT INTO runs VALUES ('graph', flowforge.start_run('sd_graph'));
SELECT id AS live FROM runs WHERE k = 'live' \gset
SELECT id AS done FROM runs WHERE k = 'done' \gset
SELECT id AS graph FROM runs WHERE k = 'graph' \gset

-- ------------------------------------------------------------------ delete_run
SELECT throws_ok(format('SELECT flowforge.delete_run(%L)', :'live'), 'FF005',
                 format('delete_run refused: run %s is running', :'live'), 'a running DAG run cannot be deleted: FF005');
SELECT throws_ok(format('SELECT flowforge.delete_run(%L)', :'graph'), 'FF005', NULL, 'nor a running graph run');
SELECT throws_ok(format('SELECT flowforge.delete_run(%L)', gen_random_uuid()), 'FF001', NULL, 'an unknown run: FF001');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE deleted_at IS NOT NULL), 0, 'the refusals wrote nothing');
SELECT flowforge_test.advance_clock('1 minute');
SELECT lives_ok(format('SELECT flowforge.delete_run(%L)', :'done'), 'a succeeded run is deleted');
SELECT results_eq(format($$SELECT e.deleted_at, e.deleted_by, r.deleted_at, r.deleted_by, e.updated_by FROM flowforge.engine_run e
                           JOIN flowforge.workflow_run r ON r.id = e.run_id WHERE e.run_id = %L$$, :'done'),
                  $$VALUES ('2030-04-01 00:01:02+00'::timestamptz, 'postgres'::text, '2030-04-01 00:01:02+00'::timestamptz,
                            'postgres'::text, 'postgres'::text)$$,
                  'deleted_at / deleted_by on the directory row and the DAG run row');
SELECT results_eq($$SELECT id FROM flowforge.list_runs(workflow => 'sd_single')$$,
                  format($$VALUES (%L::uuid)$$, :'live'), 'list_runs hides it');
SELECT results_eq($$SELECT id, deleted_at IS NOT NULL FROM flowforge.list_runs(workflow => 'sd_single', include_deleted => true)$$,
                  format($$VALUES (%L::uuid, true), (%L::uuid, false)$$, :'done', :'live'),
                  'include_deleted => true shows it, newest first, with deleted_at');
SELECT is(flowforge.get_run(:'done') ->> 'state', 'succeeded', 'get_run still reads it');
SELECT is((flowforge.get_run(:'done') ->> 'deleted_at')::timestamptz, '2030-04-01 00:01:02+00', 'and says when it was deleted');
SELECT is(flowforge.get_run(:'done') #>> '{tasks,0,output}', '{"ok": true}', 'its task output is kept');
SELECT is((SELECT array_agg(kind ORDER BY seq) FROM flowforge.run_events(:'done')),
          ARRAY['run_started', 'created', 'claimed', 'completed', 'run_succeeded'], 'its history is kept, whole');
SELECT is(flowforge.resolve_run(:'done') ->> 'deleted_by', 'postgres', 'resolve_run says who deleted it');
SELECT throws_ok(format('SELECT flowforge.retry_run(%L)', :'done'), 'FF013', NULL, 'a deleted run cannot be retried: FF013');
SELECT throws_ok(format('SELECT flowforge.delete_run(%L)', :'done'), 'FF013', NULL, 'nor deleted again: FF013');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE action = 'delete' AND entity = 'workflow_run' AND entity_id = :'done'),
          1, 'the deletion is audited once');
SELECT is(flowforge.start_run('sd_single', '{"n": 2}', 'sd-key') IS NOT NULL, true, 'fixture: a run with an idempotency key');
SELECT lives_ok($$SELECT flowforge.cancel_run(flowforge.start_run('sd_single', '{"n": 2}', 'sd-key'))$$, 'fixture: cancelled');
SELECT lives_ok($$SELECT flowforge.delete_run(flowforge.start_run('sd_single', '{"n": 2}', 'sd-key'))$$, 'a cancelled run is deleted');
SELECT is(flowforge.get_run(flowforge.start_run('sd_single', '{"n": 2}', 'sd-key')) ->> 'deleted_by', 'postgres',
          'its idempotency key still answers with it (the request was served)');
-- A finished graph run: the engine's own row is marked too.
SELECT lives_ok(format('SELECT flowforge.cancel_run(%L)', :'graph'), 'fixture: the graph run cancelled');
SELECT lives_ok(format('SELECT flowforge.delete_run(%L)', :'graph'), 'a cancelled graph run is deleted');
SELECT isnt((SELECT deleted_at FROM flowforge.graph_run WHERE run_id = :'graph'), NULL, 'graph_run.deleted_at is set');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(of_kind => 'graph')), 0, 'list_runs(of_kind => graph) hides it');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(of_kind => 'graph', include_deleted => true)), 1, 'and shows it on request');
-- Rights: a viewer deletes nothing; a member only its own runs (ownership.sql has the scope).
SELECT flowforge_test.login('ff_sd_viewer', 'default', 'viewer');
SELECT is(flowforge_test.as_login('ff_sd_viewer', format('SELECT to_jsonb(1) FROM (SELECT flowforge.delete_run(%L)) x', :'live')) ->> 'sqlstate',
          'FF007', 'a viewer cannot delete a run: FF007');
SELECT is(flowforge_test.as_login('ff_sd_viewer', $$SELECT to_jsonb(flowforge.delete_workflow('sd_single'))$$) ->> 'sqlstate',
          'FF007', 'nor a workflow');

-- ------------------------------------------------------------------ delete_workflow
SELECT isnt(flowforge.create_trigger('sd-hook', 'webhook', 'start', 'sd_single', '{"secret": "0123456789abcdef"}'), NULL,
            'fixture: a trigger that starts sd_single');
SELECT throws_ok($$SELECT flowforge.delete_workflow('sd_nope')$$, 'FF001', 'workflow ''sd_nope'' not found',
                 'an unknown workflow: FF001');
SELECT flowforge_test.advance_clock('1 minute');
SELECT is(flowforge.delete_workflow('sd_single'), 2, 'delete_workflow deletes every version of the name (2)');
SELECT results_eq($$SELECT version, deleted_at, deleted_by FROM flowforge.workflow WHERE name = 'sd_single' ORDER BY version$$,
                  $$VALUES (1, '2030-04-01 00:02:02+00'::timestamptz, 'postgres'::text), (2, '2030-04-01 00:02:02+00', 'postgres')$$,
                  'each version says when and by whom');
SELECT throws_ok($$SELECT flowforge.start_run('sd_single')$$, 'FF013', NULL, 'a deleted workflow starts no run: FF013');
SELECT throws_ok($$SELECT flowforge.start_run('sd_single', '{"n": 2}', 'sd-key')$$, 'FF013', NULL,
                 'not even through an idempotency key it served before');
SELECT is(flowforge.fire_trigger('sd-hook') - 'firing_id',
          jsonb_build_object('outcome', 'refused', 'run_id', NULL, 'error',
                             'workflow ''sd_single'' was deleted (at 2030-04-01 00:02:02+00, by postgres) (FF013)'),
          'its trigger''s firing is refused, and recorded, naming the deletion');
SELECT throws_ok($$SELECT flowforge.create_trigger('sd-hook-2', 'webhook', 'start', 'sd_single', '{"secret": "0123456789abcdef"}')$$,
                 'FF013', NULL, 'no new trigger may start it: FF013');
SELECT throws_ok($$SELECT flowforge.delete_workflow('sd_single')$$, 'FF013', NULL, 'deleting it again: FF013');
SELECT is((SELECT count(*)::int FROM flowforge.list_workflows() WHERE name = 'sd_single'), 0, 'list_workflows hides it');
SELECT results_eq($$SELECT name, version, deleted_at IS NOT NULL FROM flowforge.list_workflows(include_deleted => true)
                    WHERE name = 'sd_single'$$,
                  $$VALUES ('sd_single'::text, 2, true)$$, 'include_deleted => true shows its latest version, deleted');
SELECT is(flowforge.get_workflow('sd_single', 1) ->> 'version', '1', 'get_workflow reads a deleted version (a run''s definition)');
SELECT isnt(flowforge.get_workflow('sd_single') ->> 'deleted_at', NULL, 'and says it was deleted');
-- A run started before the deletion goes on to the end.
SELECT lives_ok(format($$SELECT flowforge.complete(t.id, t.fencing_token, '{}') FROM flowforge.task_run t
                         WHERE t.workflow_run_id = %L AND t.state = 'running'$$, :'live'),
                'a live run of the deleted workflow has its task (claimed above with the other run''s) completed');
SELECT is(flowforge_test.run_state(:'live'), 'succeeded', 'and succeeds');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(workflow => 'sd_single', include_deleted => true)), 3,
          'the deleted workflow''s runs stay listed by its name (the deleted ones on request)');
-- Defined again: a new version, live, even with the content it had.
SELECT isnt(flowforge_test.define_single('sd_single', '{"priority": 3}'), NULL, 'the name is defined again (v2''s content)');
SELECT results_eq($$SELECT version, deleted_at IS NULL, superseded_at IS NULL FROM flowforge.workflow WHERE name = 'sd_single'
                    ORDER BY version$$,
                  $$VALUES (1, false, false), (2, false, false), (3, true, true)$$,
                  'a new version 3, live and latest; the deleted ones stay deleted');
SELECT isnt(flowforge.start_run('sd_single'), NULL, 'it starts runs again');

SELECT * FROM finish();
ROLLBACK;
