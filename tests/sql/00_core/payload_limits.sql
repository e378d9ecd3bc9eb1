-- Payload limits: size and nesting depth (FF009), everywhere a caller hands
-- FlowForge a JSON document. A 10,000-deep document is valid jsonb but kills
-- the JSON parsers of most workers (Python's raised RecursionError in the
-- claim loop), so depth is bounded like size.
BEGIN;
SELECT plan(10);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_single('limits', '{"queue": "lim"}');

CREATE FUNCTION pg_temp.nested(p_depth integer) RETURNS jsonb LANGUAGE sql AS
$$ SELECT (repeat('[', p_depth) || '1' || repeat(']', p_depth))::jsonb $$;

SELECT lives_ok($$SELECT flowforge.start_run('limits', jsonb_build_object('x', pg_temp.nested(63)))$$,
    'an input nested 64 levels deep is accepted (the default max_json_depth)');
SELECT throws_ok($$SELECT flowforge.start_run('limits', jsonb_build_object('x', pg_temp.nested(64)))$$,
    'FF009', 'run input is nested more than 64 levels deep', 'one level more: FF009, saying so');
SELECT throws_ok($$SELECT flowforge.start_run('limits', jsonb_build_object('x', pg_temp.nested(10000)))$$,
    'FF009', NULL, 'a 10,000-deep input: FF009');
SELECT throws_ok($$SELECT flowforge.define_workflow(jsonb_build_object('name', 'deep', 'description', 'x',
                     'tasks', jsonb_build_array(jsonb_build_object('key', 'a')), 'x', pg_temp.nested(100)))$$,
    'FF009', NULL, 'a deep spec: FF009 before validation');

CREATE TEMP TABLE held AS SELECT * FROM flowforge.claim(ARRAY['lim'], 'w', '30 seconds', 10);
SELECT throws_ok(format($$SELECT flowforge.complete(%L, %s, pg_temp.nested(100))$$,
                        (SELECT task_run_id FROM held LIMIT 1), (SELECT fencing_token FROM held LIMIT 1)),
    'FF009', 'task output is nested more than 64 levels deep', 'complete with a deep output: FF009');
SELECT results_eq(
    format($$SELECT outcome FROM flowforge.complete_many(ARRAY[%L]::uuid[], ARRAY[%s]::bigint[], ARRAY[pg_temp.nested(100)])$$,
           (SELECT task_run_id FROM held LIMIT 1), (SELECT fencing_token FROM held LIMIT 1)),
    $$VALUES ('too_large'::text)$$, 'complete_many reports too_large for that task instead of aborting the batch');
SELECT is((SELECT state::text FROM flowforge.task_run WHERE id = (SELECT task_run_id FROM held LIMIT 1)), 'running',
    'and leaves it running, like complete, for the holder to fail it');
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT results_eq(
    format($$SELECT outcome FROM flowforge.complete_many(ARRAY[%L]::uuid[], ARRAY[%s]::bigint[],
                                                         ARRAY[jsonb_build_object('blob', repeat('x', 2000))])$$,
           (SELECT task_run_id FROM held LIMIT 1), (SELECT fencing_token FROM held LIMIT 1)),
    $$VALUES ('too_large'::text)$$, 'an output over max_payload_bytes is too_large as well');
SELECT lives_ok(format($$SELECT flowforge.fail(%L, %s, 'task output is over the limit', retryable => false)$$,
                       (SELECT task_run_id FROM held LIMIT 1), (SELECT fencing_token FROM held LIMIT 1)),
    'the holder fails it for good with the real cause');
SELECT is((SELECT error FROM flowforge.task_run WHERE id = (SELECT task_run_id FROM held LIMIT 1)),
    'task output is over the limit', 'which is what the task records, at once');
SELECT * FROM finish();
ROLLBACK;
