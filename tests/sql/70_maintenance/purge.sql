-- purge(older_than, dry_run, batch_size) (0032, issue 19): runs of every
-- engine that ended before the cutoff go with everything that is theirs;
-- live work, and work that ended after the cutoff, stays; a dry run changes
-- nothing and reports exactly what a live call removes; trigger firings and
-- audit rows go by their own retention settings; a month of history whose
-- rows are all older than the cutoff, and than every run still in the
-- directory, is emptied and dropped whole; the operator purges every
-- organization, an owner its own, anyone else is refused (FF007); the
-- append-only rule holds for every other path; tick() purges by the
-- retention settings.
BEGIN;
SET LOCAL client_min_messages = warning;
SELECT plan(70);

-- Counts of every table purge touches, to compare before and after.
CREATE FUNCTION pg_temp.counts() RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'engine_run', (SELECT count(*) FROM flowforge.engine_run),
        'workflow_run', (SELECT count(*) FROM flowforge.workflow_run),
        'task_run', (SELECT count(*) FROM flowforge.task_run),
        'outbox_message', (SELECT count(*) FROM flowforge.outbox_message),
        'idempotency_key', (SELECT count(*) FROM flowforge.idempotency_key),
        'work_item', (SELECT count(*) FROM flowforge.work_item),
        'checkpoint', (SELECT count(*) FROM flowforge.checkpoint),
        'checkpoint_page', (SELECT count(*) FROM flowforge.checkpoint_page),
        'graph_run', (SELECT count(*) FROM flowforge.graph_run),
        'graph_step', (SELECT count(*) FROM flowforge.graph_step),
        'graph_visit', (SELECT count(*) FROM flowforge.graph_visit),
        'machine_run', (SELECT count(*) FROM flowforge.machine_run),
        'machine_transition', (SELECT count(*) FROM flowforge.machine_transition),
        'machine_event_queue', (SELECT count(*) FROM flowforge.machine_event_queue),
        'machine_event_seen', (SELECT count(*) FROM flowforge.machine_event_seen),
        'machine_timer', (SELECT count(*) FROM flowforge.machine_timer),
        'task_run_event', (SELECT count(*) FROM flowforge.task_run_event),
        'trigger_firing', (SELECT count(*) FROM flowforge.trigger_firing),
        'trigger_delivery', (SELECT count(*) FROM flowforge.trigger_delivery),
        'audit_log', (SELECT count(*) FROM flowforge.audit_log))
$$;
-- What counts(a) - counts(b) is, table by table.
CREATE FUNCTION pg_temp.minus(p_a jsonb, p_b jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_object_agg(a.key, a.value::bigint - (p_b ->> a.key)::bigint) FROM jsonb_each_text(p_a) a
$$;
-- Everything a run has, as one text: unchanged means untouched.
CREATE FUNCTION pg_temp.footprint(p_run uuid) RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws(' | ',
        (SELECT e::text FROM flowforge.engine_run e WHERE e.run_id = p_run),
        (SELECT r::text FROM flowforge.workflow_run r WHERE r.id = p_run),
        (SELECT string_agg(t::text, ',' ORDER BY t.id) FROM flowforge.task_run t WHERE t.workflow_run_id = p_run),
        (SELECT string_agg(ev.id::text || ev.kind, ',' ORDER BY ev.seq) FROM flowforge.task_run_event ev
         WHERE ev.workflow_run_id = p_run),
        (SELECT string_agg(w::text, ',' ORDER BY w.id) FROM flowforge.work_item w WHERE w.run_id = p_run))
$$;

-- ---------------------------------------------------------------------------
-- January 2031: every engine's runs end (a DAG run with an idempotency key, a failed one, a map fanning out
-- over two elements, a graph run, a machine); one DAG run starts and stays live; a trigger fires twice (one
-- delivery with its key). tick() has made the months' partitions.
-- ---------------------------------------------------------------------------
SELECT flowforge_test.freeze_clock('2031-01-10 12:00:00+00') \gset
SELECT is((flowforge.tick() ->> 'partitions')::int, 12, 'fixture: tick() made January to April 2031 for the three tables');
SELECT flowforge_test.define_single('pg_dag', '{"queue": "pg-dag"}') \gset
SELECT flowforge_test.define_single('pg_bad', '{"queue": "pg-bad", "max_attempts": 1}') \gset
SELECT flowforge_test.define_single('pg_live', '{"queue": "pg-live"}') \gset
SELECT flowforge_test.define_single('pg_live2', '{"queue": "pg-live2"}') \gset
SELECT flowforge_test.define_graph_single('pg_graph', '{"queue": "pg-graph"}') \gset
SELECT flowforge.define_workflow($${"name": "pg_machine", "kind": "statemachine", "initial": "idle",
    "states": {"idle": {"on": {"go": "done"}}, "done": {"final": true}}}$$) \gset
SELECT flowforge.define_workflow($${"name": "pg_fan", "tasks": [{"key": "m", "queue": "pg-fan",
    "map": {"over": "$.run.n", "max_concurrency": 2}}]}$$) \gset
SELECT flowforge.start_run('pg_dag', '{}', 'pg-key-1') AS old_dag \gset
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'old_dag', 'only', 'pg-dag') \gset
SELECT flowforge.complete(:'tr', :'tok') \gset
SELECT flowforge.start_run('pg_bad') AS old_bad \gset
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'old_bad', 'only', 'pg-bad') \gset
SELECT flowforge.fail(:'tr', :'tok', 'boom') \gset
SELECT flowforge.start_run('pg_graph') AS old_graph \gset
SELECT flowforge_test.step(:'old_graph') \gset
SELECT flowforge.start_run('pg_machine') AS old_machine \gset
SELECT flowforge.send_event(:'old_machine', 'go', '{}', 'e-1') \gset
SELECT flowforge.start_run('pg_fan', '{"n": [1, 2]}') AS old_fan \gset
SELECT flowforge_test.complete_child(:'old_fan', 'm', 0, '1') \gset
SELECT flowforge_test.complete_child(:'old_fan', 'm', 1, '2') \gset
SELECT flowforge.start_run('pg_live') AS live_dag \gset
SELECT flowforge.create_trigger('pg-hook', 'webhook', 'start', 'pg_dag', '{"secret": "0123456789abcdef"}') \gset
SELECT flowforge.fire_trigger('pg-hook', '{"password": "hunter2"}', NULL, 'delivery-1') ->> 'run_id' AS hook_run \gset
SELECT flowforge.cancel_run(:'hook_run', 'not needed') \gset
-- A filesystem trigger: its delivery ids are files, which may still be there when their firing is purged.
SELECT flowforge.create_trigger('pg-files', 'filesystem', 'start', 'pg_dag', '{"path": "/in"}') \gset
SELECT flowforge.fire_trigger('pg-files', '{"path": "/in/a.txt"}', NULL, '/in/a.txt@1') ->> 'run_id' AS file_run \gset
SELECT flowforge.cancel_run(:'file_run', 'not needed') \gset
SELECT flowforge.fire_trigger('pg-none') \gset
SELECT is((SELECT string_agg(e.engine_kind || ':' || (e.ended_at IS NOT NULL), ',' ORDER BY e.engine_kind, e.ended_at IS NOT NULL)
           FROM flowforge.engine_run e
           WHERE e.run_id IN (:'old_dag', :'old_bad', :'old_graph', :'old_machine', :'old_fan', :'hook_run', :'file_run',
                              :'live_dag')),
          'dag:false,dag:true,dag:true,dag:true,dag:true,dag:true,graph:true,statemachine:true',
          'fixture: seven runs of three engines ended in January (two the triggers started, cancelled), one DAG run live');

-- March 20th: a run ends (after the cutoff to come), another starts and stays live.
SELECT flowforge_test.set_clock('2031-03-20 12:00:00+00') \gset
SELECT flowforge.start_run('pg_dag') AS recent_dag \gset
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'recent_dag', 'only', 'pg-dag') \gset
SELECT flowforge.complete(:'tr', :'tok') \gset
SELECT flowforge.start_run('pg_live2') AS live_dag2 \gset
CREATE TEMP TABLE kept AS
SELECT r AS run_id, pg_temp.footprint(r) AS footprint FROM unnest(ARRAY[:'live_dag', :'recent_dag', :'live_dag2']::uuid[]) r;

-- ---------------------------------------------------------------------------
-- Refusals
-- ---------------------------------------------------------------------------
SELECT throws_ok($$SELECT flowforge.purge('-1 day')$$, 'FF003', NULL, 'a negative older_than: FF003');
SELECT throws_ok($$SELECT flowforge.purge(NULL)$$, 'FF003', NULL, 'no older_than: FF003');
SELECT throws_ok($$SELECT flowforge.purge('1 day', true, 0)$$, 'FF003', NULL, 'batch_size 0: FF003');
SELECT throws_ok($$SELECT flowforge.purge('1 day', NULL)$$, 'FF003', NULL, 'dry_run NULL: FF003');

-- ---------------------------------------------------------------------------
-- A dry run changes nothing, and says what the live call removes
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE before AS SELECT pg_temp.counts() AS c;
SELECT flowforge.purge('30 days') AS dry \gset
SELECT is(pg_temp.counts(), (SELECT c FROM before), 'a dry run (the default) removes nothing, from any table');
SELECT is((:'dry'::jsonb ->> 'dry_run')::boolean, true, 'its report says it was a dry run');
SELECT is(:'dry'::jsonb -> 'runs', '{"dag": 5, "graph": 1, "statemachine": 1}'::jsonb,
          'it names the seven runs that ended before the cutoff, by engine');
SELECT is(:'dry'::jsonb ->> 'runs_ended_before', '2031-02-18T12:00:00+00:00', 'the cutoff: 30 days before now');
SELECT is((SELECT jsonb_agg(x ->> 'partition') FROM jsonb_array_elements(:'dry'::jsonb -> 'partitions') x
           WHERE x ->> 'table' = 'task_run_event' AND (x ->> 'rows')::int > 0), NULL,
          'no month of events goes whole: January is older than the cutoff, but a run created in it is live');
SELECT is((SELECT jsonb_agg(x - 'partition' - 'estimated' - 'busy') FROM jsonb_array_elements(:'dry'::jsonb -> 'partitions') x
           WHERE x ->> 'table' = 'trigger_firing' AND (x ->> 'rows')::int > 0),
          '[{"table": "trigger_firing", "from": "2031-01-01T00:00:00+00:00", "to": "2031-02-01T00:00:00+00:00", "rows": 3,
             "emptied": false}]'::jsonb,
          'January''s firings (older than the firings'' cutoff, by default the runs'') go as a month');
SELECT flowforge.purge('30 days', false) AS live \gset
SELECT is(pg_temp.minus((SELECT c FROM before), pg_temp.counts()) - 'audit_log',
          (:'dry'::jsonb -> 'removed') - 'audit_log',
          'the live call removes, table by table, exactly what the dry run said');
SELECT is(:'live'::jsonb -> 'removed', :'dry'::jsonb -> 'removed', 'and reports the same');
SELECT is((:'live'::jsonb ->> 'dry_run')::boolean, false, 'a live report says so');
SELECT is_empty(format($$SELECT t FROM unnest(ARRAY['engine_run', 'workflow_run', 'task_run', 'idempotency_key', 'work_item',
                                                  'checkpoint', 'checkpoint_page', 'graph_run', 'graph_step', 'graph_visit',
                                                  'machine_run', 'machine_transition', 'machine_event_seen', 'task_run_event',
                                                  'trigger_firing', 'trigger_delivery']) t
                         WHERE (%L::jsonb -> 'removed' ->> t)::bigint = 0$$, :'live'),
                'something of every kind a finished run has was removed (runs, task runs, items, checkpoints and pages, '
                'graph steps and visits, machine history and seen ids, the idempotency key, events), and the firings');
SELECT is((:'live'::jsonb -> 'removed' ->> 'audit_log')::int, 0, 'audit rows are kept (no retention_audit)');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE action = 'purge' AND entity = 'history'), 1,
          'the live purge wrote its audit row');

-- ---------------------------------------------------------------------------
-- What went, what stayed
-- ---------------------------------------------------------------------------
SELECT is((SELECT count(*)::int FROM flowforge.engine_run
           WHERE run_id IN (:'old_dag', :'old_bad', :'old_graph', :'old_machine', :'old_fan', :'hook_run', :'file_run')),
          0, 'the seven runs that ended in January are gone from the directory');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event
           WHERE workflow_run_id IN (:'old_dag', :'old_bad', :'old_graph', :'old_machine', :'old_fan', :'hook_run')),
          0, 'and so are their events (run-level, task runs'', work items''), row by row');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id = :'old_machine'), 0, 'the machine''s history is gone');
SELECT is((SELECT count(*)::int FROM flowforge.idempotency_key WHERE key = 'pg-key-1'), 0, 'the idempotency key went with its run');
SELECT throws_ok(format('SELECT flowforge.get_run(%L)', :'old_dag'), 'FF001', NULL, 'a purged run is not found');
SELECT is_empty($$SELECT k.run_id FROM kept k WHERE pg_temp.footprint(k.run_id) IS DISTINCT FROM k.footprint$$,
                'the live runs (January''s and March''s) and the run that ended after the cutoff are untouched');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing), 0, 'the firings went, the payload with its password too');
SELECT is((SELECT pg_relation_size('flowforge_history.trigger_firing_p203101')), 0::bigint,
          'January''s firing partition was emptied (TRUNCATE: no lock on its parent)');
SELECT is((SELECT string_agg(k.delivery_id, ',') FROM flowforge.trigger_delivery k), '/in/a.txt@1',
          'the webhook''s delivery key went too; the live filesystem trigger''s stays (its file may still be there)');
SELECT is(flowforge.feeder_unfired((SELECT id FROM flowforge.scheduled_trigger WHERE name = 'pg-files'),
                                   ARRAY['/in/a.txt@1', '/in/b.txt@2']), ARRAY['/in/b.txt@2'],
          'so the feeder does not fire that file again');
SELECT is(flowforge.fire_trigger('pg-files', '{}', NULL, '/in/a.txt@1') - 'firing_id',
          '{"outcome": null, "run_id": null, "error": null, "duplicate": true, "purged": true}'::jsonb,
          'and firing it by hand answers as a replay whose firing was purged');
SELECT is((flowforge.purge('30 days', false) -> 'runs'), '{}'::jsonb, 'a second purge finds nothing more to do');

-- ---------------------------------------------------------------------------
-- Months of events go whole once no run older than their end is left; firings and audit rows by their own
-- retention. March 25th: the January run ends and a delivery fires; May 10th: purge.
-- ---------------------------------------------------------------------------
SELECT flowforge_test.set_clock('2031-03-25 12:00:00+00') \gset
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'live_dag', 'only', 'pg-live') \gset
SELECT flowforge.complete(:'tr', :'tok') \gset
SELECT flowforge.fire_trigger('pg-hook', '{"password": "second"}', NULL, 'delivery-2') ->> 'run_id' AS hook_run2 \gset
SELECT flowforge.cancel_run(:'hook_run2', 'not needed') \gset
SELECT flowforge_test.set_clock('2031-05-10 12:00:00+00') \gset
SELECT flowforge.fire_trigger('pg-hook', '{"password": "third"}', NULL, 'delivery-3') ->> 'run_id' AS hook_run3 \gset
SELECT flowforge.cancel_run(:'hook_run3', 'not needed') \gset
UPDATE flowforge.setting SET retention_firings = '90 days', retention_audit = '60 days';
SELECT count(*) AS january_events FROM flowforge.task_run_event WHERE created_at < '2031-02-01' \gset
SELECT flowforge.purge('30 days', false) AS may \gset
SELECT is((SELECT (x ->> 'rows')::int FROM jsonb_array_elements(:'may'::jsonb -> 'partitions') x
           WHERE x ->> 'partition' = 'flowforge_history.task_run_event_p203101'),
          :'january_events'::int,
          'January''s events went as a month (no run created before February is left): its rows counted');
SELECT is((SELECT (x ->> 'emptied')::boolean FROM jsonb_array_elements(:'may'::jsonb -> 'partitions') x
           WHERE x ->> 'partition' = 'flowforge_history.task_run_event_p203101'), true, 'and the partition emptied');
SELECT is((flowforge.tick() ->> 'partitions_dropped')::int >= 2, true,
          'tick() drops the emptied past months (January''s events and firings, among others)');
SELECT is(to_regclass('flowforge_history.task_run_event_p203101'), NULL, 'January''s event partition is gone');
SELECT is(to_regclass('flowforge_history.trigger_firing_p203101'), NULL, 'and January''s firing partition');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id IN (:'live_dag', :'recent_dag')), 0,
          'the runs that ended in March left no event: January''s with the month, March''s row by row');
SELECT isnt(to_regclass('flowforge_history.task_run_event_p203103'), NULL,
            'March''s partition stays: the run created in March is live');
SELECT is_empty($$SELECT k.run_id FROM kept k WHERE k.run_id = (SELECT run_id FROM kept OFFSET 2 LIMIT 1)
                    AND pg_temp.footprint(k.run_id) IS DISTINCT FROM k.footprint$$,
                'the run live since March is untouched');
SELECT is((SELECT string_agg(f.delivery_id, ',' ORDER BY f.delivery_id) FROM flowforge.trigger_firing f), 'delivery-2,delivery-3',
          'retention_firings = 90 days keeps March''s and May''s firings, though their runs went');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE created_at < '2031-03-11 12:00+00'), 0,
          'retention_audit = 60 days: the audit rows older than that are gone');
SELECT cmp_ok((SELECT count(*)::int FROM flowforge.audit_log WHERE created_at >= '2031-03-11 12:00+00'), '>', 0,
              'newer audit rows stay');
UPDATE flowforge.setting SET retention_firings = '1 day';
SELECT flowforge.purge('30 days', false) AS one_day \gset
SELECT is((SELECT jsonb_agg(x ->> 'partition') FROM jsonb_array_elements(:'one_day'::jsonb -> 'partitions') x
           WHERE (x ->> 'rows')::int > 0),
          '["flowforge_history.trigger_firing_p203103"]'::jsonb,
          'retention_firings = 1 day: March''s firing goes with its month (all of it older than a day)');
SELECT is((SELECT string_agg(k.delivery_id, ',' ORDER BY k.delivery_id) FROM flowforge.trigger_delivery k),
          '/in/a.txt@1,delivery-3', 'and its delivery key (not the filesystem trigger''s)');
-- Two days on, May's firing is older than a day, in a month that is not: row by row.
SELECT flowforge_test.set_clock('2031-05-12 12:00:00+00') \gset
SELECT is(flowforge.purge('30 days', false) -> 'removed' -> 'trigger_firing', '1'::jsonb,
          'a firing older than its retention in the current month goes row by row');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing), 0, 'with its delivery key');
SELECT is((SELECT string_agg(k.delivery_id, ',') FROM flowforge.trigger_delivery k), '/in/a.txt@1', 'and its delivery key');
SELECT flowforge.drop_trigger('pg-files') \gset
SELECT is((flowforge.purge('30 days', false) -> 'removed' ->> 'trigger_delivery')::int, 1,
          'once the filesystem trigger is dropped, its delivery keys go by the firings'' retention');
UPDATE flowforge.setting SET retention_firings = NULL, retention_audit = NULL;

-- ---------------------------------------------------------------------------
-- Batches: at most batch_size runs a call, and "more" says another call has work
-- ---------------------------------------------------------------------------
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'live_dag2', 'only', 'pg-live2') \gset
SELECT flowforge.complete(:'tr', :'tok') \gset
SELECT flowforge.start_run('pg_dag') AS b1 \gset
SELECT task_run_id AS tr, fencing_token AS tok FROM flowforge_test.claim_key(:'b1', 'only', 'pg-dag') \gset
SELECT flowforge.complete(:'tr', :'tok') \gset
SELECT flowforge_test.set_clock('2031-07-01 12:00:00+00') \gset
SELECT results_eq($$SELECT p -> 'runs', p -> 'more' FROM flowforge.purge('30 days', false, 1) p$$,
                  $$VALUES ('{"dag": 1}'::jsonb, 'true'::jsonb)$$, 'batch_size 1: one run, and more to do');
SELECT results_eq($$SELECT p -> 'runs', p -> 'more' FROM flowforge.purge('30 days', false, 1) p
                    UNION ALL SELECT p -> 'runs', p -> 'more' FROM flowforge.purge('30 days', false, 1) p$$,
                  $$VALUES ('{"dag": 1}'::jsonb, 'true'::jsonb), ('{"dag": 1}'::jsonb, 'true'::jsonb)$$,
                  'the next calls: the next runs (May''s two and the trigger''s; a full batch may mean more)');
SELECT results_eq($$SELECT p -> 'runs', p -> 'more' FROM flowforge.purge('30 days', false, 1) p$$,
                  $$VALUES ('{}'::jsonb, 'false'::jsonb)$$, 'then nothing left');

-- ---------------------------------------------------------------------------
-- Rights: the operator (this superuser) purged every organization above; an owner purges its own
-- organization, row by row (never a whole month: it holds other tenants' rows); admin, member, viewer: FF007.
-- ---------------------------------------------------------------------------
SELECT flowforge.create_organization('pg-other', 'Another tenant') \gset
SELECT flowforge_test.login('ff_t19_pg_owner', 'pg-other', 'owner') \gset
SELECT flowforge_test.login('ff_t19_pg_admin', 'pg-other', 'admin') \gset
SELECT flowforge_test.login('ff_t19_pg_member', 'pg-other', 'member') \gset
SELECT flowforge_test.login('ff_t19_pg_viewer', 'pg-other', 'viewer') \gset
SELECT flowforge_test.as_login('ff_t19_pg_owner', $$SELECT to_jsonb(flowforge.define_workflow(
    '{"name": "theirs", "tasks": [{"key": "x", "queue": "pg-theirs"}]}'))$$) \gset
SELECT flowforge_test.as_login('ff_t19_pg_owner', $$SELECT to_jsonb(flowforge.start_run('theirs'))$$) #>> '{}' AS theirs \gset
SELECT flowforge_test.as_login('ff_t19_pg_owner', $$SELECT to_jsonb(flowforge.cancel_run(
    (SELECT id FROM flowforge.list_runs() LIMIT 1), 'done'))$$) \gset
SELECT flowforge.start_run('pg_dag') AS ours \gset
SELECT flowforge.cancel_run(:'ours', 'done') \gset
SELECT flowforge_test.set_clock('2031-09-01 12:00:00+00') \gset
SELECT is(flowforge_test.as_login(r, $$SELECT flowforge.purge('30 days', false)$$) ->> 'sqlstate', 'FF007',
          format('%s of the organization: purge is refused (FF007)', split_part(r, '_', 4)))
FROM unnest(ARRAY['ff_t19_pg_admin', 'ff_t19_pg_member', 'ff_t19_pg_viewer']) r;
SELECT flowforge_test.as_login('ff_t19_pg_owner', $$SELECT flowforge.purge('30 days', false)$$) AS owners \gset
SELECT is(:'owners'::jsonb -> 'runs', '{"dag": 1}'::jsonb, 'its owner purges its own organization''s ended run');
SELECT is(:'owners'::jsonb -> 'organizations', jsonb_build_array((SELECT id FROM flowforge.organization WHERE slug = 'pg-other')),
          'and its report names its organization alone');
SELECT is(:'owners'::jsonb -> 'partitions', '[]'::jsonb, 'an owner''s purge takes no month whole');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'theirs'), 0, 'their run is gone');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'ours'), 1,
          'the default organization''s run, ended as long ago, is not theirs to purge');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE workflow_run_id = :'theirs'), 0,
          'their run''s events went row by row');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log a JOIN flowforge.organization o ON o.id = a.organization_id
           WHERE o.slug = 'pg-other' AND a.action = 'purge' AND a.actor = 'ff_t19_pg_owner'), 1,
          'their purge is in their own audit trail, by its owner');

-- ---------------------------------------------------------------------------
-- The append-only rule holds on every other path: purge's path is a DELETE or TRUNCATE by flowforge_system
-- with flowforge.history_purge on — which only _purge sets (tests/sql/00_catalog/security.sql) — and nothing else.
-- ---------------------------------------------------------------------------
CREATE FUNCTION pg_temp.as_system(p_purge boolean, p_sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_rows bigint;
    v_message text;
BEGIN
    SET LOCAL ROLE flowforge_system;
    BEGIN
        PERFORM set_config('flowforge.history_purge', CASE WHEN p_purge THEN 'on' ELSE '' END, true);
        EXECUTE p_sql;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        RAISE EXCEPTION '%', v_rows USING ERRCODE = 'FFT99';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    RESET ROLE;
    RETURN CASE WHEN v_state = 'FFT99' THEN 'deleted ' || v_message ELSE v_state END;
END;
$$;
SELECT is(pg_temp.as_system(false, $$DELETE FROM flowforge.task_run_event WHERE workflow_run_id = '$$ || :'ours' || $$'$$),
          'FF011', 'flowforge_system without flowforge.history_purge: DELETE of history refused');
SELECT is(pg_temp.as_system(true, $$UPDATE flowforge.task_run_event SET detail = '{}' WHERE workflow_run_id = '$$ || :'ours' || $$'$$),
          'FF011', 'flowforge_system with flowforge.history_purge on: an UPDATE is still refused');
SELECT is(pg_temp.as_system(true, $$DELETE FROM flowforge.task_run_event WHERE workflow_run_id = '$$ || :'ours' || $$'$$),
          'deleted ' || (SELECT count(*) FROM flowforge.task_run_event WHERE workflow_run_id = :'ours'), 'flowforge_system with flowforge.history_purge on: purge''s path (a DELETE) passes (and is undone here)');
SELECT throws_ok(format($q$DO $do$ BEGIN PERFORM set_config('flowforge.history_purge', 'on', true);
                          DELETE FROM flowforge.task_run_event WHERE workflow_run_id = %L; END $do$ $q$, :'ours'),
                 'FF011', NULL, 'flowforge.history_purge on, as anyone else (this superuser): refused');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL flowforge.history_purge = 'on';
                          PERFORM flowforge.tick(); DELETE FROM flowforge.audit_log; END $do$ $q$,
                 'FF011', NULL, 'a value set before a call of tick() (or purge) does not outlive it');

-- ---------------------------------------------------------------------------
-- tick() purges by the retention settings (the daemon's schedule), as the operator's purge would
-- ---------------------------------------------------------------------------
SELECT is((flowforge.tick() ->> 'purged')::int, 0, 'no retention set: tick() purges nothing');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'ours'), 1, 'the ended run is still there');
UPDATE flowforge.setting SET retention_runs = '30 days';
SELECT cmp_ok((flowforge.tick() ->> 'purged')::int, '>=', 3, 'retention_runs = 30 days: tick() purges (the run, its task run, events)');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE run_id = :'ours'), 0, 'the run that ended in July is gone');
SELECT is((SELECT string_agg(a.actor, ',') FROM flowforge.audit_log a
           WHERE a.action = 'purge' AND a.organization_id = '00000000-0000-0000-0000-000000000001'
             AND a.created_at = flowforge.now()), session_user::text,
          'the scheduled purge is audited under the caller of tick() (the daemon''s login)');

SELECT * FROM finish();
ROLLBACK;
