-- One meaning of priority in every engine (issue 13, seed 002's rule): the
-- lower number goes first — in the DAG's claim on each of its three paths
-- (one queue, several queues, given task names), in push dispatch of due
-- tasks, and in claim_work. Before issue 13 the DAG took higher first.
BEGIN;
SELECT plan(6);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- Ready tasks of priority 5, -3 and 0 on queue p_queue (in that order of readiness).
CREATE FUNCTION pg_temp.three(p_name text, p_queue text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM flowforge.define_workflow(jsonb_build_object('name', p_name, 'tasks', jsonb_build_array(
        jsonb_build_object('key', 'p5', 'queue', p_queue, 'priority', 5),
        jsonb_build_object('key', 'pm3', 'queue', p_queue, 'priority', -3),
        jsonb_build_object('key', 'p0', 'queue', p_queue, 'priority', 0))));
    PERFORM flowforge.start_run(p_name);
END;
$$;
CREATE FUNCTION pg_temp.claim_order(p_queues text[], p_names text[] DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_order text[] := '{}';
    v_key text;
BEGIN
    LOOP
        SELECT c.task_key INTO v_key FROM flowforge.claim(p_queues, 'w', '30 seconds', 1, p_names) c;
        EXIT WHEN v_key IS NULL;
        v_order := v_order || v_key;
    END LOOP;
    RETURN array_to_string(v_order, ' ');
END;
$$;

SELECT pg_temp.three('one_q', 'q1') \gset
SELECT is(pg_temp.claim_order(ARRAY['q1']), 'pm3 p0 p5', 'claim, one queue: -3, then 0, then 5');
SELECT pg_temp.three('two_q', 'q2') \gset
SELECT pg_temp.three('two_q_other', 'q3') \gset
SELECT is(pg_temp.claim_order(ARRAY['q2', 'q3']), 'pm3 pm3 p0 p0 p5 p5', 'claim, several queues: lower first across them');
SELECT pg_temp.three('named_q', 'q4') \gset
SELECT is(pg_temp.claim_order(ARRAY['q4'], ARRAY['p5', 'p0', 'pm3']), 'pm3 p0 p5', 'claim with task_names: lower first across the names');

-- Push dispatch of due tasks, at most one: the lowest number.
SELECT pg_temp.three('push_q', 'qpush') \gset
INSERT INTO flowforge.queue (organization_id, name, exchange, routing_key, created_by)
VALUES (flowforge.current_organization(), 'qpush', 'flowforge.tasks', 'work', session_user::text);
SELECT is(flowforge._dispatch_due(1, flowforge.now(), NULL), 1, 'setup: one due push task dispatched');
SELECT is((SELECT tr.task_key::text FROM flowforge.outbox_message m JOIN flowforge.task_run tr ON tr.id = m.task_run_id
           WHERE tr.queue = 'qpush'), 'pm3', 'push dispatch takes the lowest priority number first');

-- claim_work: the same order for work items.
SELECT flowforge_test.define_graph_single('g5', '{"queue": "qg", "priority": 5}') \gset
SELECT flowforge_test.define_graph_single('gm3', '{"queue": "qg", "priority": -3}') \gset
SELECT flowforge_test.define_graph_single('g0', '{"queue": "qg", "priority": 0}') \gset
SELECT flowforge.start_run('g5') \gset
SELECT flowforge.start_run('gm3') \gset
SELECT flowforge.start_run('g0') \gset
CREATE TEMP TABLE item_order (n serial, priority int);
INSERT INTO item_order (priority) SELECT w.priority FROM flowforge.claim_work(ARRAY['qg'], 'w') c JOIN flowforge.work_item w ON w.id = c.work_item_id;
INSERT INTO item_order (priority) SELECT w.priority FROM flowforge.claim_work(ARRAY['qg'], 'w') c JOIN flowforge.work_item w ON w.id = c.work_item_id;
INSERT INTO item_order (priority) SELECT w.priority FROM flowforge.claim_work(ARRAY['qg'], 'w') c JOIN flowforge.work_item w ON w.id = c.work_item_id;
SELECT is((SELECT string_agg(priority::text, ' ' ORDER BY n) FROM item_order), '-3 0 5', 'claim_work: the same meaning, lower first');

SELECT * FROM finish();
ROLLBACK;
