-- Regression (issue 16): receive_webhook passed an empty delivery id ('', an
-- X-FlowForge-Delivery header sent blank) on as the firing's delivery id,
-- and trigger_firing_delivery_id_valid (1 character at least) refused the
-- row: a signed delivery raised 23514 instead of firing, the JSON and the
-- non-JSON path alike. fire_trigger refuses '' with FF003 up front; the
-- receiver is handed raw headers, so it now reads a blank one as none (as
-- `flowforge serve` does). Fixed in the commit that added this file.
BEGIN;
SELECT plan(5);
SELECT flowforge_test.define_single('rg_blank');
SELECT flowforge.create_trigger('rg-blank', 'webhook', 'start', 'rg_blank', '{"secret": "rg-secret-0123456789"}');
CREATE FUNCTION pg_temp.post(p_body text, p_delivery text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT flowforge.receive_webhook('default', 'rg-blank', convert_to(p_body, 'UTF8'),
                                     flowforge_test.signature('rg-secret-0123456789', convert_to(p_body, 'UTF8')), p_delivery)
$$;

SELECT is(pg_temp.post('{}', '') -> 'firing' ->> 'outcome', 'started', 'a blank delivery id: the body fires');
SELECT is(pg_temp.post('{}', '') -> 'firing' ->> 'outcome', 'started', 'twice: each is a delivery of its own');
SELECT is(pg_temp.post('nope', '') ->> 'status', '400', 'a non-JSON body with a blank delivery id: 400');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'rg-blank' AND delivery_id IS NULL), 3,
          'three firings without a delivery id');
SELECT is(flowforge.receive_webhook('default', 'rg-blank', '\x00'::bytea, 'sha256=00', '') -> 'error', '"unknown trigger or bad signature"',
          'a bad signature with a blank delivery id claims none');

SELECT * FROM finish();
ROLLBACK;
