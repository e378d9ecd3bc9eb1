-- Twin test: complete() settles the run in its own statement (the DAG's success hook
-- inline: counters, run end, directory end); the seam's path is the task's own write
-- followed by _on_task_succeeded('dag', ...), which fan-out parents take. Driving the
-- same scenarios through each must leave the same task_run, workflow_run and
-- engine_run rows and the same sequence of events. Each path has its own queue.
BEGIN;
SELECT plan(13);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_diamond('twin_one', '{"queue": "twin_one", "max_attempts": 1}');
SELECT flowforge_test.define_diamond('twin_hook', '{"queue": "twin_hook", "max_attempts": 1}');

CREATE TEMP TABLE twin (path text PRIMARY KEY, run_id uuid NOT NULL, queue text NOT NULL);
CREATE TEMP TABLE held (path text, task_key text, task_run_id uuid, fencing_token bigint);
CREATE FUNCTION pg_temp.claim_ready() RETURNS void LANGUAGE sql AS $$
    DELETE FROM held;
    INSERT INTO held
    SELECT t.path, c.task_key, c.task_run_id, c.fencing_token
    FROM twin t CROSS JOIN LATERAL flowforge.claim(ARRAY[t.queue], 'twin-worker', '30 seconds', 100) c;
$$;
-- Path "one": complete(). Path "hook": the task's write and event as the substrate
-- makes them, then the DAG's hook, in the lock order (run first).
CREATE FUNCTION pg_temp.finish(p_keys text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_held record;
    v_task record;
    v_org constant uuid := flowforge.current_organization();
BEGIN
    FOR v_held IN SELECT * FROM held WHERE path = 'one' AND task_key = ANY (p_keys) ORDER BY task_key LOOP
        PERFORM flowforge.complete(v_held.task_run_id, v_held.fencing_token, jsonb_build_object('key', v_held.task_key));
    END LOOP;
    FOR v_held IN SELECT * FROM held WHERE path = 'hook' AND task_key = ANY (p_keys) ORDER BY task_key LOOP
        PERFORM flowforge._lock_run_of(v_held.task_run_id);
        UPDATE flowforge.task_run tr
        SET state = 'succeeded', output = jsonb_build_object('key', v_held.task_key), finished_at = flowforge.now(),
            lease_expires_at = NULL, error = NULL
        WHERE tr.id = v_held.task_run_id AND tr.fencing_token = v_held.fencing_token AND tr.state = 'running'
        RETURNING tr.workflow_run_id, tr.task_id, tr.attempt INTO STRICT v_task;
        PERFORM flowforge._append_events(v_org, v_task.workflow_run_id, 'completed', ARRAY[v_held.task_run_id],
                                         ARRAY['running'], ARRAY['succeeded'], ARRAY[v_held.fencing_token],
                                         ARRAY[v_task.attempt], ARRAY[NULL::jsonb], flowforge.now());
        PERFORM flowforge._on_task_succeeded('dag', v_org, v_task.workflow_run_id, v_held.task_run_id, v_task.task_id,
                                             flowforge.now());
    END LOOP;
END;
$$;
CREATE FUNCTION pg_temp.tasks_of(p_path text)
RETURNS TABLE (task_key text, state text, attempt int, fencing_token bigint, remaining_deps int, output jsonb,
               error text, lease_owner text, lease_expires_at timestamptz, ready_at timestamptz,
               started_at timestamptz, finished_at timestamptz)
LANGUAGE sql AS $$
    SELECT tr.task_key, tr.state, tr.attempt, tr.fencing_token, tr.remaining_deps, tr.output, tr.error,
           tr.lease_owner, tr.lease_expires_at, tr.ready_at, tr.started_at, tr.finished_at
    FROM flowforge.task_run tr JOIN twin t ON t.run_id = tr.workflow_run_id
    WHERE t.path = p_path ORDER BY tr.task_key
$$;
-- The run row and its directory row.
CREATE FUNCTION pg_temp.run_of(p_path text)
RETURNS TABLE (state text, tasks_total int, tasks_remaining int, tasks_failed int, reason text,
               started_at timestamptz, finished_at timestamptz, ended_at timestamptz)
LANGUAGE sql AS $$
    SELECT r.state, r.tasks_total, r.tasks_remaining, r.tasks_failed, r.reason, r.started_at, r.finished_at, e.ended_at
    FROM flowforge.workflow_run r JOIN twin t ON t.run_id = r.id
    JOIN flowforge.engine_run e ON e.run_id = r.id AND e.organization_id = r.organization_id
    WHERE t.path = p_path
$$;
-- The history as "kind:task_key:to_state:detail:token" in append order (run-level events as
-- "kind:run"; the ids that differ between the twins taken out of the details). Rows one
-- statement touches (b and c released or claimed together) come back in no defined order,
-- so events of one kind at one moment are compared as a set.
CREATE FUNCTION pg_temp.events_of(p_path text) RETURNS text[] LANGUAGE sql AS $$
    SELECT array_agg(x.label ORDER BY x.created_at, x.first_seq, x.label)
    FROM (SELECT e.kind || ':' || coalesce(tr.task_key, 'run') || ':' || coalesce(e.to_state, '-') || ':'
                 || coalesce((e.detail - 'workflow_id' - 'upstream_task_id')::text, '-') || ':'
                 || coalesce(e.fencing_token::text, '-') AS label,
                 e.created_at, min(e.seq) OVER (PARTITION BY e.created_at, e.kind) AS first_seq
          FROM flowforge.task_run_event e JOIN twin t ON t.run_id = e.workflow_run_id
          LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
          WHERE t.path = p_path) x
$$;

-- A diamond that succeeds, one task at a time.
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_one', '{"n": 1}'), 'twin_one'),
                        ('hook', flowforge.start_run('twin_hook', '{"n": 1}'), 'twin_hook');
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:00:01+00');
SELECT pg_temp.finish(ARRAY['a']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('hook')$$,
    'after the root: identical task rows (b and c released on both paths)');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('hook')$$,
    'after the root: identical run and directory rows');
SELECT flowforge_test.set_clock('2030-01-01 00:00:02+00');
SELECT pg_temp.claim_ready();
SELECT pg_temp.finish(ARRAY['b']);
SELECT flowforge_test.set_clock('2030-01-01 00:00:03+00');
SELECT pg_temp.finish(ARRAY['c']);
SELECT flowforge_test.set_clock('2030-01-01 00:00:04+00');
SELECT pg_temp.claim_ready();
SELECT flowforge_test.set_clock('2030-01-01 00:00:05+00');
SELECT pg_temp.finish(ARRAY['d']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('hook')$$,
    'after the join: identical task rows');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('hook')$$,
    'after the join: identical run and directory rows');
SELECT is((SELECT ended_at FROM pg_temp.run_of('one')), '2030-01-01 00:00:05+00'::timestamptz,
    'the directory''s end is the last completion (the twins are not both unended)');
SELECT is(pg_temp.events_of('one'), pg_temp.events_of('hook'), 'the same events in the same order');
SELECT is((pg_temp.events_of('one'))[array_length(pg_temp.events_of('one'), 1) - 1: ],
          ARRAY['completed:d:succeeded:-:1', 'run_succeeded:run:succeeded:{"tasks_failed": 0}:-'],
          'the last task''s event, then the run''s');

-- A branch fails for good (d skipped), then the other completes: the run fails on both paths.
DELETE FROM twin;
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_one'), 'twin_one'),
                        ('hook', flowforge.start_run('twin_hook'), 'twin_hook');
SELECT pg_temp.claim_ready();
SELECT pg_temp.finish(ARRAY['a']);
SELECT pg_temp.claim_ready();
SELECT flowforge.fail(task_run_id, fencing_token, 'boom', false) FROM held WHERE task_key = 'b';
SELECT flowforge_test.set_clock('2030-01-01 00:00:06+00');
SELECT pg_temp.finish(ARRAY['c']);
SELECT results_eq($$SELECT * FROM pg_temp.tasks_of('one')$$, $$SELECT * FROM pg_temp.tasks_of('hook')$$,
    'a failed branch, then the other completes: identical task rows');
SELECT results_eq($$SELECT * FROM pg_temp.run_of('one')$$, $$SELECT * FROM pg_temp.run_of('hook')$$,
    'identical run and directory rows');
SELECT is((SELECT state FROM pg_temp.run_of('one')), 'failed', 'the run failed');
SELECT is(pg_temp.events_of('one'), pg_temp.events_of('hook'), 'the same events in the same order');

-- A refused complete leaves the run's counters as they were (the statement's run update is undone).
DELETE FROM twin;
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_one'), 'twin_one');
SELECT pg_temp.claim_ready();
SELECT throws_ok(format('SELECT flowforge.complete(%L, %s)', task_run_id, fencing_token + 1), 'FF004')
FROM held WHERE path = 'one' AND task_key = 'a';
SELECT results_eq($$SELECT state, tasks_remaining FROM pg_temp.run_of('one')$$, $$VALUES ('running'::text, 4)$$,
    'a stale token changes no counter');

SELECT * FROM finish();
ROLLBACK;
