-- Regression (issue 14): a guard, an assignment or an affinity path whose
-- jsonpath PostgreSQL cannot compile for a reason other than plain syntax — a
-- like_regex pattern that is not a regular expression ("["), an unsupported
-- flag ("x"), a number out of range (1e999999) — made define_workflow fail
-- with that error's own SQLSTATE (2201B, 0A000, 22003) instead of FF002
-- naming the state and event: _is_jsonpath caught only syntax_error,
-- invalid_text_representation and invalid_parameter_value. Fixed in the
-- commit that added this file (every data_exception and feature_not_supported
-- is "not a jsonpath").
BEGIN;
SELECT plan(9);

CREATE FUNCTION pg_temp.machine(p_candidate jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', 'bad_path', 'kind', 'statemachine', 'initial', 'idle',
        'states', jsonb_build_object(
            'idle', jsonb_build_object('on', jsonb_build_object('go', jsonb_build_array(
                        jsonb_build_object('target', 'done') || p_candidate))),
            'done', jsonb_build_object('final', true)))
$$;

SELECT is(flowforge._is_jsonpath('$.a like_regex "["'), false, 'a like_regex pattern that does not compile is not a jsonpath');
SELECT is(flowforge._is_jsonpath('$.a like_regex "a" flag "x"'), false, 'an unsupported like_regex flag is not a jsonpath');
SELECT is(flowforge._is_jsonpath('$.a ? (@ == 1e999999)'), false, 'a number out of range is not a jsonpath');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)',
                        pg_temp.machine('{"guard": "$.event.a like_regex \"[\""}')),
    'FF002', 'invalid workflow definition: state "idle", event "go": guard must be a jsonpath predicate over '
             '{"event", "context"}, such as "$.event.amount >= $.context.total", got "$.event.a like_regex \"[\""',
    'a guard with a bad regular expression: FF002 naming the state and the event');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)',
                        pg_temp.machine('{"guard": "$.event.a like_regex \"a\" flag \"x\""}')),
    'FF002', NULL, 'a guard with an unsupported flag: FF002');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)',
                        pg_temp.machine('{"assign": {"n": "$.event.n + 1e999999"}}')),
    'FF002', 'invalid workflow definition: state "idle", event "go": assign "n" must be a jsonpath expression over '
             '{"event", "context"}, got "$.event.n + 1e999999"',
    'an assignment with a number out of range: FF002 naming the state, the event and the key');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "bad_affinity", "tasks": [
                     {"key": "a", "affinity": "$.run.a ? (@ like_regex \"(\")"}]}')$$,
    'FF002', NULL, 'a DAG task''s affinity path with a bad regular expression: FF002 too (the helper is shared)');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name IN ('bad_path', 'bad_affinity')), 0,
    'and nothing was written');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)',
                       pg_temp.machine('{"guard": "$.event.a like_regex \"^a[0-9]+\" flag \"i\""}')),
    'a guard with a valid pattern and flag is accepted');

SELECT * FROM finish();
ROLLBACK;
