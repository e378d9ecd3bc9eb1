-- Regression (issue 14): a machine guard that is a path to values, not a
-- predicate — "$.event.amount", or a filter "$.context ? (@.n > 1)" — was
-- accepted by define_workflow, so the transition could never be judged as
-- the author meant (a path is not true or false). _is_jsonpath_predicate
-- returns NULL for a path that finds nothing in its probe document, and the
-- normalizer's "OR NOT _is_jsonpath_predicate(...)" let NULL through. Fixed
-- in the commit that added this file (IS NOT TRUE in
-- _normalize_machine_transition; sql-tests-13 fixes the helper itself for
-- the graph's "when").
BEGIN;
SELECT plan(5);

CREATE FUNCTION pg_temp.machine(p_guard text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', 'guard_path', 'kind', 'statemachine', 'initial', 'idle',
        'states', jsonb_build_object(
            'idle', jsonb_build_object('on', jsonb_build_object('go', jsonb_build_array(
                        jsonb_build_object('target', 'done', 'guard', p_guard)))),
            'done', jsonb_build_object('final', true)))
$$;

SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.machine('$.event.amount')),
    'FF002', 'invalid workflow definition: state "idle", event "go": guard must be a jsonpath predicate over '
             '{"event", "context"}, such as "$.event.amount >= $.context.total", got "$.event.amount"',
    'a guard "$.event.amount" (a path): FF002 naming the state and the event');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.machine('$.context ? (@.n > 1)')),
    'FF002', NULL, 'a filter path as a guard: FF002');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.machine('$.event')),
    'FF002', NULL, 'a path that finds an object: FF002 (as before)');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'guard_path'), 0, 'and nothing was written');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.machine('$.event.amount > 0')),
    'the predicate "$.event.amount > 0" is accepted');

SELECT * FROM finish();
ROLLBACK;
