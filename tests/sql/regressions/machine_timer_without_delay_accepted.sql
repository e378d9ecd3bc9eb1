-- Regression (issue 14): a machine timer without a "delay" ({"target":
-- "done"}) was accepted by define_workflow and stored as {"delay": null}:
-- _spec_interval was handed SQL NULL, and every one of its checks (not a
-- string, negative) is NULL for it, as were the zero and 366-day checks.
-- Entering the state then failed on machine_timer.delay NOT NULL (23502), so
-- start_run (or the event leading there) could never succeed. Fixed in the
-- commit that added this file (a missing delay is JSON null: FF002).
BEGIN;
SELECT plan(4);

SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "no_delay", "kind": "statemachine", "initial": "idle",
                     "states": {"idle": {"on": {"go": "done"}, "after": [{"target": "done"}]}, "done": {"final": true}}}')$$,
    'FF002', 'invalid workflow definition: state "idle", timer 1: delay must be a duration string such as "5 seconds", got null',
    'a timer without a delay: FF002 naming the state and the timer');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "no_delay", "kind": "statemachine", "initial": "idle",
                     "states": {"idle": {"on": {"go": "done"}, "after": [{"delay": null, "target": "done"}]}, "done": {"final": true}}}')$$,
    'FF002', 'invalid workflow definition: state "idle", timer 1: delay must be a duration string such as "5 seconds", got null',
    'a timer whose delay is JSON null: FF002');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'no_delay'), 0, 'and nothing was written');
SELECT lives_ok($$SELECT flowforge.start_run('no_delay') FROM (SELECT flowforge.define_workflow('{"name": "no_delay",
                    "kind": "statemachine", "initial": "idle", "states": {"idle": {"on": {"go": "done"},
                    "after": [{"delay": "1 hour", "target": "done"}]}, "done": {"final": true}}}')) d$$,
    'with a delay, the machine defines and starts');

SELECT * FROM finish();
ROLLBACK;
