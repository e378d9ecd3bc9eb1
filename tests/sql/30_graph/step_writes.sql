-- What one graph step writes: the run's row once, whether the step enters a
-- working node or a final one (the end is written with the step, then the
-- directory and the run event). Counted with pg_stat_xact_user_tables: the
-- rows this transaction updated in graph_run, before and after each step.
BEGIN;
SELECT plan(8);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

CREATE FUNCTION pg_temp.graph_run_updates() RETURNS bigint
LANGUAGE sql AS $$
    SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE schemaname = 'flowforge' AND relname = 'graph_run'
$$;

-- Updates of graph_run by one step (claim + complete of the run's item).
CREATE FUNCTION pg_temp.step_updates(p_run uuid, p_output jsonb) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_item uuid := flowforge_test.item_of(p_run);
    v_claimed record;
    v_before bigint;
BEGIN
    SELECT * INTO v_claimed FROM flowforge_test.claim_item(v_item);
    v_before := pg_temp.graph_run_updates();
    PERFORM flowforge.complete_work(v_claimed.work_item_id, v_claimed.fencing_token, p_output);
    RETURN pg_temp.graph_run_updates() - v_before;
END;
$$;

SELECT flowforge_test.define_review_loop('writes_loop', '{"queue": "qw"}') \gset
-- publish carries affinity: only a registered agent pins it.
SELECT flowforge.register_agent('test-agent') \gset
SELECT flowforge.start_run('writes_loop', '{"topic": "pg"}') AS r \gset

SELECT is(pg_temp.step_updates(:'r', '{"text": "v1"}'), 1::bigint, 'draft -> review: graph_run written once');
SELECT is(pg_temp.step_updates(:'r', '{"approved": false}'), 1::bigint, 'review -> draft (the loop): written once');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT is(pg_temp.step_updates(:'r', '{"text": "v2"}'), 1::bigint, 'draft -> review: written once');
SELECT is(pg_temp.step_updates(:'r', '{"approved": true}'), 1::bigint, 'review -> publish: written once');
SELECT is(pg_temp.step_updates(:'r', '{"published": true}'), 1::bigint,
          'publish -> done (a final node): the step and the end in one write');

-- The end written with the step is the whole end: status, reason, data, walk,
-- the run event once, the directory.
SELECT results_eq(
    format($$SELECT status::text, reason, task::text, steps, state ->> 'published', finished_at = flowforge.now()
             FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('succeeded', 'reached final node "done"', 'done', 6::bigint, 'true', true)$$,
    'the final step: succeeded, its reason, at done, 6 steps, the last output merged, finished now');
SELECT results_eq(
    format($$SELECT kind::text, to_state::text, detail ->> 'reason' FROM flowforge.task_run_event
             WHERE workflow_run_id = %L AND kind IN ('run_succeeded', 'run_failed', 'run_cancelled')$$, :'r'),
    $$VALUES ('run_succeeded', 'succeeded', 'reached final node "done"')$$,
    'one end event, run_succeeded, with the reason');
SELECT is((SELECT ended_at FROM flowforge.engine_run WHERE run_id = :'r'), flowforge.now(),
          'the directory row is ended by the same step');

SELECT * FROM finish();
ROLLBACK;
