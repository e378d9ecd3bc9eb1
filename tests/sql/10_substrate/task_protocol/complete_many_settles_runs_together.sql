-- complete_many settles every run of a batch in one statement (the set-based
-- twin of _settle_run): each run whose last task it completes ends with
-- exactly one run-level event and its directory row's ended_at; a run with
-- tasks left keeps running with its counter down by what the batch finished;
-- a run with an earlier failure ends failed.
BEGIN;
SELECT plan(12);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_single('settle_one', '{"queue": "settle"}');
SELECT flowforge.define_workflow('{"name": "settle_two", "tasks": [
    {"key": "x", "queue": "settle", "max_attempts": 1}, {"key": "y", "queue": "settle"}]}');

CREATE TEMP TABLE runs (label text PRIMARY KEY, id uuid NOT NULL);
INSERT INTO runs SELECT 'one_' || i, flowforge.start_run('settle_one', jsonb_build_object('i', i)) FROM generate_series(1, 4) i;
INSERT INTO runs VALUES ('two_open', flowforge.start_run('settle_two', '{"open": true}')),
                        ('two_failed', flowforge.start_run('settle_two', '{"failed": true}'));
CREATE TEMP TABLE held AS SELECT * FROM flowforge.claim(ARRAY['settle'], 'w', '30 seconds', 100);
SELECT is((SELECT count(*)::int FROM held), 8, 'fixture: every task of the six runs claimed');
-- two_failed's x fails for good (max_attempts 1): its run has one failure and one task left.
SELECT flowforge.fail(h.task_run_id, h.fencing_token, 'boom', false)
FROM held h JOIN runs r ON r.id = h.workflow_run_id WHERE r.label = 'two_failed' AND h.task_key = 'x';

-- One batch: the four single-task runs, two_open's x (not its y), two_failed's y.
CREATE TEMP TABLE out AS
SELECT * FROM flowforge.complete_many(
    (SELECT array_agg(h.task_run_id ORDER BY h.task_run_id) FROM held h JOIN runs r ON r.id = h.workflow_run_id
      WHERE r.label LIKE 'one_%' OR (r.label = 'two_open' AND h.task_key = 'x') OR (r.label = 'two_failed' AND h.task_key = 'y')),
    (SELECT array_agg(h.fencing_token ORDER BY h.task_run_id) FROM held h JOIN runs r ON r.id = h.workflow_run_id
      WHERE r.label LIKE 'one_%' OR (r.label = 'two_open' AND h.task_key = 'x') OR (r.label = 'two_failed' AND h.task_key = 'y')),
    NULL);
SELECT is((SELECT array_agg(DISTINCT outcome) FROM out), ARRAY['completed'], 'fixture: the six tasks complete');

SELECT is((SELECT count(*)::int FROM runs r JOIN flowforge.workflow_run w ON w.id = r.id
            WHERE r.label LIKE 'one_%' AND w.state = 'succeeded' AND w.tasks_remaining = 0
              AND w.finished_at = '2030-01-01 00:00:00+00'), 4,
          'every single-task run of the batch succeeded, counters at 0, finished now');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e JOIN runs r ON r.id = e.workflow_run_id
            WHERE r.label LIKE 'one_%' AND e.task_run_id IS NULL AND e.kind = 'run_succeeded'
              AND e.from_state = 'running' AND e.to_state = 'succeeded' AND e.detail = '{"tasks_failed": 0}'), 4,
          'one run_succeeded event per finished run, with its detail');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run e JOIN runs r ON r.id = e.run_id
            WHERE r.label LIKE 'one_%' AND e.ended_at = '2030-01-01 00:00:00+00'), 4,
          'each finished run''s directory row is ended');

SELECT is((SELECT row(w.state, w.tasks_remaining, w.tasks_failed, w.finished_at)::text FROM flowforge.workflow_run w
            JOIN runs r ON r.id = w.id WHERE r.label = 'two_open'),
          row('running', 1, 0, NULL::timestamptz)::text, 'a run with a task left keeps running, one fewer remaining');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e JOIN runs r ON r.id = e.workflow_run_id
            WHERE r.label = 'two_open' AND e.task_run_id IS NULL AND e.kind <> 'run_started'), 0,
          'no run-level event for the run still running');
SELECT is((SELECT e.ended_at FROM flowforge.engine_run e JOIN runs r ON r.id = e.run_id WHERE r.label = 'two_open'),
          NULL, 'its directory row is not ended');

SELECT is((SELECT row(w.state, w.tasks_remaining, w.tasks_failed)::text FROM flowforge.workflow_run w
            JOIN runs r ON r.id = w.id WHERE r.label = 'two_failed'),
          row('failed', 0, 1)::text, 'a run with an earlier failure ends failed when the batch finishes its last task');
SELECT is((SELECT e.detail FROM flowforge.task_run_event e JOIN runs r ON r.id = e.workflow_run_id
            WHERE r.label = 'two_failed' AND e.kind = 'run_failed' AND e.task_run_id IS NULL),
          '{"tasks_failed": 1}'::jsonb, 'its run_failed event counts the failure');

-- The run left open finishes through complete_many too; nothing is settled twice.
SELECT is((SELECT outcome FROM flowforge.complete_many(
              ARRAY[(SELECT h.task_run_id FROM held h JOIN runs r ON r.id = h.workflow_run_id
                      WHERE r.label = 'two_open' AND h.task_key = 'y')],
              ARRAY[(SELECT h.fencing_token FROM held h JOIN runs r ON r.id = h.workflow_run_id
                      WHERE r.label = 'two_open' AND h.task_key = 'y')], NULL)),
          'completed', 'the last task of the open run completes');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event e
            WHERE e.task_run_id IS NULL AND e.kind IN ('run_succeeded', 'run_failed')
              AND e.workflow_run_id IN (SELECT id FROM runs)), 6, 'six runs, six run-level end events');

SELECT * FROM finish();
ROLLBACK;
