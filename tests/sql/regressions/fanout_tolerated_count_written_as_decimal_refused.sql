-- Regression (issue 15): a map's tolerated_failures written as 2.0 was
-- refused with FF002 ("must be a count"), while every other number of a spec
-- written that way (max_concurrency 2.0, max_attempts 3.0, backoff_factor
-- 2.0) is the integer it denotes: _spec_map matched the count's text against
-- ^[0-9]{1,7}$, and 2.0's text is "2.0". Percentages were kept as written, so
-- "5%", "05%" and "5.50%" were three contents (three versions) for one
-- tolerance. Fixed in the commit that added this file: a count is stored as
-- its integer, a percentage without padding.
BEGIN;
SELECT plan(7);

CREATE FUNCTION pg_temp.dag(p_tolerated jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('name', 'tol_canon', 'tasks', jsonb_build_array(jsonb_build_object('key', 't',
        'map', jsonb_build_object('over', '$.run.n', 'tolerated_failures', p_tolerated))))
$$;

SELECT flowforge.define_workflow(pg_temp.dag('2')) AS two \gset
SELECT is(flowforge.define_workflow(pg_temp.dag('2.0')), :'two'::uuid, 'tolerated_failures 2.0 is the count 2: the same id');
SELECT is(flowforge.define_workflow(pg_temp.dag('2e0')), :'two'::uuid, '2e0 too');
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.dag('2.5')), 'FF002',
    'invalid workflow definition: task "t", map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%", got 2.5',
    'a fractional count is still refused');
SELECT flowforge.define_workflow(pg_temp.dag('"5.5%"')) AS pct \gset
SELECT is(flowforge.define_workflow(pg_temp.dag('"5.50%"')), :'pct'::uuid, '"5.50%" is "5.5%": the same id');
SELECT is((SELECT spec -> 'tasks' -> 0 -> 'map' -> 'tolerated_failures' FROM flowforge.workflow WHERE id = :'pct'), '"5.5%"'::jsonb,
          'stored as "5.5%"');
SELECT flowforge.define_workflow(pg_temp.dag('"05%"')) AS five \gset
SELECT is((SELECT spec -> 'tasks' -> 0 -> 'map' -> 'tolerated_failures' FROM flowforge.workflow WHERE id = :'five'), '"5%"'::jsonb,
          '"05%" is stored as "5%"');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'tol_canon'), 3,
          'three contents (2, 5.5% and 5%), three versions');

SELECT * FROM finish();
ROLLBACK;
