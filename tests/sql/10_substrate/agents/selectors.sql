-- Selectors: a graph node or a DAG task may declare "worker_params" (seed
-- 002's selector hints); only an agent whose registered labels contain them
-- (jsonb containment) claims it — claim_work and claim alike. An
-- unregistered worker has no labels: it takes only work without selectors.
BEGIN;
SELECT plan(22);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset
SELECT flowforge.register_agent('gpu-eu', '{"labels": {"gpu": {"model": "a100", "count": 8}, "region": "eu"}}') \gset
SELECT flowforge.register_agent('gpu-us', '{"labels": {"gpu": {"model": "t4"}, "region": "us"}}') \gset
SELECT flowforge.register_agent('cpu-eu', '{"labels": {"region": "eu"}}') \gset

CREATE FUNCTION pg_temp.graph_claims(p_agent text, p_queue text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM flowforge.claim_work(ARRAY[p_queue], p_agent, batch => 10)
$$;
CREATE FUNCTION pg_temp.dag_claims(p_agent text, p_queue text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM flowforge.claim(ARRAY[p_queue], p_agent, batch => 10)
$$;

-- ---------------------------------------------------------- graph nodes
SELECT flowforge_test.define_graph_single('any_gpu', '{"queue": "qg1", "worker_params": {"gpu": {}}}') \gset
SELECT flowforge_test.define_graph_single('a100_eu', '{"queue": "qg2", "worker_params": {"gpu": {"model": "a100"}, "region": "eu"}}') \gset
SELECT flowforge_test.define_graph_single('plain', '{"queue": "qg3"}') \gset
SELECT flowforge.start_run('any_gpu') AS ag \gset
SELECT is((SELECT worker_params FROM flowforge.work_item WHERE id = flowforge_test.item_of(:'ag')), '{"gpu": {}}'::jsonb,
          'the node''s worker_params travel with its work item');
SELECT is(pg_temp.graph_claims('cpu-eu', 'qg1'), 0::bigint, 'claim_work: an agent without a gpu label does not get it');
SELECT is(pg_temp.graph_claims('unregistered', 'qg1'), 0::bigint, 'claim_work: nor does an unregistered worker');
SELECT is(pg_temp.graph_claims('gpu-us', 'qg1'), 1::bigint, 'claim_work: a gpu agent does ({"gpu": {}} is contained in any gpu object)');
SELECT flowforge.start_run('a100_eu') AS a1 \gset
SELECT is(pg_temp.graph_claims('gpu-us', 'qg2'), 0::bigint, 'claim_work: a t4 in the us does not satisfy a100 in eu');
SELECT is(pg_temp.graph_claims('cpu-eu', 'qg2'), 0::bigint, 'claim_work: eu without a gpu does not either');
SELECT is(pg_temp.graph_claims('gpu-eu', 'qg2'), 1::bigint, 'claim_work: the a100 in eu does (nested containment)');
SELECT is((SELECT agent_id::text FROM flowforge.work_item WHERE run_id = :'a1'), 'gpu-eu', 'it is dispatched to that agent');
SELECT flowforge.start_run('plain') AS p1 \gset
SELECT flowforge.start_run('plain') AS p2 \gset
SELECT flowforge.start_run('plain') AS p3 \gset
SELECT is(pg_temp.graph_claims('unregistered', 'qg3') + pg_temp.graph_claims('cpu-eu', 'qg3') + pg_temp.graph_claims('gpu-eu', 'qg3'),
          3::bigint, 'work without selectors goes to anyone, registered or not');

-- A selector is checked at each node's entry, for that node.
SELECT flowforge.define_workflow($${"name": "mixed", "kind": "graph", "start": "prep",
    "nodes": [{"key": "prep", "queue": "qg4"}, {"key": "train", "queue": "qg4", "worker_params": {"gpu": {}}},
              {"key": "done", "final": true}],
    "edges": [{"from": "prep", "to": "train"}, {"from": "train", "to": "done"}]}$$) \gset
SELECT flowforge.start_run('mixed') AS mx \gset
SELECT is(flowforge_test.step(:'mx', NULL, 'cpu-eu') ->> 'node', 'prep', 'the cpu agent runs the first node');
SELECT is(pg_temp.graph_claims('cpu-eu', 'qg4'), 0::bigint, 'but not the gpu node after it');
SELECT is(pg_temp.graph_claims('gpu-eu', 'qg4'), 1::bigint, 'a gpu agent takes that');

-- ------------------------------------------------------------ DAG tasks
SELECT flowforge.define_workflow($${"name": "dag_sel", "tasks": [
    {"key": "cpu", "queue": "qd"}, {"key": "gpu", "queue": "qd", "worker_params": {"gpu": {"model": "a100"}}}]}$$) \gset
SELECT flowforge.start_run('dag_sel') AS d1 \gset
SELECT is((SELECT worker_params::jsonb FROM flowforge.task_run WHERE workflow_run_id = :'d1' AND task_key = 'gpu'),
          '{"gpu": {"model": "a100"}}'::jsonb, 'a DAG task''s worker_params travel with its task run');
SELECT is((SELECT array_agg(task_key) FROM flowforge.claim(ARRAY['qd'], 'unregistered', batch => 10)), ARRAY['cpu'],
          'claim: an unregistered worker takes the task without selectors only');
SELECT is(pg_temp.dag_claims('gpu-us', 'qd'), 0::bigint, 'claim: a t4 does not satisfy a100');
SELECT is(pg_temp.dag_claims('cpu-eu', 'qd'), 0::bigint, 'claim: nor does an agent without a gpu');
SELECT is(flowforge_test.task_state(:'d1', 'gpu'), 'ready', 'the gpu task stays ready, visible');
SELECT is((SELECT task_key FROM flowforge.claim(ARRAY['qd'], 'gpu-eu')), 'gpu', 'claim: the a100 agent takes it');
SELECT is(pg_temp.dag_claims('gpu-eu', 'qd'), 0::bigint, 'setup: nothing left');

-- Labels are what register_agent stored: re-registering without them drops them.
SELECT flowforge.start_run('any_gpu') AS ag2 \gset
SELECT flowforge.register_agent('gpu-us') \gset
SELECT is(pg_temp.graph_claims('gpu-us', 'qg1'), 0::bigint, 'an agent re-registered without labels no longer satisfies a selector');

SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "bad_sel", "kind": "graph", "start": "a",
                     "nodes": [{"key": "a", "worker_params": ["gpu"]}, {"key": "z", "final": true}],
                     "edges": [{"from": "a", "to": "z"}]}')$$, 'FF002', NULL, 'worker_params that are not an object: FF002 (graph)');
SELECT throws_ok($$SELECT flowforge.define_workflow('{"name": "bad_sel", "tasks": [{"key": "a", "worker_params": "gpu"}]}')$$,
                 'FF002', NULL, 'worker_params that are not an object: FF002 (DAG)');

SELECT * FROM finish();
ROLLBACK;
