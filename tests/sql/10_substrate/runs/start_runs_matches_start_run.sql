-- Twin test: start_run and start_runs are two copies of one rule (start_runs'
-- DAG path, _dag_start_runs, is the set-based fast path of _dag_start_run).
-- The same workflow and input through each must leave the same workflow_run,
-- task_run, directory and audit rows and the same events, ids aside.
BEGIN;
SELECT plan(6);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge.define_workflow('{"name": "twin_start", "tasks": [
    {"key": "a", "queue": "twin_q", "priority": 3, "worker_params": {"gpu": true}, "max_attempts": 5,
     "timeout": "10 minutes"},
    {"key": "b", "queue": "twin_q", "depends_on": ["a"], "affinity": "$.run.customer"},
    {"key": "c", "queue": "twin_q", "depends_on": ["a"], "affinity": "run", "affinity_policy": "hard"},
    {"key": "d", "queue": "twin_q", "depends_on": ["b", "c"], "affinity": "definition"}]}');

CREATE TEMP TABLE twin (path text PRIMARY KEY, run_id uuid NOT NULL);
INSERT INTO twin VALUES ('one', flowforge.start_run('twin_start', '{"customer": "acme"}', 'twin-key-1'));
INSERT INTO twin SELECT 'many', id FROM flowforge.start_runs('twin_start', ARRAY['{"customer": "acme"}']::jsonb[],
                                                             ARRAY['twin-key-2']) AS id;

CREATE FUNCTION pg_temp.run_of(p_path text) RETURNS text LANGUAGE sql AS $$
    SELECT row(r.workflow_id, r.state, r.input, r.tasks_total, r.tasks_remaining, r.tasks_failed, r.reason, r.created_at,
               r.started_at, r.finished_at, left(r.idempotency_key, 8))::text
    FROM flowforge.workflow_run r JOIN twin t ON t.run_id = r.id WHERE t.path = p_path
$$;
-- Task runs: every column but the ids; the run's own id inside an affinity key is written as <run>.
CREATE FUNCTION pg_temp.tasks_of(p_path text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(row(tr.task_id, tr.task_key, tr.queue, tr.priority, tr.state, tr.attempt, tr.max_attempts,
                          tr.fencing_token, tr.lease_owner, tr.lease_expires_at, tr.timeout, tr.ready_at,
                          tr.remaining_deps, tr.output, tr.error, tr.created_at, tr.started_at, tr.finished_at,
                          tr.worker_params, replace(tr.affinity_key, t.run_id::text, '<run>'), tr.affinity_policy,
                          tr.fans_out, tr.organization_id)::text, ' | ' ORDER BY tr.task_key)
    FROM flowforge.task_run tr JOIN twin t ON t.run_id = tr.workflow_run_id WHERE t.path = p_path
$$;
CREATE FUNCTION pg_temp.events_of(p_path text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(row(e.kind, tr.task_key, e.from_state, e.to_state, e.fencing_token, e.attempt, e.detail,
                          e.work_item_id, e.created_at, e.organization_id)::text, ' | '
                      ORDER BY e.task_run_id IS NOT NULL, tr.task_key)
    FROM flowforge.task_run_event e JOIN twin t ON t.run_id = e.workflow_run_id
    LEFT JOIN flowforge.task_run tr ON tr.id = e.task_run_id
    WHERE t.path = p_path
$$;
CREATE FUNCTION pg_temp.directory_of(p_path text) RETURNS text LANGUAGE sql AS $$
    SELECT row(e.organization_id, e.engine_kind, e.definition_id, e.parent_run_id, e.triggered_by, e.trigger_firing_id,
               e.ended_at, e.created_at, e.created_by, e.updated_at, e.updated_by, e.deleted_at)::text
    FROM flowforge.engine_run e JOIN twin t ON t.run_id = e.run_id WHERE t.path = p_path
$$;
CREATE FUNCTION pg_temp.audit_of(p_path text) RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(row(a.organization_id, a.actor, a.action, a.entity, a.fields, a.created_at)::text, ' | ')
    FROM flowforge.audit_log a JOIN twin t ON a.entity_id = t.run_id::text WHERE t.path = p_path
$$;

SELECT is(pg_temp.run_of('many'), pg_temp.run_of('one'), 'the same workflow_run row');
SELECT is(pg_temp.tasks_of('many'), pg_temp.tasks_of('one'), 'the same task_run rows');
SELECT is(pg_temp.events_of('many'), pg_temp.events_of('one'), 'the same events');
SELECT is(pg_temp.directory_of('many'), pg_temp.directory_of('one'), 'the same directory row');
SELECT is(pg_temp.audit_of('many'), pg_temp.audit_of('one'), 'the same audit row');
SELECT isnt(pg_temp.tasks_of('one'), NULL, 'fixture: there were rows to compare');

SELECT * FROM finish();
ROLLBACK;
