-- Regression (issue 16): receive_webhook recorded a signed body that is not
-- JSON (400) as a refused firing under its delivery id without asking whether
-- that delivery was already recorded. The sender's retry of the same delivery
-- (same X-FlowForge-Delivery) — or any non-JSON body under a delivery id that
-- had already fired — hit trigger_firing_delivery_uq and raised 23505, so the
-- receiver answered 500 and the sender kept retrying. Fixed in the commit that
-- added this file: a delivery already recorded is answered as a replay (202,
-- the first firing, duplicate: true) whatever the body, through the helper
-- _delivered_firing that fire_trigger uses too.
BEGIN;
SELECT plan(6);
SELECT flowforge_test.define_single('rg_hook');
SELECT flowforge.create_trigger('rg-hook', 'webhook', 'start', 'rg_hook', '{"secret": "rg-secret-0123456789"}');
CREATE FUNCTION pg_temp.post(p_body text, p_delivery text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT flowforge.receive_webhook('default', 'rg-hook', convert_to(p_body, 'UTF8'),
                                     flowforge_test.signature('rg-secret-0123456789', convert_to(p_body, 'UTF8')), p_delivery)
$$;

SELECT is(pg_temp.post('not json', 'd-1') ->> 'status', '400', 'a non-JSON delivery: 400');
SELECT is(pg_temp.post('not json', 'd-1'),
          jsonb_build_object('status', 202, 'firing', jsonb_build_object(
              'firing_id', (SELECT id FROM flowforge.trigger_firing WHERE delivery_id = 'd-1'), 'outcome', 'refused', 'run_id', NULL,
              'error', 'the body is not JSON', 'duplicate', true)),
          'its retry returns the first firing instead of raising');
SELECT is(pg_temp.post('{"n": 1}', 'd-2') -> 'firing' ->> 'outcome', 'started', 'a JSON delivery d-2 fires');
SELECT is(pg_temp.post('garbled', 'd-2') -> 'firing' ->> 'outcome', 'started',
          'a non-JSON body under the delivery id d-2 returns its first firing');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'rg-hook'), 2, 'one firing per delivery');
SELECT is(pg_temp.post('not json either', 'd-3') ->> 'status', '400', 'a new non-JSON delivery is still a 400');

SELECT * FROM finish();
ROLLBACK;
