-- Regression (issue 12): cancel_run stamped finished_at with its own
-- transaction time. A claim that started after the cancel's transaction did
-- (an application transaction opened before it) and committed first left the
-- task with started_at later than the cancel's now(), and the cancel aborted
-- on taskrun_finished_after_started (23514) — 88 of 200 races in the field.
-- The clock is steered here to replay that order in one transaction.
BEGIN;
SELECT plan(3);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:10+00');
SELECT flowforge_test.define_single('raced', '{"queue": "race"}');
SELECT flowforge.start_run('raced') AS run \gset
SELECT count(*) FROM flowforge.claim(ARRAY['race'], 'w', '30 seconds', 1);  -- the claim at 00:00:10
SELECT flowforge_test.set_clock('2030-01-01 00:00:05+00');                    -- the cancel's older transaction time
SELECT lives_ok(format('SELECT flowforge.cancel_run(%L)', :'run'), 'the cancel succeeds');
SELECT results_eq(
    format($$SELECT state::text, finished_at FROM flowforge.task_run WHERE workflow_run_id = %L$$, :'run'),
    $$VALUES ('cancelled', '2030-01-01 00:00:10+00'::timestamptz)$$,
    'the task is cancelled, finished no earlier than it started');
SELECT is(flowforge_test.run_state(:'run'), 'cancelled', 'and so is the run');
SELECT * FROM finish();
ROLLBACK;
