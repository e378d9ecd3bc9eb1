-- Fill a FlowForge database with finished history, set-based, as the superuser.
-- :runs workflow runs of workflow 'hist10' (10 independent tasks), all succeeded:
-- runs x 10 task runs (succeeded, fencing token 1) and their events
-- (created, claimed, completed per task run; run_started, run_succeeded per run:
-- 32 events a run) and their directory rows (engine_run, ended: what purge
-- goes by), spread over [:from, :until) (bench_history: the 30 days before
-- now; bench_retention: whole calendar months). Every constraint holds for
-- these rows. The scripts run it in chunks, each in its own transaction.

CREATE TEMP TABLE hist_run  AS
SELECT gen_random_uuid() AS id, :from + (g - 1) * ((:until - :from - interval '2 seconds') / :runs) AS t0
FROM generate_series(1, :runs) g;

INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, ended_at, created_at, created_by)
SELECT w.organization_id, h.id, 'dag', w.id, h.t0 + interval '2 seconds', h.t0, 'history'
FROM hist_run h, (SELECT id, organization_id FROM flowforge.workflow WHERE name = 'hist10') w;

INSERT INTO flowforge.workflow_run (id, organization_id, workflow_id, state, input, tasks_total, tasks_remaining,
                                    created_at, started_at, finished_at)
SELECT h.id, w.organization_id, w.id, 'succeeded', '{}', 10, 0, h.t0, h.t0, h.t0 + interval '2 seconds'
FROM hist_run h, (SELECT id, organization_id FROM flowforge.workflow WHERE name = 'hist10') w;

CREATE TEMP TABLE hist_task  AS
SELECT gen_random_uuid() AS id, h.id AS run_id, h.t0, t.id AS task_id, t.key, t.organization_id
FROM hist_run h
CROSS JOIN (SELECT t.id, t.key, t.organization_id FROM flowforge.task t
            JOIN flowforge.workflow w ON w.id = t.workflow_id WHERE w.name = 'hist10') t;

INSERT INTO flowforge.task_run (id, organization_id, workflow_run_id, task_id, task_key, queue, priority, state,
                                attempt, max_attempts, fencing_token, lease_owner, lease_expires_at, ready_at,
                                remaining_deps, output, created_at, started_at, finished_at)
SELECT x.id, x.organization_id, x.run_id, x.task_id, x.key, 'default', 0, 'succeeded', 1, 3, 1, 'history',
       NULL, x.t0, 0, '{"ok": true}', x.t0, x.t0 + interval '1 second', x.t0 + interval '2 seconds'
FROM hist_task x;

INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                      fencing_token, attempt, detail, created_at)
SELECT x.organization_id, x.run_id, x.id, e.kind, e.from_state, e.to_state, e.token, 1, e.detail, x.t0 + e.at
FROM hist_task x
CROSS JOIN (VALUES ('created', NULL, 'ready', 0, NULL::jsonb, interval '0'),
                   ('claimed', 'ready', 'running', 1, '{"worker": "history"}'::jsonb, interval '1 second'),
                   ('completed', 'running', 'succeeded', 1, NULL::jsonb, interval '2 seconds'))
     AS e(kind, from_state, to_state, token, detail, at);

INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, from_state, to_state,
                                      detail, created_at)
SELECT w.organization_id, h.id, NULL, e.kind, e.from_state, e.to_state, e.detail, h.t0 + e.at
FROM hist_run h, (SELECT organization_id FROM flowforge.workflow WHERE name = 'hist10') w
CROSS JOIN (VALUES ('run_started', NULL, 'running', '{"actor": "history"}'::jsonb, interval '0'),
                   ('run_succeeded', 'running', 'succeeded', '{"tasks_failed": 0}'::jsonb, interval '2 seconds'))
     AS e(kind, from_state, to_state, detail, at);

