-- Affinity, in one session with two agent names: the first claim of an item
-- with an unpinned key pins it; an item pinned to another active agent is
-- skipped (and does not fill the batch); soft: when the pinned agent is
-- draining or inactive, the next claimer rebinds the key (generation + 1);
-- hard: the item waits while the pinned agent is draining or silent, until
-- the sweep marks it inactive and releases the binding; an unregistered
-- claimer never takes pinned work. Keys by run, by definition, by a jsonpath
-- into the payload, and DAG tasks (claim) too. Races are pytest's.
BEGIN;
SELECT plan(44);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge.register_agent('agent-a', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT flowforge.register_agent('agent-b', '{"heartbeat_interval": "10 seconds"}') \gset

CREATE FUNCTION pg_temp.binding(p_key text) RETURNS text LANGUAGE sql AS $$
    SELECT b.agent_id || ' gen ' || b.generation FROM flowforge.affinity_binding b WHERE b.affinity_key = p_key
$$;
-- Claim on one queue and complete at once; returns what was taken as "node@run" labels.
CREATE TEMP TABLE label (run uuid PRIMARY KEY, name text);
CREATE FUNCTION pg_temp.take(p_agent text, p_queue text, p_batch integer DEFAULT 10, p_complete boolean DEFAULT true)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_item record;
    v_taken text[] := '{}';
BEGIN
    FOR v_item IN SELECT * FROM flowforge.claim_work(ARRAY[p_queue], p_agent, batch => p_batch) LOOP
        v_taken := v_taken || (v_item.task_name || '@' || (SELECT l.name FROM label l WHERE l.run = v_item.run_id));
        IF p_complete THEN
            PERFORM flowforge.complete_work(v_item.work_item_id, v_item.fencing_token);
        END IF;
    END LOOP;
    RETURN coalesce(nullif(array_to_string(ARRAY(SELECT t FROM unnest(v_taken) t ORDER BY t), ', '), ''), 'nothing');
END;
$$;
CREATE FUNCTION pg_temp.start(p_workflow text, p_name text, p_input jsonb DEFAULT '{}') RETURNS uuid LANGUAGE sql AS $$
    INSERT INTO label VALUES (flowforge.start_run(p_workflow, p_input), p_name) RETURNING run
$$;

-- ======================================================= soft, by run
SELECT flowforge.define_workflow($${"name": "pin_soft", "kind": "graph", "start": "a",
    "nodes": [{"key": "a", "queue": "qs", "affinity": "run"}, {"key": "b", "queue": "qs", "affinity": "run"},
              {"key": "done", "final": true}],
    "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "done"}]}$$) \gset
SELECT pg_temp.start('pin_soft', 'R1') AS r1 \gset
SELECT is((SELECT affinity_key || ' ' || affinity_policy FROM flowforge.work_item WHERE id = flowforge_test.item_of(:'r1')),
          'run:' || :'r1' || ' soft', 'a node with affinity "run": its item carries the run''s key, soft by default');
SELECT is(pg_temp.binding('run:' || :'r1'), NULL, 'nothing is pinned before the first claim');
SELECT is(pg_temp.take('agent-a', 'qs'), 'a@R1', 'agent-a takes R1''s first node');
SELECT is(pg_temp.binding('run:' || :'r1'), 'agent-a gen 1', 'the first claim pinned the run to agent-a');
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT pg_temp.start('pin_soft', 'R2') AS r2 \gset
SELECT is(pg_temp.take('agent-b', 'qs', 1, false), 'a@R2',
          'agent-b, batch 1: R1''s b (older, pinned to active agent-a) is skipped and does not fill the batch');
SELECT is(flowforge_test.item_status(flowforge_test.item_of(:'r1')), 'pending', 'R1''s b stays pending for agent-a');
SELECT is(pg_temp.take('agent-b', 'qs'), 'nothing', 'agent-b again: still nothing of R1''s');
SELECT is(pg_temp.take('agent-a', 'qs'), 'b@R1', 'agent-a takes R1''s b, pinned to it');
SELECT is(flowforge_test.graph_status(:'r1'), 'succeeded', 'R1 ran on agent-a from start to end');
SELECT id AS r2a, fencing_token AS r2tok FROM flowforge.work_item WHERE id = flowforge_test.item_of(:'r2') \gset
SELECT flowforge.complete_work(:'r2a', :'r2tok') \gset
SELECT is(pg_temp.binding('run:' || :'r2'), 'agent-b gen 1', 'R2 is pinned to agent-b');

-- The pinned agent drains: the next claimer rebinds.
SELECT flowforge.set_agent_status('agent-b', 'draining') \gset
SELECT is(pg_temp.take('agent-a', 'qs'), 'b@R2', 'soft, agent-b draining: agent-a takes R2''s b');
SELECT is(pg_temp.binding('run:' || :'r2'), 'agent-a gen 2', 'the key moved to agent-a, generation 2');

-- The pinned agent goes silent (not swept yet): the next claimer rebinds.
SELECT flowforge.register_agent('agent-b', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT pg_temp.start('pin_soft', 'R3') AS r3 \gset
SELECT is(pg_temp.take('agent-b', 'qs'), 'a@R3', 'agent-b takes R3''s first node');
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT flowforge.agent_heartbeat('agent-a') \gset
SELECT is((SELECT status FROM flowforge.list_agents() WHERE name = 'agent-b'), 'inactive', 'setup: agent-b silent for 31 s');
SELECT is(pg_temp.take('agent-a', 'qs'), 'b@R3', 'soft, agent-b inactive by its heartbeat: agent-a takes R3''s b');
SELECT is(pg_temp.binding('run:' || :'r3'), 'agent-a gen 2', 'rebound to agent-a, generation 2');

-- An unregistered claimer takes no pinned work, pinned or not yet.
SELECT pg_temp.start('pin_soft', 'R4') AS r4 \gset
SELECT is(pg_temp.take('stranger', 'qs'), 'nothing', 'an unregistered worker never takes an item with an affinity key');
SELECT is(pg_temp.binding('run:' || :'r4'), NULL, 'and pins nothing');
SELECT is(pg_temp.take('agent-a', 'qs'), 'a@R4', 'a registered agent does');

-- ======================================================= hard, by run
SELECT flowforge_test.set_clock('2030-01-02 00:00:00+00') \gset
SELECT flowforge.register_agent('agent-a', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT flowforge.register_agent('agent-b', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT flowforge.define_workflow($${"name": "pin_hard", "kind": "graph", "start": "a",
    "nodes": [{"key": "a", "queue": "qh", "affinity": "run", "affinity_policy": "hard"},
              {"key": "b", "queue": "qh", "affinity": "run", "affinity_policy": "hard"}, {"key": "done", "final": true}],
    "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "done"}]}$$) \gset
SELECT pg_temp.start('pin_hard', 'H1') AS h1 \gset
SELECT is(pg_temp.take('agent-a', 'qh'), 'a@H1', 'agent-a takes H1''s first node, pinning H1 (hard)');
SELECT flowforge.set_agent_status('agent-a', 'draining') \gset
SELECT is(pg_temp.take('agent-b', 'qh'), 'nothing', 'hard, agent-a draining: agent-b does not take H1''s b');
SELECT results_eq(format($$SELECT status::text, affinity_key, affinity_policy::text FROM flowforge.work_item WHERE id = %L$$,
                         flowforge_test.item_of(:'h1')),
    format($$VALUES ('pending', 'run:%s', 'hard')$$, :'h1'),
    'it waits, pending, showing its key and policy (get_run lists them per item)');
SELECT flowforge_test.advance_clock('31 seconds') \gset
SELECT flowforge.agent_heartbeat('agent-b') \gset
SELECT is(pg_temp.take('agent-b', 'qh'), 'nothing', 'hard, agent-a silent but not yet swept: still waiting');
SELECT is(pg_temp.binding('run:' || :'h1'), 'agent-a gen 1', 'the binding is agent-a''s');
SELECT is((flowforge.tick() ->> 'agents_inactive')::int, 1, 'the sweep marks agent-a inactive');
SELECT is(pg_temp.binding('run:' || :'h1'), NULL, 'and releases its binding');
SELECT is(pg_temp.take('agent-b', 'qh'), 'b@H1', 'now agent-b takes H1''s b');
SELECT is(pg_temp.binding('run:' || :'h1'), 'agent-b gen 1', 'pinning the key afresh');
SELECT is(flowforge_test.graph_status(:'h1'), 'succeeded', 'H1 is not stranded');

-- ================================================= soft, by definition
SELECT flowforge.register_agent('agent-a', '{"heartbeat_interval": "10 seconds"}') \gset
SELECT flowforge_test.define_graph_single('pin_def', '{"queue": "qd", "affinity": "definition"}') \gset
SELECT pg_temp.start('pin_def', 'D1') AS d1 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT pg_temp.start('pin_def', 'D2') AS d2 \gset
SELECT is(pg_temp.take('agent-a', 'qd', 1, false), 'work@D1', 'agent-a takes D1''s node');
SELECT is(pg_temp.binding('definition:pin_def'), 'agent-a gen 1', 'affinity "definition" pins the workflow''s name');
SELECT is(pg_temp.take('agent-b', 'qd'), 'nothing', 'D2, another run of the definition, is agent-a''s too');
SELECT is(pg_temp.take('agent-a', 'qd'), 'work@D2', 'agent-a takes it');

-- ======================================== soft, by a jsonpath into the payload
SELECT flowforge_test.define_graph_single('pin_path', '{"queue": "qp", "affinity": "$.state.customer"}') \gset
SELECT pg_temp.start('pin_path', 'P1', '{"customer": "acme"}') AS p1 \gset
SELECT flowforge_test.advance_clock('1 second') \gset
SELECT pg_temp.start('pin_path', 'P2', '{"customer": "acme"}') AS p2 \gset
SELECT pg_temp.start('pin_path', 'P3', '{"customer": "globex"}') AS p3 \gset
SELECT pg_temp.start('pin_path', 'P4', '{"order": 7}') AS p4 \gset
SELECT results_eq(format($$SELECT l.name, w.affinity_key FROM flowforge.work_item w JOIN label l ON l.run = w.run_id
                           WHERE w.run_id IN (%L, %L, %L, %L) ORDER BY l.name$$, :'p1', :'p2', :'p3', :'p4'),
    $$VALUES ('P1', 'key:acme'), ('P2', 'key:acme'), ('P3', 'key:globex'), ('P4', NULL::text)$$,
    'the key is the value the path finds in the payload; a path that finds nothing pins nothing');
SELECT is(pg_temp.take('stranger', 'qp'), 'work@P4', 'an unregistered worker takes only the unpinned item');
SELECT is(pg_temp.take('agent-a', 'qp', 1), 'work@P1', 'agent-a takes acme''s first item');
SELECT is(pg_temp.take('agent-b', 'qp'), 'work@P3', 'agent-b takes globex, not acme (pinned to agent-a)');
SELECT is(pg_temp.take('agent-a', 'qp'), 'work@P2', 'acme''s second item goes to agent-a');

-- ============================================ DAG tasks, through claim()
SELECT flowforge.define_workflow($${"name": "pin_dag", "tasks": [
    {"key": "x", "queue": "qg", "affinity": "$.run.customer"},
    {"key": "y", "queue": "qg", "affinity": "$.run.customer", "depends_on": ["x"]}]}$$) \gset
SELECT flowforge.start_run('pin_dag', '{"customer": "initech"}') AS g1 \gset
SELECT is((SELECT affinity_key || ' ' || affinity_policy FROM flowforge.task_run WHERE workflow_run_id = :'g1' AND task_key = 'x'),
          'key:initech soft', 'a DAG task''s key comes from {"run": <input>}');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qg'], 'stranger')), 0, 'claim: an unregistered worker gets no pinned task');
SELECT task_run_id AS gx, fencing_token AS gxt FROM flowforge.claim(ARRAY['qg'], 'agent-a') \gset
SELECT is(pg_temp.binding('key:initech'), 'agent-a gen 1', 'claim pinned the key to agent-a');
SELECT flowforge.complete(:'gx', :'gxt') \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['qg'], 'agent-b')), 0, 'claim: y, pinned to active agent-a, is skipped');
SELECT flowforge.set_agent_status('agent-a', 'draining') \gset
SELECT is((SELECT task_key FROM flowforge.claim(ARRAY['qg'], 'agent-b')), 'y', 'claim, soft, agent-a draining: agent-b takes y');
SELECT is(pg_temp.binding('key:initech'), 'agent-b gen 2', 'rebound, generation 2');

SELECT * FROM finish();
ROLLBACK;
