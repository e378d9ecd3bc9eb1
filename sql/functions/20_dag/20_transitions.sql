-- The DAG's transitions: what a task's fate means for its run. These are the
-- DAG's implementations of the engine hooks (10_substrate/25_engine_hooks.sql)
-- and the helpers they share with the batch fast path.
-- Internal: executable only by the two owner roles, reached only from SECURITY
-- DEFINER API functions, whose pinned search_path they run under; the hot ones
-- carry no SET clause of their own (its save/restore would cost more than
-- their work) and name everything schema-qualified.

-- What a task is given when it starts: the run's input and the output of each
-- of its dependencies. Shared by claim (pull) and dispatch (push), so both
-- deliver the same shape.
--
-- PL/pgSQL so its two plans are cached per session, each a primary-key or
-- edge lookup. (A join against workflow_run in the caller let the planner
-- pick an organization-wide index scan under RLS.)
CREATE OR REPLACE FUNCTION flowforge._task_input(p_org uuid, p_run_id uuid, p_task_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_run_input jsonb;
    v_deps jsonb;
BEGIN
    SELECT r.input INTO v_run_input FROM flowforge.workflow_run r WHERE r.id = p_run_id AND r.organization_id = p_org;
    SELECT jsonb_object_agg(up.task_key, up.output) INTO v_deps
    FROM flowforge.task_dependency td
    JOIN flowforge.task_run up ON up.workflow_run_id = p_run_id AND up.task_id = td.depends_on_task_id
                              AND up.organization_id = p_org
    WHERE td.task_id = p_task_id AND td.organization_id = p_org;
    RETURN jsonb_build_object('run', v_run_input, 'deps', coalesce(v_deps, '{}'::jsonb));
END;
$$;
COMMENT ON FUNCTION flowforge._task_input(uuid, uuid, uuid) IS
  'Internal: {"run": <run input>, "deps": {<dependency key>: <its output>}} for one task run of run p_run_id in '
  'organization p_org (every statement filters on it: one shard under Citus).';

-- A succeeded task: dependents waiting only on it become ready; the run's
-- counters settle. Cost is the number of direct dependents, not the size of
-- the run (a counter per task run, a counter per run).
CREATE OR REPLACE FUNCTION flowforge._dag_task_succeeded(p_org uuid, p_run_id uuid, p_task_id uuid,
                                                         p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    -- A leaf (most tasks of small runs) skips the release statement.
    IF EXISTS (SELECT 1 FROM flowforge.task_dependency td
               WHERE td.depends_on_task_id = p_task_id AND td.organization_id = p_org) THEN
        PERFORM flowforge._release_dependents(p_org, p_run_id, p_task_id, p_now);
    END IF;
    PERFORM flowforge._settle_run(p_org, p_run_id, 1, 0, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._dag_task_succeeded(uuid, uuid, uuid, timestamptz) IS
  'Internal (dag hook): task p_task_id of run p_run_id (organization p_org) succeeded — release its dependents, '
  'settle the run.';

CREATE OR REPLACE FUNCTION flowforge._dag_task_failed_for_good(p_org uuid, p_run_id uuid, p_task_id uuid,
                                                               p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM flowforge._settle_run(p_org, p_run_id, 1 + flowforge._skip_dependents(p_org, p_run_id, p_task_id, p_now),
                                  1, p_now);
END;
$$;
COMMENT ON FUNCTION flowforge._dag_task_failed_for_good(uuid, uuid, uuid, timestamptz) IS
  'Internal (dag hook): task p_task_id of run p_run_id (organization p_org) failed for good — skip its transitive dependents, settle the '
  'run (it fails once nothing is left to do).';

-- A task succeeded: dependents waiting only on it become ready. Cost is the
-- number of direct dependents, not the size of the run (a counter per task run).
CREATE OR REPLACE FUNCTION flowforge._release_dependents(p_org uuid, p_run_id uuid, p_task_id uuid,
                                                         p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_ready uuid[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    WITH released AS (
        UPDATE flowforge.task_run tr
        SET remaining_deps = tr.remaining_deps - 1,
            state = CASE WHEN tr.remaining_deps = 1 THEN 'ready' ELSE tr.state END,
            ready_at = CASE WHEN tr.remaining_deps = 1 THEN p_now ELSE tr.ready_at END
        FROM flowforge.task_dependency td
        WHERE td.depends_on_task_id = p_task_id AND td.organization_id = p_org
          AND tr.workflow_run_id = p_run_id
          AND tr.task_id = td.task_id
          AND tr.organization_id = p_org
          AND tr.state = 'pending'
        RETURNING tr.id, tr.state, tr.fencing_token, tr.attempt
    )
    SELECT array_agg(r.id), array_agg(r.fencing_token), array_agg(r.attempt)
    INTO v_ready, v_tokens, v_attempts
    FROM released r WHERE r.state = 'ready';
    IF v_ready IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM flowforge._append_events(p_org, p_run_id, 'released', v_ready,
        array_fill('pending'::text, ARRAY[cardinality(v_ready)]), array_fill('ready'::text, ARRAY[cardinality(v_ready)]),
        v_tokens, v_attempts, array_fill(NULL::jsonb, ARRAY[cardinality(v_ready)]), p_now);
    PERFORM flowforge._tasks_ready(p_org, p_run_id, p_now);
    RETURN cardinality(v_ready);
END;
$$;
COMMENT ON FUNCTION flowforge._release_dependents(uuid, uuid, uuid, timestamptz) IS
  'Internal: decrements remaining_deps of the pending dependents of a succeeded task in one run of organization '
  'p_org; those reaching 0 '
  'become ready (event "released", NOTIFY; push-queue tasks are dispatched). Returns how many became ready.';

-- A task failed for good: every pending transitive dependent is skipped.
-- Independent branches are untouched.
CREATE OR REPLACE FUNCTION flowforge._skip_dependents(p_org uuid, p_run_id uuid, p_task_id uuid, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_skipped uuid[];
    v_tokens bigint[];
    v_attempts integer[];
BEGIN
    WITH RECURSIVE downstream(task_id) AS (
        SELECT td.task_id FROM flowforge.task_dependency td
        WHERE td.depends_on_task_id = p_task_id AND td.organization_id = p_org
        UNION
        SELECT td.task_id FROM flowforge.task_dependency td JOIN downstream d ON td.depends_on_task_id = d.task_id
        WHERE td.organization_id = p_org
    ), skipped AS (
        UPDATE flowforge.task_run tr
        SET state = 'skipped', finished_at = p_now
        FROM downstream d
        WHERE tr.workflow_run_id = p_run_id AND tr.organization_id = p_org AND tr.task_id = d.task_id
          AND tr.state = 'pending'
        RETURNING tr.id, tr.fencing_token, tr.attempt
    )
    SELECT array_agg(s.id), array_agg(s.fencing_token), array_agg(s.attempt)
    INTO v_skipped, v_tokens, v_attempts
    FROM skipped s;
    IF v_skipped IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM flowforge._append_events(p_org, p_run_id, 'skipped', v_skipped,
        array_fill('pending'::text, ARRAY[cardinality(v_skipped)]), array_fill('skipped'::text, ARRAY[cardinality(v_skipped)]),
        v_tokens, v_attempts,
        array_fill(jsonb_build_object('upstream_task_id', p_task_id,
                                      'upstream_task', (SELECT t.key FROM flowforge.task t
                                                         WHERE t.id = p_task_id AND t.organization_id = p_org)),
                   ARRAY[cardinality(v_skipped)]), p_now);
    RETURN cardinality(v_skipped);
END;
$$;
COMMENT ON FUNCTION flowforge._skip_dependents(uuid, uuid, uuid, timestamptz) IS
  'Internal: marks every pending transitive dependent of a failed task of run p_run_id (organization p_org) skipped '
  '(event "skipped"); returns the count.';

-- Count tasks that reached a terminal state; the run ends when none is left:
-- succeeded when nothing failed, failed otherwise (event run_succeeded / run_failed).
CREATE OR REPLACE FUNCTION flowforge._settle_run(p_org uuid, p_run_id uuid, p_finished integer, p_failed integer,
                                                 p_now timestamptz)
RETURNS varchar
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_state varchar;
BEGIN
    -- One statement on the hot path (every last task of a run ends here): the
    -- counters, and when the run ends its event and the directory's ended_at.
    -- Fast path, measured (benchmarks/profile_claim.py): the event row and the
    -- directory's first-write-wins end inline, as _append_events and
    -- _record_run_ended write them (twin tests keep them in step).
    WITH settled AS (
        UPDATE flowforge.workflow_run r
        SET tasks_remaining = r.tasks_remaining - p_finished,
            tasks_failed = r.tasks_failed + p_failed,
            state = CASE WHEN r.tasks_remaining = p_finished
                         THEN CASE WHEN r.tasks_failed + p_failed > 0 THEN 'failed' ELSE 'succeeded' END
                         ELSE r.state END,
            finished_at = CASE WHEN r.tasks_remaining = p_finished THEN p_now END
        WHERE r.id = p_run_id AND r.organization_id = p_org AND r.state = 'running'
        RETURNING r.state, r.organization_id, r.tasks_failed
    ), ended AS (
        -- First write wins by coalesce (as in _record_run_ended: no "ended_at IS NULL" for a plan to walk).
        UPDATE flowforge.engine_run e SET ended_at = coalesce(e.ended_at, greatest(p_now, e.created_at))
        FROM settled s
        WHERE s.state <> 'running' AND e.organization_id = s.organization_id AND e.run_id = p_run_id
    ), event AS (
        INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind, from_state, to_state, detail,
                                              created_at)
        SELECT s.organization_id, p_run_id, 'run_' || s.state, 'running', s.state,
               jsonb_build_object('tasks_failed', s.tasks_failed), p_now
        FROM settled s WHERE s.state <> 'running'
    )
    SELECT s.state INTO v_state FROM settled s;
    RETURN v_state;
END;
$$;
COMMENT ON FUNCTION flowforge._settle_run(uuid, uuid, integer, integer, timestamptz) IS
  'Internal: subtracts finished tasks from the counters of running run p_run_id of organization p_org; when none remain the run becomes succeeded or '
  'failed (event "run_succeeded"/"run_failed"). Returns the run state, NULL when the run was not running.';
