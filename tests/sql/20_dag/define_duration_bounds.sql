-- Durations a definition carries are bounded (issue 12): backoff at most 1 day,
-- max_backoff at most 7 days, timeout at most 30 days — so no arithmetic the
-- engine does with them can overflow a timestamp. Refused with FF002 naming
-- the field; nothing is written.
BEGIN;
SELECT plan(7);
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "b1", "tasks": [{"key": "t", "backoff": "1 day 1 second", "max_backoff": "7 days"}]}')$$,
    'FF002', 'invalid workflow definition: task "t": backoff must be at most 1 day, got 1 day 00:00:01', 'backoff over a day');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "b2", "tasks": [{"key": "t", "max_backoff": "8 days"}]}')$$,
    'FF002', 'invalid workflow definition: task "t": max_backoff must be at most 7 days, got 8 days', 'max_backoff over 7 days');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "b3", "tasks": [{"key": "t", "timeout": "31 days"}]}')$$,
    'FF002', 'invalid workflow definition: task "t": timeout must be at most 30 days, got "31 days"', 'timeout over 30 days');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "b4", "tasks": [{"key": "t", "timeout": "1000000 years"}]}')$$,
    'FF002', NULL, 'a timeout of a million years');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name IN ('b1', 'b2', 'b3', 'b4')), 0, 'nothing was written');
SELECT lives_ok($$SELECT flowforge.define_workflow('{"name": "edge", "tasks": [{"key": "t", "backoff": "1 day", "max_backoff": "7 days", "timeout": "30 days"}]}')$$,
    'the bounds themselves are accepted');
SELECT results_eq($$SELECT backoff, max_backoff, timeout FROM flowforge.task t JOIN flowforge.workflow w ON w.id = t.workflow_id WHERE w.name = 'edge'$$,
    $$VALUES (interval '1 day', interval '7 days', interval '30 days')$$, 'and stored as given');
SELECT * FROM finish();
ROLLBACK;
