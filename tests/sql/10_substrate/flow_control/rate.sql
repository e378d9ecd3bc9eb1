-- Rate limits are token buckets on flowforge.now() (steered here): `limit`
-- tokens, full at first use, refilled continuously at limit / per in whole
-- token-microseconds. Over a span d from first use at most limit +
-- floor(limit * d / per) units start, and a claimer that asks for everything
-- gets exactly that: 20 per second over 3 seconds is 80 (20 + 60), never 81.
-- Per key value (a jsonpath key) or one bucket (a fixed name); per queue
-- (configure_queue's rate); the views' token arithmetic matches the claim's.
BEGIN;
SELECT plan(16);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------------------------------ 20 per second, 3 seconds, steps of 10 ms
SELECT flowforge_test.define_single('frt', '{"queue": "frt", "rate_limit": {"key": "frt-api", "limit": 20, "per": "1 second"}}') \gset
SELECT count(flowforge.start_run('frt')) FROM generate_series(1, 200) \gset
CREATE TEMP TABLE frt_claims (ms integer, n integer);
DO $$
BEGIN
    FOR ms IN 0 .. 3000 BY 10 LOOP
        PERFORM flowforge_test.set_clock('2030-01-01 00:00:00+00'::timestamptz + ms * interval '1 millisecond');
        INSERT INTO frt_claims SELECT ms, count(*) FROM flowforge.claim(ARRAY['frt'], 'frt-worker', '1 minute', 1000);
    END LOOP;
END;
$$;
SELECT is((SELECT sum(n)::int FROM frt_claims), 80,
          '20 per second over 3 seconds of steered time, a bucket full at first use: exactly 20 + 60 = 80 claims');
SELECT is((SELECT n FROM frt_claims WHERE ms = 0), 20, 'the first claim takes the full bucket: 20');
SELECT is_empty(
    $$SELECT ms FROM (SELECT ms, sum(n) OVER (ORDER BY ms) AS so_far FROM frt_claims) x
      WHERE so_far <> 20 + floor(20 * ms / 1000.0)$$,
    'at every step, the claims so far are exactly 20 + floor(20 * t / 1 s): never one more, never one fewer');
SELECT is((SELECT count(*)::int FROM frt_claims WHERE n > 1 AND ms > 0), 0,
          'after the burst, at most one per step of 10 ms (one token every 50 ms)');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE queue = 'frt' AND state = 'running'), 80, 'and 80 run');
SELECT results_eq($$SELECT state::text, attempt::int, count(*)::int FROM flowforge.task_run WHERE queue = 'frt' AND state = 'ready'
                    GROUP BY 1, 2$$,
                  $$VALUES ('ready', 1, 120)$$, 'the 120 held back are ready, on their first attempt');

-- A bucket does not fill past its capacity, however long it idles.
SELECT flowforge_test.set_clock('2030-01-01 01:00:00+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['frt'], 'frt-worker', '1 minute', 1000)), 20,
          'an hour later: 20 again (full), not 72,000');

-- ------------------------------------------------------------------ a bucket per key value; the queue's own bucket
SELECT flowforge_test.define_single('frk', '{"queue": "frk", "rate_limit": {"key": "$.run.account", "limit": 2, "per": "1 minute"}}') \gset
SELECT count(flowforge.start_run('frk', jsonb_build_object('account', a))) FROM unnest(ARRAY['a', 'a', 'a', 'b', 'b', 'b']) AS a \gset
SELECT results_eq($$SELECT (SELECT input ->> 'account' FROM flowforge.workflow_run r WHERE r.id = c.workflow_run_id), count(*)::int
                    FROM flowforge.claim(ARRAY['frk'], 'frk-worker', '1 minute', 10) c GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('a'::text, 2), ('b', 2)$$, 'a jsonpath key: one bucket per value, 2 per minute each');
SELECT flowforge.configure_queue('frq', rate => '{"limit": 5, "per": "10 seconds"}') \gset
SELECT flowforge_test.define_single('frq', '{"queue": "frq"}') \gset
SELECT count(flowforge.start_run('frq')) FROM generate_series(1, 20) \gset
CREATE TEMP TABLE frq_claims (s integer, n integer);
DO $$
BEGIN
    FOR s IN 0 .. 10 LOOP
        PERFORM flowforge_test.set_clock('2030-01-01 01:00:00+00'::timestamptz + s * interval '1 second');
        INSERT INTO frq_claims SELECT s, count(*) FROM flowforge.claim(ARRAY['frq'], 'frq-worker', '1 minute', 100);
    END LOOP;
END;
$$;
SELECT is((SELECT array_agg(n ORDER BY s) FROM frq_claims), ARRAY[5, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
          'a queue''s rate of 5 per 10 seconds: 5 at once, then one every 2 seconds');

-- Changing a rate starts a new bucket (full).
SELECT flowforge.configure_queue('frq', rate => '{"limit": 3, "per": "10 seconds"}') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['frq'], 'frq-worker', '1 minute', 100)), 3,
          'a new rate is a new bucket, full: 3');
SELECT is((SELECT count(*)::int FROM flowforge.flow_bucket WHERE name = 'frq'), 2, '(one bucket per rate)');

-- ------------------------------------------------------------------ the views read the bucket as the claim does
SELECT flowforge_test.set_clock('2030-01-01 01:00:12.5+00') \gset
SELECT is((SELECT (rate ->> 'tokens')::numeric FROM flowforge.queue_depth WHERE queue = 'frq'),
          (SELECT trim_scale(round(flowforge._flow_refill(b.level, b.refilled_at, b.rate_limit, b.rate_per, flowforge.now())::numeric
                                   / flowforge._flow_per_us(b.rate_per), 6))
           FROM flowforge.flow_bucket b WHERE b.name = 'frq' AND b.rate_limit = 3),
          'queue_depth''s tokens left are _flow_refill''s (the view''s arithmetic inline, the twin of the function''s)');
SELECT is((SELECT (rate ->> 'tokens')::numeric FROM flowforge.queue_depth WHERE queue = 'frq'), 0.75::numeric,
          '3 per 10 seconds, 2.5 s after the bucket was emptied: 0.75 tokens');
SELECT is((SELECT until FROM flowforge.why_not_ready WHERE queue = 'frq' LIMIT 1), '2030-01-01 01:00:13.333334+00'::timestamptz,
          'why_not_ready''s until is when the next whole token is there (rounded up to the microsecond)');
SELECT flowforge_test.set_clock('2030-01-01 01:00:13.333333+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['frq'], 'frq-worker', '1 minute', 100)), 0,
          'a microsecond before it, nothing goes');
SELECT flowforge_test.set_clock('2030-01-01 01:00:13.333334+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['frq'], 'frq-worker', '1 minute', 100)), 1,
          'and at that instant one claim goes');

SELECT * FROM finish();
ROLLBACK;
