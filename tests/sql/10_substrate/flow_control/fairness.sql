-- Fairness keys (stride scheduling, 22_flow_control.sql): among the keys of a
-- queue with ready work, claims go by priority, then by tag — eff(k) + (j - 1)
-- / weight(k), eff(k) = max(pass(k), P - 1) with P the highest pass among the
-- keys with ready work — then age; taking n units of k sets pass(k) = eff(k)
-- + n / weight(k), while two keys or more have ready work (a key alone keeps
-- no pass). Equal weights alternate one by one; weights share in proportion;
-- priority still comes first and, within a key, priority then age; a
-- newcomer (or a key back from idle) banks at most one round; units without a
-- key share the key null. Each scenario on its own queue.
BEGIN;
SELECT plan(12);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- The customer of each claimed task, one claim of p_batch.
CREATE FUNCTION pg_temp.claim_customers(p_queue text, p_batch integer DEFAULT 1) RETURNS SETOF text
LANGUAGE sql AS $$
    SELECT r.input ->> 'customer' FROM flowforge.claim(ARRAY[p_queue], 'ff-worker', '1 hour', p_batch) c
    JOIN flowforge.workflow_run r ON r.id = c.workflow_run_id
$$;
CREATE TEMP TABLE served (queue text, n serial, customer text);

-- ------------------------------------------------------------------ 100 of a, then 10 of b: alternate
SELECT flowforge_test.define_single('ff_a', '{"queue": "ffa", "fairness": {"key": "$.run.customer"}}') \gset
SELECT count(flowforge.start_run('ff_a', '{"customer": "a"}')) FROM generate_series(1, 100) \gset
SELECT flowforge_test.advance_clock('1 minute') \gset
SELECT count(flowforge.start_run('ff_a', '{"customer": "b"}')) FROM generate_series(1, 10) \gset
INSERT INTO served (queue, customer) SELECT 'ffa', pg_temp.claim_customers('ffa') FROM generate_series(1, 30);
SELECT is((SELECT string_agg(customer, '' ORDER BY n) FROM served WHERE queue = 'ffa'),
          'abababababababababab' || repeat('a', 10),
          'one at a time: a, b, a, b ... (b enqueued after all of a) until b''s 10 are done, then a alone');
SELECT is((SELECT max(n) FROM served WHERE queue = 'ffa' AND customer = 'b'), 20, 'b''s ten all start within the first 20 claims');

-- ------------------------------------------------------------------ a batch interleaves too
SELECT flowforge_test.define_single('ff_b', '{"queue": "ffb", "fairness": {"key": "$.run.customer"}}') \gset
SELECT count(flowforge.start_run('ff_b', jsonb_build_object('customer', c))) FROM unnest(ARRAY['x', 'y', 'z']) c, generate_series(1, 20) \gset
SELECT results_eq($$SELECT c, count(*)::int FROM pg_temp.claim_customers('ffb', 9) c GROUP BY c ORDER BY c$$,
                  $$VALUES ('x'::text, 3), ('y', 3), ('z', 3)$$, 'a claim of 9 over three keys takes 3 of each');

-- ------------------------------------------------------------------ weights
SELECT flowforge_test.define_single('ff_w', '{"queue": "ffw", "fairness": {"key": "$.run.customer", "weight": "$.run.weight"}}') \gset
SELECT count(flowforge.start_run('ff_w', '{"customer": "heavy", "weight": 3}')) FROM generate_series(1, 100) \gset
SELECT count(flowforge.start_run('ff_w', '{"customer": "light", "weight": 1}')) FROM generate_series(1, 100) \gset
INSERT INTO served (queue, customer) SELECT 'ffw', pg_temp.claim_customers('ffw') FROM generate_series(1, 40);
SELECT results_eq($$SELECT customer, count(*)::int FROM served WHERE queue = 'ffw' GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('heavy'::text, 30), ('light', 10)$$, 'weight 3 against 1: 30 and 10 of 40 claims');
SELECT is((SELECT max(gap) FROM (SELECT n - lag(n) OVER (ORDER BY n) AS gap FROM served
                                 WHERE queue = 'ffw' AND customer = 'light') g), 4,
          'spread out: light is served every 4th claim, not in a block');

-- ------------------------------------------------------------------ priority first; within a key, priority then age
SELECT flowforge.define_workflow($${"name": "ff_p", "tasks": [
    {"key": "t", "queue": "ffp", "fairness": {"key": "$.run.customer"}}]}$$) \gset
SELECT flowforge.define_workflow($${"name": "ff_p_urgent", "tasks": [
    {"key": "t", "queue": "ffp", "priority": -10, "fairness": {"key": "$.run.customer"}}]}$$) \gset
SELECT count(flowforge.start_run('ff_p', '{"customer": "a"}')) FROM generate_series(1, 5) \gset
SELECT count(flowforge.start_run('ff_p', '{"customer": "b"}')) FROM generate_series(1, 5) \gset
SELECT flowforge.start_run('ff_p_urgent', '{"customer": "a"}') AS urgent1 \gset
SELECT flowforge.start_run('ff_p_urgent', '{"customer": "a"}') AS urgent2 \gset
SELECT results_eq($$SELECT c.workflow_run_id FROM flowforge.claim(ARRAY['ffp'], 'ff-worker', '1 hour', 2) c ORDER BY 1$$,
                  format($$SELECT unnest(ARRAY[%L, %L]::uuid[]) ORDER BY 1$$, :'urgent1', :'urgent2'),
                  'priority comes first: both urgent units of a go before any of b''s, whatever the passes');
SELECT is((SELECT string_agg(c, '' ORDER BY n) FROM (SELECT row_number() OVER () AS n, c
                                                    FROM (SELECT pg_temp.claim_customers('ffp') AS c FROM generate_series(1, 4)) x) y),
          'baba', 'then b, which a''s two urgent claims put behind, goes first (it banks one round, not two), then they alternate');

-- ------------------------------------------------------------------ a newcomer banks at most one round
SELECT flowforge_test.define_single('ff_n', '{"queue": "ffn", "fairness": {"key": "$.run.customer"}}') \gset
SELECT count(flowforge.start_run('ff_n', '{"customer": "old"}')) FROM generate_series(1, 100) \gset
SELECT count(*) FROM (SELECT pg_temp.claim_customers('ffn') FROM generate_series(1, 50)) x \gset
SELECT count(flowforge.start_run('ff_n', '{"customer": "new"}')) FROM generate_series(1, 20) \gset
INSERT INTO served (queue, customer) SELECT 'ffn', pg_temp.claim_customers('ffn') FROM generate_series(1, 10);
SELECT is((SELECT string_agg(customer, ',' ORDER BY n) FROM served WHERE queue = 'ffn'),
          'old,new,old,new,old,new,old,new,old,new',
          'after 50 claims of old alone, a new key does not get 50 in a row: they alternate at once');

-- ------------------------------------------------------------------ no key: the key null
SELECT flowforge_test.define_single('ff_nk', '{"queue": "ffk", "fairness": {"key": "$.run.customer"}}') \gset
SELECT flowforge_test.define_single('ff_plain', '{"queue": "ffk"}') \gset
SELECT count(flowforge.start_run('ff_nk', '{"customer": "k"}')) FROM generate_series(1, 10) \gset
SELECT count(flowforge.start_run('ff_plain')) FROM generate_series(1, 10) \gset
SELECT count(flowforge.start_run('ff_nk', '{}')) FROM generate_series(1, 10) \gset
SELECT results_eq($$SELECT coalesce(c, '(none)'), count(*)::int FROM pg_temp.claim_customers('ffk', 10) c GROUP BY 1 ORDER BY 1$$,
                  $$VALUES ('(none)'::text, 5), ('k', 5)$$,
                  'units without a fairness key (a task without one, or an input without the field) share one key: 5 and 5');
SELECT is((SELECT pass FROM flowforge.flow_fair WHERE queue = 'ffk' AND value = 'null'), 5::numeric,
          'the key null''s pass counts its 5');
SELECT results_eq($$SELECT value, pass FROM flowforge.flow_fair WHERE queue = 'ffa' ORDER BY value$$,
                  $$VALUES ('"a"'::jsonb, 10::numeric), ('"b"'::jsonb, 10::numeric)$$,
                  'the passes count the claims made while keys competed: 10 each (a alone afterwards keeps no pass)');
SELECT is((SELECT count(*)::int FROM flowforge.flow_fair WHERE queue = 'ffn'), 2,
          'a queue with one key keeps no pass: ffn''s rows come from the claims after new arrived');

SELECT * FROM finish();
ROLLBACK;
