-- Regression (issue 16): create_trigger's max_catchup was checked by
-- _spec_integer, the workflow spec's helper, so a bad value was refused as
-- "invalid workflow definition: max_catchup must be an integer between 1 and
-- 1000" with the hint "Fix the spec and define it again ... execution-model.md"
-- — the one option of a trigger whose refusal did not say "invalid trigger:"
-- (FF002 still, but naming the wrong thing to fix). Fixed in the commit that
-- added this file: _trigger_options checks it with _invalid_trigger.
BEGIN;
SELECT plan(6);
SELECT flowforge_test.define_single('rg_catchup');

SELECT throws_ok($$SELECT flowforge.create_trigger('rg', 'cron', 'start', 'rg_catchup', '{"cron": "* * * * *", "max_catchup": 0}')$$,
    'FF002', 'invalid trigger: max_catchup must be an integer from 1 to 1000, got 0', 'max_catchup 0: an invalid trigger');
SELECT throws_ok($$SELECT flowforge.create_trigger('rg', 'cron', 'start', 'rg_catchup', '{"cron": "* * * * *", "max_catchup": "7"}')$$,
    'FF002', 'invalid trigger: max_catchup must be an integer from 1 to 1000, got "7"', 'max_catchup as text: an invalid trigger');
SELECT throws_ok($$SELECT flowforge.create_trigger('rg', 'cron', 'start', 'rg_catchup', '{"cron": "* * * * *", "max_catchup": null}')$$,
    'FF002', 'invalid trigger: max_catchup must be an integer from 1 to 1000, got null', 'max_catchup null: an invalid trigger');
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE name = 'rg'), 0, 'nothing was written');
SELECT lives_ok($$SELECT flowforge.create_trigger('rg', 'cron', 'start', 'rg_catchup', '{"cron": "* * * * *", "max_catchup": 7.0}')$$,
    'max_catchup 7.0 is the integer 7');
SELECT is((SELECT options -> 'max_catchup' FROM flowforge.scheduled_trigger WHERE name = 'rg'), '7'::jsonb, 'stored as 7');

SELECT * FROM finish();
ROLLBACK;
