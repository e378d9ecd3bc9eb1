-- list_queues(): configured queues and queues with live work, with their counts.
BEGIN;
SELECT plan(3);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_single('lq', '{"queue": "work"}');
SELECT flowforge.start_run('lq') FROM generate_series(1, 3);
SELECT count(*) FROM flowforge.claim(ARRAY['work'], 'w', '30 seconds', 1);
SELECT flowforge.configure_queue('pushy', 'ex');
SELECT results_eq(
    $$SELECT name, delivery, exchange, amqp_queue, ready, running, oldest_ready_at FROM flowforge.list_queues()$$,
    format($$VALUES ('pushy'::text, 'push'::text, 'ex'::text, %L::text, 0::bigint, 0::bigint, NULL::timestamptz),
                    ('work', 'pull', NULL, NULL, 2, 1, '2030-01-01 00:00:00+00')$$,
           'flowforge.' || current_database() || '.default.pushy'),
    'a configured push queue and a pull queue with live work, by name, with their counts');
SELECT is((SELECT routing_key FROM flowforge.list_queues() WHERE name = 'pushy'),
    current_database() || '.default.pushy', 'a push queue''s default routing is per database and organization');
SELECT is((SELECT count(*)::int FROM flowforge.list_queues() WHERE name = 'default'), 0,
    'a queue with nothing configured and nothing live is not listed');
SELECT * FROM finish();
ROLLBACK;
