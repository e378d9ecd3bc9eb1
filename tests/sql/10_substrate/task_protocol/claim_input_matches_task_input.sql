-- Twin test: claim() builds each task's input inline (a measured fast path);
-- push dispatch builds it with _task_input(). Both must hand a task the same
-- {"run": <run input>, "deps": {<key>: <output>}}: a pull worker and a push
-- consumer of the same workflow must see the same thing.
BEGIN;
SELECT plan(4);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');
SELECT flowforge_test.define_diamond('twin_input', '{"queue": "twin_input"}');
CREATE TEMP TABLE run AS SELECT flowforge.start_run('twin_input', '{"day": "2030-01-01", "n": [1, 2]}') AS id;

CREATE TEMP TABLE got (task_key text, task_id uuid, input jsonb);
CREATE FUNCTION pg_temp.claim_and_complete() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT * FROM flowforge.claim(ARRAY['twin_input'], 'w', '30 seconds', 10) LOOP
        INSERT INTO got SELECT v.task_key, tr.task_id, v.input FROM flowforge.task_run tr WHERE tr.id = v.task_run_id;
        PERFORM flowforge.complete(v.task_run_id, v.fencing_token,
                                   jsonb_build_object('from', v.task_key, 'nested', jsonb_build_object('ok', true)));
    END LOOP;
END;
$$;
SELECT pg_temp.claim_and_complete();  -- a
SELECT pg_temp.claim_and_complete();  -- b, c
SELECT pg_temp.claim_and_complete();  -- d (depends on b and c)

SELECT is((SELECT count(*)::int FROM got), 4, 'fixture: all four tasks claimed');
SELECT is_empty(
    $$SELECT g.task_key FROM got g
      WHERE g.input IS DISTINCT FROM flowforge._task_input('00000000-0000-0000-0000-000000000001', (SELECT id FROM run), g.task_id)$$,
    'claim''s inline input equals _task_input for every task');
SELECT is((SELECT input FROM got WHERE task_key = 'd'),
    '{"run": {"day": "2030-01-01", "n": [1, 2]},
      "deps": {"b": {"from": "b", "nested": {"ok": true}}, "c": {"from": "c", "nested": {"ok": true}}}}'::jsonb,
    'a join sees the run input and both dependencies'' outputs');
SELECT is((SELECT input FROM got WHERE task_key = 'a'), '{"run": {"day": "2030-01-01", "n": [1, 2]}, "deps": {}}'::jsonb,
    'a root sees the run input and no dependencies');

SELECT * FROM finish();
ROLLBACK;
