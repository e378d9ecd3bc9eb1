-- Regression (issue 16): 0022 made flowforge_webhook the receiver's role and
-- granted it EXECUTE on receive_webhook, but not USAGE on schema flowforge,
-- so the receiver's one call failed with "permission denied for schema
-- flowforge" (42501) and `flowforge serve` could fire nothing. Fixed by
-- migration 0024 (the commit that added this file). The role still reaches
-- nothing else: no other function, no table.
BEGIN;
SELECT plan(5);
SELECT ok(has_schema_privilege('flowforge_webhook', 'flowforge', 'USAGE'), 'flowforge_webhook may look into schema flowforge');
SELECT ok(NOT has_schema_privilege('flowforge_webhook', 'flowforge', 'CREATE'), 'but not create anything in it');
SET LOCAL ROLE flowforge_webhook;
SELECT is(flowforge.receive_webhook('default', 'no-such-trigger', convert_to('{}', 'UTF8'), 'sha256=00', NULL) ->> 'status',
          '401', 'as flowforge_webhook, receive_webhook answers (401 for an unknown trigger)');
SELECT throws_ok($$SELECT flowforge.start_run('any', '{}')$$, '42501', NULL, 'start_run is refused to it');
SELECT throws_ok($$SELECT count(*) FROM flowforge.trigger_firing$$, '42501', NULL, 'and so is reading a table');
RESET ROLE;
SELECT * FROM finish();
ROLLBACK;
