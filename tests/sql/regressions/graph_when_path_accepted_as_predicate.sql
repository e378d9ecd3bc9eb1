-- Regression (issue 13): a graph edge's "when" that is a path to values, not
-- a predicate — "$.output.approved", or a filter "$.output ? (@.n > 1)" —
-- was accepted by define_workflow. _is_jsonpath_predicate evaluates the text
-- over an empty document; a path that finds nothing aggregated to NULL, the
-- function returned NULL instead of false, and the normalizer's
-- "IF NOT _is_jsonpath_predicate(...)" let the edge through. Fixed in the
-- commit that added this file (coalesce to false).
BEGIN;
SELECT plan(6);

CREATE FUNCTION pg_temp.spec(p_when text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', 'when_path', 'kind', 'graph', 'start', 'a',
        'nodes', jsonb_build_array(jsonb_build_object('key', 'a'), jsonb_build_object('key', 'b', 'final', true)),
        'edges', jsonb_build_array(jsonb_build_object('from', 'a', 'to', 'b', 'when', p_when),
                                   jsonb_build_object('from', 'a', 'to', 'b')))
$$;

SELECT is(flowforge._is_jsonpath_predicate('$.output.approved'), false, 'a path that finds nothing is not a predicate (false, not NULL)');
SELECT is(flowforge._is_jsonpath_predicate('$.output ? (@.n > 1)'), false, 'a filter that finds nothing is not a predicate');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.spec('$.output.approved')), 'FF002', NULL,
    'define_workflow refuses "$.output.approved" as a when');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.spec('$.output ? (@.n > 1)')), 'FF002', NULL,
    'define_workflow refuses a filter path as a when');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'when_path'), 0, 'and wrote nothing');
SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.spec('$.output.approved == true')),
    'the predicate "$.output.approved == true" is accepted');

SELECT * FROM finish();
ROLLBACK;
