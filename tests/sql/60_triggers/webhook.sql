-- receive_webhook: the HTTP receiver's one call. The HMAC-SHA256 of the body
-- under the trigger's secret is checked in SQL; then the body is fired.
--   202  a good signature: fire_trigger's answer under "firing" (a replayed
--        delivery id: the first firing)
--   401  one answer for an unknown organization or trigger, a trigger that is
--        no webhook, and a bad or malformed signature — a refused firing only
--        when the webhook trigger exists, never with the claimed delivery id
--   400  a signed body that is not JSON (a refused firing)
--   413  a body over max_payload_bytes (nothing recorded)
-- Only flowforge_webhook (and the owners) may execute it; the secret is
-- readable by no runtime role and not by flowforge_readonly.
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(105);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');

CREATE TEMP TABLE got (n serial PRIMARY KEY, label text UNIQUE NOT NULL, answer jsonb);
CREATE FUNCTION pg_temp.hook(p_label text, p_org text, p_trigger text, p_body bytea, p_signature text,
                             p_delivery_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql AS $$
    INSERT INTO got (label, answer)
    SELECT p_label, flowforge.receive_webhook(p_org, p_trigger, p_body, p_signature, p_delivery_id)
    RETURNING answer
$$;
-- A body signed with the secret of the default organization's webhooks.
CREATE FUNCTION pg_temp.signed(p_body text) RETURNS text LANGUAGE sql AS $$
    SELECT flowforge_test.signature('wh-secret-0123456789', convert_to(p_body, 'UTF8'))
$$;
CREATE FUNCTION pg_temp.b(p_text text) RETURNS bytea LANGUAGE sql AS $$ SELECT convert_to(p_text, 'UTF8') $$;
CREATE FUNCTION pg_temp.firing(p_label text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT to_jsonb(f) FROM flowforge.trigger_firing f
    WHERE f.id = (SELECT (answer -> 'firing' ->> 'firing_id')::uuid FROM got WHERE label = p_label)
$$;
CREATE FUNCTION pg_temp.recorded() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM flowforge.trigger_firing $$;
CREATE TEMP TABLE mark (k text PRIMARY KEY, n bigint);
CREATE FUNCTION pg_temp.mark(p_k text) RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO mark VALUES (p_k, pg_temp.recorded()) ON CONFLICT (k) DO UPDATE SET n = EXCLUDED.n RETURNING n
$$;
CREATE FUNCTION pg_temp.since(p_k text) RETURNS bigint LANGUAGE sql AS $$
    SELECT pg_temp.recorded() - n FROM mark WHERE k = p_k
$$;

-- ------------------------------------------------------------------ fixture
SELECT isnt(flowforge_test.define_single('wh_job'), NULL, 'fixture: wh_job');
SELECT isnt(flowforge_test.define_order('wh_order'), NULL, 'fixture: wh_order');
SELECT isnt(flowforge.create_trigger('wh-start', 'webhook', 'start', 'wh_job', '{"secret": "wh-secret-0123456789"}'), NULL,
            'fixture: wh-start, a webhook starting wh_job');
SELECT isnt(flowforge.create_trigger('wh-pay', 'webhook', 'signal', 'paid', '{"secret": "wh-secret-0123456789", "run_id_path": "$.run"}'),
            NULL, 'fixture: wh-pay, a webhook signalling paid');
SELECT isnt(flowforge.create_trigger('wh-vector', 'webhook', 'start', 'wh_job', jsonb_build_object('secret', repeat(chr(11), 20))),
            NULL, 'fixture: wh-vector, whose secret is RFC 4231 test case 1''s key (20 bytes 0x0b)');
SELECT isnt(flowforge.create_trigger('wh-cron', 'cron', 'start', 'wh_job', '{"cron": "@yearly"}'), NULL, 'fixture: wh-cron, no webhook');
SELECT isnt(flowforge.create_trigger('wh-off', 'webhook', 'start', 'wh_job', '{"secret": "wh-secret-0123456789"}'), NULL, 'fixture: wh-off');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('wh-off', false)$$, 'fixture: wh-off disabled');
SELECT isnt(flowforge.create_trigger('wh-dropped', 'webhook', 'start', 'wh_job', '{"secret": "wh-secret-0123456789"}'), NULL, 'fixture: wh-dropped');
SELECT lives_ok($$SELECT flowforge.drop_trigger('wh-dropped')$$, 'fixture: wh-dropped dropped');

-- ------------------------------------------------------------------ the signature
SELECT is(encode(flowforge._hmac_sha256(decode(repeat('0b', 20), 'hex'), pg_temp.b('Hi There')), 'hex'),
          'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7', 'HMAC-SHA256 of RFC 4231 test case 1');
SELECT is(pg_temp.hook('vector', 'default', 'wh-vector', pg_temp.b('Hi There'),
                       'sha256=b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'),
          '{"status": 400, "error": "the body is not JSON"}', 'the vector''s MAC is accepted as the signature of its body (then 400: it is no JSON)');
SELECT is(pg_temp.hook('vector wrong', 'default', 'wh-vector', pg_temp.b('Hi There'),
                       'sha256=b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff8') ->> 'status',
          '401', 'one bit off: 401');

-- ------------------------------------------------------------------ 202
SELECT is(pg_temp.hook('ok', 'default', 'wh-start', pg_temp.b('{"ref":"main","n":1}'), pg_temp.signed('{"ref":"main","n":1}'), 'd-1')
          - 'firing', '{"status": 202}', 'a good signature: 202');
SELECT is((SELECT (answer -> 'firing') - 'firing_id' - 'run_id' FROM got WHERE label = 'ok'), '{"outcome": "started", "error": null}',
          'with the firing as fire_trigger answers it');
SELECT is(pg_temp.firing('ok') - 'id' - 'run_id' - 'trigger_id',
          jsonb_build_object('organization_id', '00000000-0000-0000-0000-000000000001', 'trigger_name', 'wh-start',
                             'trigger_type', 'webhook', 'payload', '{"ref": "main", "n": 1}'::jsonb, 'action', 'start',
                             'definition_id', (SELECT id FROM flowforge.workflow WHERE name = 'wh_job'), 'event', NULL,
                             'outcome', 'started', 'error', NULL, 'fired_on', '2030-01-01T00:00:00+00:00',
                             'recorded_at', '2030-01-01T00:00:00+00:00', 'delivery_id', 'd-1', 'created_by', 'postgres'),
          'its firing: the body as its payload, fired_on our now, the delivery id');
SELECT results_eq(
    $$SELECT e.triggered_by::text, e.trigger_firing_id, r.input::jsonb FROM flowforge.engine_run e JOIN flowforge.workflow_run r ON r.id = e.run_id
      WHERE e.run_id = (SELECT (answer -> 'firing' ->> 'run_id')::uuid FROM got WHERE label = 'ok')$$,
    $$SELECT 'wh-start', (SELECT (answer -> 'firing' ->> 'firing_id')::uuid FROM got WHERE label = 'ok'), '{"ref": "main", "n": 1}'::jsonb$$,
    'the run it started names the trigger and the firing; its input is the body');
SELECT is(pg_temp.hook('upper', 'default', 'wh-start', pg_temp.b('{"n":2}'), upper(pg_temp.signed('{"n":2}'))) ->> 'status',
          '401', 'the prefix is "sha256=" in lower case (SHA256= is refused)');
SELECT is(pg_temp.hook('upper hex', 'default', 'wh-start', pg_temp.b('{"n":2}'),
                       'sha256=' || upper(substr(pg_temp.signed('{"n":2}'), 8))) ->> 'status',
          '202', 'hex digits in capitals are accepted');

-- ------------------------------------------------------------------ 401: one answer, a refusal recorded only for a webhook that exists
SELECT pg_temp.mark('401 unknown');
SELECT is(pg_temp.hook('no org', 'no-such-org', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), 'd-x'),
          '{"status": 401, "error": "unknown trigger or bad signature"}', 'an unknown organization: 401');
SELECT is(pg_temp.hook('no trigger', 'default', 'no-such-hook', pg_temp.b('{}'), pg_temp.signed('{}'), 'd-x') ->> 'status', '401',
          'an unknown trigger: 401');
SELECT is(pg_temp.hook('not a webhook', 'default', 'wh-cron', pg_temp.b('{}'), pg_temp.signed('{}'), 'd-x') ->> 'status', '401',
          'a trigger that is no webhook: 401');
SELECT is(pg_temp.hook('dropped', 'default', 'wh-dropped', pg_temp.b('{}'), pg_temp.signed('{}'), 'd-x') ->> 'status', '401',
          'a dropped webhook (its secret erased): 401');
SELECT is(pg_temp.hook('null org', NULL, 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}')) ->> 'status', '401', 'no organization: 401');
SELECT is(pg_temp.since('401 unknown'), 0::bigint, 'none of them recorded anything: there is no webhook to record it for');

SELECT pg_temp.mark('401 bad');
SELECT is(pg_temp.hook('bad', 'default', 'wh-start', pg_temp.b('{"evil":true}'),
                       flowforge_test.signature('another-secret-0000', pg_temp.b('{"evil":true}')), 'd-7') ->> 'status', '401',
          'a signature under another key: 401');
SELECT is(pg_temp.hook('tampered', 'default', 'wh-start', pg_temp.b('{"n":3}'), pg_temp.signed('{"n":2}')) ->> 'status', '401',
          'a signature of another body: 401');
SELECT is(pg_temp.hook('bare hex', 'default', 'wh-start', pg_temp.b('{}'), substr(pg_temp.signed('{}'), 8)) ->> 'status', '401',
          'the hex without "sha256=": 401');
SELECT is(pg_temp.hook('short', 'default', 'wh-start', pg_temp.b('{}'), left(pg_temp.signed('{}'), 70)) ->> 'status', '401',
          'a MAC one hex digit short: 401');
SELECT is(pg_temp.hook('long', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}') || '0') ->> 'status', '401',
          'a MAC one hex digit long: 401');
SELECT is(pg_temp.hook('not hex', 'default', 'wh-start', pg_temp.b('{}'), 'sha256=' || repeat('g', 64)) ->> 'status', '401',
          'a MAC that is no hex: 401');
SELECT is(pg_temp.hook('sha1', 'default', 'wh-start', pg_temp.b('{}'), 'sha1=' || substr(pg_temp.signed('{}'), 8)) ->> 'status', '401',
          'another algorithm''s prefix: 401');
SELECT is(pg_temp.hook('no signature', 'default', 'wh-start', pg_temp.b('{}'), NULL) ->> 'status', '401', 'no signature: 401');
SELECT is(pg_temp.hook('empty signature', 'default', 'wh-start', pg_temp.b('{}'), '') ->> 'status', '401', 'an empty signature: 401');
SELECT is(pg_temp.hook('bad not json', 'default', 'wh-start', pg_temp.b('<xml/>'), pg_temp.signed('<xml>')) ->> 'status', '401',
          'a bad signature of a body that is no JSON: 401 (the signature is checked first)');
SELECT is((SELECT count(DISTINCT answer)::int FROM got WHERE answer ->> 'status' = '401'), 1,
          'every 401 is the same answer, byte for byte: nothing tells an unknown name from a bad signature');
SELECT is(pg_temp.since('401 bad'), 10::bigint, 'each bad signature to the existing webhook is one refused firing');
SELECT results_eq(
    $$SELECT f.outcome::text, f.trigger_id, f.trigger_type::text, f.action::text, f.run_id, f.delivery_id::text, f.payload, f.error,
             f.fired_on, f.recorded_at
      FROM flowforge.trigger_firing f
      WHERE f.trigger_name = 'wh-start' AND f.error LIKE 'the signature%' AND f.payload IN ('{"evil": true}', '{"n": 3}')
      ORDER BY f.payload::text$$,
    $$SELECT 'refused', (SELECT id FROM flowforge.scheduled_trigger WHERE name = 'wh-start'), 'webhook', NULL::text, NULL::uuid, NULL::text,
             '{"evil": true}'::jsonb,
             'the signature does not match the body (X-FlowForge-Signature); claimed delivery id ''d-7''',
             '2030-01-01 00:00+00'::timestamptz, '2030-01-01 00:00+00'::timestamptz
      UNION ALL
      SELECT 'refused', (SELECT id FROM flowforge.scheduled_trigger WHERE name = 'wh-start'), 'webhook', NULL, NULL, NULL,
             '{"n": 3}', 'the signature does not match the body (X-FlowForge-Signature)', '2030-01-01 00:00+00', '2030-01-01 00:00+00'$$,
    'a refused firing keeps what arrived (unverified), names the claimed delivery id in its error, never in delivery_id, '
    'and has no action (nothing was attempted)');
SELECT is((SELECT payload FROM flowforge.trigger_firing WHERE error LIKE 'the signature%' AND trigger_name = 'wh-start'
           AND payload ? 'body_bytes'), '{"body_bytes": 6}'::jsonb, 'a body that is no JSON is kept as its size');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'wh-start' AND delivery_id IS NOT NULL), 1,
          'no refused signature took a delivery id (only d-1, the genuine one)');
SELECT is(pg_temp.hook('genuine d-7', 'default', 'wh-start', pg_temp.b('{"n":7}'), pg_temp.signed('{"n":7}'), 'd-7') -> 'firing' ->> 'outcome',
          'started', 'so the genuine delivery d-7 after the forged one fires (it is no replay)');
SELECT is((SELECT answer -> 'firing' -> 'duplicate' FROM got WHERE label = 'genuine d-7'), NULL, 'not a duplicate');

-- ------------------------------------------------------------------ 400
SELECT pg_temp.mark('400');
SELECT is(pg_temp.hook('not json', 'default', 'wh-start', pg_temp.b('not json'), pg_temp.signed('not json'), 'd-400'),
          '{"status": 400, "error": "the body is not JSON"}', 'a signed body that is no JSON: 400');
SELECT is(pg_temp.since('400'), 1::bigint, 'one firing recorded');
SELECT results_eq(
    $$SELECT outcome::text, trigger_id, action::text, payload, error, delivery_id::text, run_id FROM flowforge.trigger_firing
      WHERE delivery_id = 'd-400'$$,
    $$SELECT 'refused', (SELECT id FROM flowforge.scheduled_trigger WHERE name = 'wh-start'), NULL::text, '{"body_bytes": 8}'::jsonb,
             'the body is not JSON', 'd-400', NULL::uuid$$,
    'refused: the body''s size as the payload, why, and the delivery id (the delivery was genuine)');
SELECT is(pg_temp.hook('not utf8', 'default', 'wh-start', '\xfffe7b7d'::bytea,
                       flowforge_test.signature('wh-secret-0123456789', '\xfffe7b7d'::bytea)) ->> 'status', '400',
          'a signed body that is not UTF-8: 400');
SELECT is(pg_temp.hook('empty body', 'default', 'wh-start', ''::bytea, flowforge_test.signature('wh-secret-0123456789', ''::bytea)) ->> 'status',
          '400', 'an empty signed body: 400');
SELECT pg_temp.mark('400 replay');
SELECT is(pg_temp.hook('not json again', 'default', 'wh-start', pg_temp.b('not json'), pg_temp.signed('not json'), 'd-400'),
          jsonb_build_object('status', 202, 'firing', jsonb_build_object(
              'firing_id', (SELECT id FROM flowforge.trigger_firing WHERE delivery_id = 'd-400'), 'outcome', 'refused',
              'run_id', NULL, 'error', 'the body is not JSON', 'duplicate', true)),
          'the same non-JSON delivery sent again returns its first firing (one firing per delivery)');
SELECT is(pg_temp.hook('not json, delivered id', 'default', 'wh-start', pg_temp.b('oops'), pg_temp.signed('oops'), 'd-1')
          -> 'firing' ->> 'firing_id', (SELECT answer -> 'firing' ->> 'firing_id' FROM got WHERE label = 'ok'),
          'a non-JSON body under a delivery id already fired returns that first firing');
SELECT is(pg_temp.since('400 replay'), 0::bigint, 'neither recorded anything');

-- ------------------------------------------------------------------ replays
SELECT pg_temp.mark('replay');
SELECT is(pg_temp.hook('ok again', 'default', 'wh-start', pg_temp.b('{"ref":"main","n":1}'), pg_temp.signed('{"ref":"main","n":1}'), 'd-1'),
          jsonb_build_object('status', 202, 'firing', (SELECT answer -> 'firing' FROM got WHERE label = 'ok') || '{"duplicate": true}'),
          'a replayed delivery id returns the first firing, marked duplicate');
SELECT is(pg_temp.hook('ok other body', 'default', 'wh-start', pg_temp.b('{"n":99}'), pg_temp.signed('{"n":99}'), 'd-1')
          -> 'firing' ->> 'firing_id', (SELECT answer -> 'firing' ->> 'firing_id' FROM got WHERE label = 'ok'),
          'whatever the body (the delivery id decides)');
SELECT is(pg_temp.since('replay'), 0::bigint, 'no firing recorded');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'wh-start'), 3, 'no run started (still d-1, upper hex, d-7)');
SELECT is(pg_temp.hook('bad replay', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{"x":1}'), 'd-1') ->> 'status', '401',
          'a replay with a bad signature is a bad signature (401), not the first firing');
SELECT is(pg_temp.hook('no delivery 1', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}')) -> 'firing' ->> 'outcome', 'started',
          'without a delivery id');
SELECT is(pg_temp.hook('no delivery 2', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}')) -> 'firing' ->> 'outcome', 'started',
          'every delivery is new');
SELECT is(pg_temp.hook('empty delivery 1', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), '') -> 'firing' ->> 'outcome',
          'started', 'an empty delivery id is none (as the receiver passes a blank header)');
SELECT is(pg_temp.hook('empty delivery 2', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), '') -> 'firing' ->> 'outcome',
          'started', 'so two of them are two deliveries');
SELECT is(pg_temp.hook('empty delivery 400', 'default', 'wh-start', pg_temp.b('?'), pg_temp.signed('?'), '') ->> 'status', '400',
          'and a non-JSON body with an empty delivery id is a plain 400');
SELECT is(pg_temp.firing('empty delivery 1') -> 'delivery_id', 'null'::jsonb, 'recorded without a delivery id');
SELECT is(pg_temp.hook('long delivery', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), repeat('L', 250)),
          '{"status": 400, "error": "the delivery id (X-FlowForge-Delivery) is over 200 characters"}'::jsonb,
          'a delivery id over 200 characters: 400 (cut, two ids sharing their first 200 characters would be one)');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE delivery_id LIKE 'LLLL%'), 0,
          'nothing recorded for it');
SELECT is(pg_temp.hook('long delivery 2', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), repeat('L', 200))
          -> 'firing' ->> 'outcome', 'started', 'a delivery id of exactly 200 characters fires');
SELECT is(pg_temp.hook('d-1 to wh-pay', 'default', 'wh-pay', pg_temp.b('{"run":"00000000-0000-0000-0000-0000000000aa"}'),
                       pg_temp.signed('{"run":"00000000-0000-0000-0000-0000000000aa"}'), 'd-1') -> 'firing' ->> 'outcome',
          'refused', 'another webhook''s delivery d-1 is its own (refused: the run does not exist)');
SELECT is(pg_temp.firing('d-1 to wh-pay') ->> 'error', 'run 00000000-0000-0000-0000-0000000000aa not found (FF001)',
          '202 with the refused firing: the delivery was recorded');

-- ------------------------------------------------------------------ what fires: a signal, a disabled trigger
CREATE TEMP TABLE m AS SELECT flowforge.start_run('wh_order') AS run;
SELECT is(pg_temp.hook('signal', 'default', 'wh-pay', pg_temp.b(format('{"run":"%s","amount":120}', (SELECT run FROM m))),
                       pg_temp.signed(format('{"run":"%s","amount":120}', (SELECT run FROM m))), 'pay-1') -> 'firing' ->> 'outcome',
          'signalled', 'a signal webhook moves its machine');
SELECT is(flowforge_test.machine_state((SELECT run FROM m)), 'shipping', 'the order is shipping');
SELECT is((SELECT event_id::text FROM flowforge.machine_transition WHERE run_id = (SELECT run FROM m) AND n = 2), 'pay-1',
          'the delivery id is the event id');
SELECT is((pg_temp.hook('off', 'default', 'wh-off', pg_temp.b('{}'), pg_temp.signed('{}'), 'off-1') -> 'firing') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "trigger ''wh-off'' is disabled"}',
          'a disabled webhook: 202 with a refused firing');

-- ------------------------------------------------------------------ 413, and the JSON limits
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT pg_temp.mark('413');
CREATE TEMP TABLE big AS SELECT '{"pad":"' || repeat('x', 1015) || '"}' AS body;
SELECT is(octet_length((SELECT body FROM big)), 1025, 'fixture: a 1025-byte JSON body (the limit lowered to 1024)');
SELECT is(pg_temp.hook('too big', 'default', 'wh-start', pg_temp.b((SELECT body FROM big)), pg_temp.signed((SELECT body FROM big)), 'big-1'),
          '{"status": 413, "error": "the body is over the limit of 1024 bytes"}', 'over the limit: 413, even well signed');
SELECT is(pg_temp.hook('too big unknown', 'default', 'no-such-hook', pg_temp.b((SELECT body FROM big)), 'x') ->> 'status', '413',
          'before anything else is looked at');
SELECT is(pg_temp.hook('null body', 'default', 'wh-start', NULL, pg_temp.signed('')) ->> 'status', '413', 'no body at all: 413');
SELECT is(pg_temp.since('413'), 0::bigint, 'a 413 records nothing');
CREATE TEMP TABLE fits AS SELECT '{"p": "' || repeat('y', 1015) || '"}' AS body;
SELECT is(pg_temp.hook('at the limit', 'default', 'wh-start', pg_temp.b((SELECT body FROM fits)), pg_temp.signed((SELECT body FROM fits)))
          -> 'firing' ->> 'outcome', 'started', 'a body of exactly 1024 bytes (stored as written) fires');
SELECT is(pg_temp.firing('at the limit') -> 'payload', (SELECT body::jsonb FROM fits), 'with the body as its payload');
CREATE TEMP TABLE fits_string AS SELECT '"' || repeat('y', 1022) || '"' AS body;
SELECT is(pg_temp.hook('string at the limit', 'default', 'wh-start', pg_temp.b((SELECT body FROM fits_string)),
                       pg_temp.signed((SELECT body FROM fits_string))) -> 'firing' ->> 'error',
          'run input is 1037 bytes, over the limit of 1024 bytes (FF009)',
          'a 1024-byte JSON string is accepted but its run input {"payload": ...} is over the limit: 202 with a refused firing');
-- JSON within the byte limit that PostgreSQL stores larger ({"k":1} is {"k": 1}): FF009 is raised, nothing recorded.
CREATE TEMP TABLE compact AS SELECT '{' || string_agg(format('"k%s":%s', i, i), ',') || '}' AS body FROM generate_series(1, 110) i;
SELECT results_eq($$SELECT octet_length(body), octet_length(body::jsonb::text) FROM compact$$, $$VALUES (995, 1214)$$,
                  'fixture: a compact 995-byte body whose stored JSON is 1214 bytes');
SELECT pg_temp.mark('FF009');
SELECT throws_ok(format('SELECT flowforge.receive_webhook(%L, %L, %L, %L)', 'default', 'wh-start',
                        pg_temp.b((SELECT body FROM compact)), pg_temp.signed((SELECT body FROM compact))),
                 'FF009', 'webhook body is 1214 bytes, over the limit of 1024 bytes',
                 'is refused with FF009 (the limit applies to the stored JSON, as everywhere)');
UPDATE flowforge.setting SET max_payload_bytes = 1048576;
SELECT throws_ok(format('SELECT flowforge.receive_webhook(%L, %L, %L, %L)', 'default', 'wh-start',
                        pg_temp.b(repeat('[', 65) || '1' || repeat(']', 65)), pg_temp.signed(repeat('[', 65) || '1' || repeat(']', 65))),
                 'FF009', 'webhook body is nested more than 64 levels deep', 'a signed body nested deeper than max_json_depth: FF009');
SELECT is(pg_temp.since('FF009'), 0::bigint, 'FF009 records nothing');

-- ------------------------------------------------------------------ organizations
SELECT isnt(flowforge.create_organization('wh-other', 'Other'), NULL, 'fixture: organization wh-other');
SELECT flowforge_test.login('ff_t16_wh_other', 'wh-other', 'admin');
SELECT is(flowforge_test.as_login('ff_t16_wh_other', $$SELECT jsonb_build_array(
              flowforge.define_workflow('{"name": "wh_job", "tasks": [{"key": "only"}]}'),
              flowforge.create_trigger('wh-start', 'webhook', 'start', 'wh_job', '{"secret": "other-secret-abcdef"}'))$$) ->> 'sqlstate',
          NULL, 'fixture: wh-other has its own webhook wh-start, under another secret');
SELECT pg_temp.mark('orgs');
SELECT is(pg_temp.hook('other, our key', 'wh-other', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'), 'o-1') ->> 'status', '401',
          'our key does not open the other organization''s webhook of the same name');
SELECT results_eq(
    $$SELECT o.slug::text, f.outcome::text FROM flowforge.trigger_firing f JOIN flowforge.organization o ON o.id = f.organization_id
      WHERE f.trigger_id = (SELECT t.id FROM flowforge.scheduled_trigger t JOIN flowforge.organization x ON x.id = t.organization_id
                            WHERE x.slug = 'wh-other' AND t.name = 'wh-start')$$,
    $$VALUES ('wh-other', 'refused')$$, 'the refusal is recorded in that organization, against its trigger');
SELECT is(pg_temp.hook('other, its key', 'wh-other', 'wh-start', pg_temp.b('{}'), flowforge_test.signature('other-secret-abcdef', pg_temp.b('{}')), 'o-1')
          -> 'firing' ->> 'outcome', 'started', 'its own key does');
SELECT is((SELECT o.slug::text FROM flowforge.engine_run e JOIN flowforge.organization o ON o.id = e.organization_id
           WHERE e.run_id = (SELECT (answer -> 'firing' ->> 'run_id')::uuid FROM got WHERE label = 'other, its key')), 'wh-other',
          'and starts its own workflow, in its own organization');
SELECT is(pg_temp.hook('ours, its key', 'default', 'wh-start', pg_temp.b('{}'), flowforge_test.signature('other-secret-abcdef', pg_temp.b('{}')))
          ->> 'status', '401', 'its key does not open ours');
SELECT is(pg_temp.since('orgs'), 3::bigint, 'three firings: two refused, one started');

-- ------------------------------------------------------------------ who may call it, and the secret
SELECT results_eq(
    $$SELECT r.rolname::text COLLATE "default", has_function_privilege(r.oid, 'flowforge.receive_webhook(text,text,bytea,text,text)', 'EXECUTE')
      FROM pg_roles r WHERE r.rolname LIKE 'flowforge\_%' ORDER BY 1$$,
    $$VALUES ('flowforge_app', false), ('flowforge_daemon', false), ('flowforge_gateway', false), ('flowforge_owner', true),
             ('flowforge_readonly', false), ('flowforge_system', true), ('flowforge_webhook', true), ('flowforge_worker', false)$$,
    'receive_webhook is executable by flowforge_webhook and the two owners only');
SELECT is((SELECT pg_get_userbyid(proowner)::text FROM pg_proc WHERE oid = 'flowforge.receive_webhook(text,text,bytea,text,text)'::regprocedure),
          'flowforge_system', 'and owned by flowforge_system (it looks up a trigger in any organization)');
SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND has_function_privilege('flowforge_webhook', p.oid, 'EXECUTE')$$,
    ARRAY['flowforge.receive_webhook(text,text,bytea,text,text)'], 'flowforge_webhook may execute nothing else');
CREATE ROLE ff_t16_wh_receiver NOLOGIN;
GRANT flowforge_webhook TO ff_t16_wh_receiver;
SELECT is(flowforge_test.as_login('ff_t16_wh_receiver',
              format('SELECT flowforge.receive_webhook(%L, %L, %L, %L, %L)', 'default', 'wh-start', pg_temp.b('{"via":"receiver"}'),
                     pg_temp.signed('{"via":"receiver"}'), 'recv-1')) -> 'firing' ->> 'outcome',
          'started', 'a receiver login (a member of flowforge_webhook) fires a signed body');
SELECT is((SELECT created_by FROM flowforge.trigger_firing WHERE delivery_id = 'recv-1'), 'ff_t16_wh_receiver',
          'the firing records the receiver''s login');
SELECT is(flowforge_test.as_login('ff_t16_wh_receiver', $$SELECT flowforge.fire_trigger('wh-start')$$) ->> 'sqlstate', '42501',
          'the receiver cannot fire a trigger without a signature');
SELECT is(flowforge_test.as_login('ff_t16_wh_receiver', $$SELECT to_jsonb(secret) FROM flowforge.trigger_secret LIMIT 1$$) ->> 'sqlstate', '42501',
          'nor read a secret');
SELECT is(flowforge_test.as_login('ff_t16_wh_receiver', $$SELECT to_jsonb(count(*)) FROM flowforge.trigger_firing$$) ->> 'sqlstate', '42501',
          'nor read the firings');
SELECT flowforge_test.login('ff_t16_wh_member', 'default', 'member');
SELECT is(flowforge_test.as_login('ff_t16_wh_member',
              format('SELECT flowforge.receive_webhook(%L, %L, %L, %L)', 'default', 'wh-start', pg_temp.b('{}'), pg_temp.signed('{}'))) ->> 'sqlstate',
          '42501', 'a tenant login may not call receive_webhook');
CREATE ROLE ff_t16_wh_dba NOLOGIN;
GRANT flowforge_readonly TO ff_t16_wh_dba;
SELECT is(flowforge_test.as_login('ff_t16_wh_dba', $$SELECT to_jsonb(secret) FROM flowforge.trigger_secret LIMIT 1$$) ->> 'sqlstate', '42501',
          'the DBA read role cannot read a secret');
SELECT is(flowforge_test.as_login('ff_t16_wh_dba', $$SELECT to_jsonb(count(*)) FROM flowforge.trigger_firing WHERE trigger_name = 'wh-start'$$),
          (SELECT to_jsonb(count(*)) FROM flowforge.trigger_firing WHERE trigger_name = 'wh-start'), 'but reads every firing');
SELECT is(flowforge_test.as_login('ff_t16_wh_dba', $$SELECT to_jsonb(count(*)) FROM flowforge.scheduled_trigger WHERE name = 'wh-start'$$),
          '2'::jsonb, 'and every trigger (both organizations'' wh-start)');
SELECT ok(NOT has_table_privilege('flowforge_readonly', 'flowforge.trigger_secret', 'SELECT')
          AND NOT has_any_column_privilege('flowforge_readonly', 'flowforge.trigger_secret', 'SELECT'),
          'flowforge_readonly has no grant on trigger_secret, not even on a column');

-- ------------------------------------------------------------------ named arguments
SELECT is((flowforge.receive_webhook(organization => 'default', trigger => 'wh-start', body => pg_temp.b('{"named":1}'),
                                     signature => pg_temp.signed('{"named":1}'), delivery_id => 'named-1')) ->> 'status', '202',
          'receive_webhook with named arguments');
SELECT is((flowforge.receive_webhook(signature => pg_temp.signed('{"named":2}'), body => pg_temp.b('{"named":2}'), trigger => 'wh-start',
                                     organization => 'default')) -> 'firing' ->> 'outcome', 'started',
          'in any order, delivery_id defaulted');

SELECT * FROM finish();
ROLLBACK;
