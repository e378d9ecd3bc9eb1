-- Regression (issue 16): create_trigger measured a webhook secret in
-- characters (16 to 1024) but stores its UTF-8 bytes, which
-- trigger_secret_length bounds (16 to 1024 bytes): a secret of 600 "é" (1200
-- bytes) passed the option check and then failed the INSERT into
-- trigger_secret with a raw 23514 check_violation instead of FF002 "invalid
-- trigger: ..." naming the option. Fixed in the commit that added this file:
-- the upper bound is checked on the UTF-8 bytes.
BEGIN;
SELECT plan(5);
SELECT flowforge_test.define_single('rg_secret');

SELECT throws_ok(format('SELECT flowforge.create_trigger(''rg'', ''webhook'', ''start'', ''rg_secret'', %L)',
                        jsonb_build_object('secret', repeat('é', 600))),
    'FF002', NULL, 'a 600-character secret of 1200 bytes: FF002');
SELECT throws_like(format('SELECT flowforge.create_trigger(''rg'', ''webhook'', ''start'', ''rg_secret'', %L)',
                          jsonb_build_object('secret', repeat('é', 513))),
    'invalid trigger: a webhook trigger needs options.secret%', 'a 513-character secret of 1026 bytes: an invalid trigger');
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE name = 'rg'), 0, 'nothing was written');
SELECT lives_ok(format('SELECT flowforge.create_trigger(''rg'', ''webhook'', ''start'', ''rg_secret'', %L)',
                       jsonb_build_object('secret', repeat('é', 512))),
    'a 512-character secret of 1024 bytes is accepted');
SELECT is((SELECT octet_length(s.secret) FROM flowforge.trigger_secret s JOIN flowforge.scheduled_trigger t ON t.id = s.trigger_id
           WHERE t.name = 'rg'), 1024, 'and stored whole');

SELECT * FROM finish();
ROLLBACK;
