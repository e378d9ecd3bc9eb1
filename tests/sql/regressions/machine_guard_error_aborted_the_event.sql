-- Regression (issue 14): a guard or an assignment that cannot be evaluated on
-- the document it is given aborted the whole call instead of "not holding" /
-- setting null. jsonb_path_match(..., silent => true) suppresses missing
-- keys, wrong types and arithmetic errors, but not every error: comparing a
-- date with a timestamptz ("$.event.d.datetime() < \"...+00:00\".datetime()")
-- raises 0A000 even so. send_event then failed with 0A000 instead of trying
-- the next candidate (or FF012), and — worse — a queued event with such a
-- payload made the action's complete_work fail every time it was retried, so
-- the machine could never resume. Fixed in the commit that added this file
-- (_machine_accept evaluates each guard and assignment in its own block).
BEGIN;
SELECT plan(8);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');

SELECT flowforge.define_workflow($${"name": "tz_guard", "kind": "statemachine", "initial": "idle",
  "states": {
    "idle": {"on": {
        "due":   [{"target": "late", "guard": "$.event.d.datetime() < \"2020-06-01T00:00:00+00:00\".datetime()"},
                  {"target": "idle", "assign": {"seen": "$.event.d.datetime() < \"2020-06-01T00:00:00+00:00\".datetime()"}}],
        "only":  [{"target": "late", "guard": "$.event.d.datetime() < \"2020-06-01T00:00:00+00:00\".datetime()"}],
        "work":  "busy"}},
    "busy": {"action": {"task": "tz_task", "queue": "tzq"}, "on_done": "idle"},
    "late": {"final": true}}}$$);
SELECT flowforge.start_run('tz_guard') AS run \gset

SELECT is(flowforge.send_event(:'run', 'due', '{"d": "2020-01-01"}') ->> 'state', 'idle',
    'a guard that cannot be evaluated (a date against a timestamptz) does not hold: the next candidate is taken');
SELECT is((SELECT context FROM flowforge.machine_run WHERE run_id = :'run'), '{"seen": null}'::jsonb,
    'an assignment that cannot be evaluated sets null');
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'only', '{"d": "2020-01-01"}')$$, :'run'), 'FF012',
    'event "only" refused: no guard of event "only" holds in state "idle"',
    'when it is the only candidate: FF012, every guard false');
SELECT is(flowforge.send_event(:'run', 'due', '{"d": "2020-01-01T00:00:00+00:00"}') ->> 'state', 'late',
    'the same guard on a comparable value holds');

-- While suspended: the event is queued, and the action's end applies it.
SELECT flowforge.start_run('tz_guard') AS run2 \gset
SELECT flowforge.send_event(:'run2', 'work');
SELECT is(flowforge.send_event(:'run2', 'due', '{"d": "2020-01-01"}') ->> 'outcome', 'queued', 'queued while the action runs');
SELECT * FROM flowforge.claim_work(ARRAY['tzq'], 'tz-agent') \gset c_
SELECT lives_ok(format($$SELECT flowforge.complete_work(%L, %s, '{}')$$, :'c_work_item_id', :'c_fencing_token'),
    'complete_work resumes the machine without failing on the queued event''s guard');
SELECT results_eq(format($$SELECT state, suspended, context FROM flowforge.machine_run WHERE run_id = %L$$, :'run2'),
    $$VALUES ('idle'::varchar, false, '{"seen": null}'::jsonb)$$,
    'the queued event took the next candidate');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_queue WHERE run_id = :'run2'), 0, 'and left the queue');

SELECT * FROM finish();
ROLLBACK;
