-- Regression (issue 16): a webhook refused for its signature and sent
-- without an X-FlowForge-Delivery header was recorded with the error "...
-- (X-FlowForge-Signature); claimed delivery id " — format() prints a NULL
-- argument as an empty string, so the coalesce meant to drop the clause never
-- saw a NULL. Fixed in the commit that added this file (string concatenation,
-- which is NULL when the id is).
BEGIN;
SELECT plan(2);
SELECT flowforge.define_workflow('{"name": "wf_rdi", "tasks": [{"key": "t"}]}');
SELECT flowforge.create_trigger('hook-rdi', 'webhook', 'start', 'wf_rdi', '{"secret": "0123456789abcdef"}');
SELECT flowforge.receive_webhook('default', 'hook-rdi', convert_to('{}', 'UTF8'), 'sha256=00', NULL);
SELECT flowforge.receive_webhook('default', 'hook-rdi', convert_to('{}', 'UTF8'), 'sha256=00', 'd-7');
SELECT results_eq($$SELECT error FROM flowforge.trigger_firing WHERE trigger_name = 'hook-rdi' ORDER BY recorded_at, id$$,
    ARRAY['the signature does not match the body (X-FlowForge-Signature)',
          'the signature does not match the body (X-FlowForge-Signature); claimed delivery id ''d-7'''],
    'the claimed delivery id is named only when there was one');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_name = 'hook-rdi' AND delivery_id IS NOT NULL), 0,
          'and neither refusal took a delivery id');
SELECT * FROM finish();
ROLLBACK;
