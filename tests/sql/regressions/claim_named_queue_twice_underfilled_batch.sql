-- Regression: a claim that named one queue twice (queues => ARRAY['q', 'q'])
-- returned each ready task once per mention from its per-queue scans, then
-- cut the batch at `batch` rows — so it came back with fewer distinct tasks
-- than were ready (fixed in da65086 by de-duplicating the queue names).
BEGIN;
SELECT plan(2);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_single('dup_queue', '{"queue": "dup"}');
SELECT flowforge.start_run('dup_queue') FROM generate_series(1, 4);
CREATE TEMP TABLE claimed AS SELECT * FROM flowforge.claim(ARRAY['dup', 'dup', 'other'], 'w', '30 seconds', 4);
SELECT is((SELECT count(*)::int FROM claimed), 4, 'the batch is filled with four tasks');
SELECT is((SELECT count(DISTINCT task_run_id)::int FROM claimed), 4, 'four different tasks, none twice');
SELECT * FROM finish();
ROLLBACK;
