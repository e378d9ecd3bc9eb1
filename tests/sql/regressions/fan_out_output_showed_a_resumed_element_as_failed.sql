-- Regression (issue 15): fan_out_output gave an element without a success
-- the status of its child "ORDER BY created_at DESC LIMIT 1". After a
-- retry_run whose transaction time is not later than the old child's (the
-- same instant; or a retry that started, then waited for the run's lock
-- while the failing transaction created that child), the old failed or
-- cancelled child ties with or outranks the new pending one, and the element
-- was reported failed / cancelled while it was being run again. Fixed in the
-- commit that added this file: an element's live child (at most one,
-- work_item_checkpoint_live_uq) is its status; otherwise its latest settled one.
BEGIN;
SELECT plan(3);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge.define_workflow($${"name": "foo_resume", "tasks": [
    {"key": "m", "queue": "foo-resume", "max_attempts": 1, "map": {"over": "$.run.n", "max_concurrency": 3}}]}$$) \gset
SELECT flowforge.start_run('foo_resume', '{"n": [0, 1, 2, 3, 4]}') AS r \gset
SELECT flowforge_test.complete_child(:'r', 'm', 0, '"a"') IS NOT NULL AS x \gset
SELECT flowforge_test.fail_child(:'r', 'm', 1, 'no') IS NOT NULL AS x \gset
SELECT results_eq(
    format($$SELECT index, status FROM flowforge.fan_out_output(%L, 'm')$$, :'r'),
    $$VALUES (0::bigint, 'completed'), (1, 'failed'), (2, 'cancelled'), (3, 'cancelled'), (4, 'not_started')$$,
    'after the failure: completed, failed, cancelled, cancelled, not started');
-- The retry in the same instant: each resumed element's new child has the old one's created_at.
SELECT flowforge.retry_run(:'r') IS NULL AS x \gset
SELECT results_eq(
    format($$SELECT index, status FROM flowforge.fan_out_output(%L, 'm')$$, :'r'),
    $$VALUES (0::bigint, 'completed'), (1, 'pending'), (2, 'pending'), (3, 'pending'), (4, 'not_started')$$,
    'after the retry: the resumed elements are pending (their new children), not their old children''s failed / cancelled');
SELECT results_eq(
    format($$SELECT w.item_index, w.status::text, w.created_at FROM flowforge.work_item w WHERE w.run_id = %L AND w.item_index IN (1, 2)
             ORDER BY 1, 2$$, :'r'),
    $$VALUES (1, 'failed', '2030-01-01 00:00:00+00'::timestamptz), (1, 'pending', '2030-01-01 00:00:00+00'),
             (2, 'cancelled', '2030-01-01 00:00:00+00'), (2, 'pending', '2030-01-01 00:00:00+00')$$,
    '(the old and the new child of each share their created_at)');

SELECT * FROM finish();
ROLLBACK;
