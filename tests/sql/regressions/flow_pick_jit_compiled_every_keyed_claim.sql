-- A claim of a queue with a concurrency key took 70-150 ms once a few thousand units were
-- ready (bench_flow, 8,500 queued runs over 16 keys: 80 ms a claim on one connection, 24
-- claims a second on four). The generic plan of _flow_pick's lines statement (the lanes with
-- ready work) is estimated at ~180,000, above jit_above_cost, and PostgreSQL JIT-compiled
-- its 61 expressions on every call (auto_explain: "JIT: Emission 59.826 ms, Total 67.815 ms"
-- for a statement that ran in 2 ms). Fixed by SET jit = off on _flow_pick: JIT never pays
-- for a claim's key lookups. What JIT does cannot be seen from SQL without
-- pg_stat_statements (benchmarks/profile_statements.py's set-up; its jit_functions column
-- was 0 for every statement of bench_flow after the fix), so this holds the setting, and
-- that a keyed claim still works with the server's JIT threshold at zero.
BEGIN;
SELECT plan(2);
SELECT ok('jit=off' = ANY (p.proconfig), '_flow_pick runs with jit = off')
FROM pg_proc p WHERE p.oid = 'flowforge._flow_pick(text,uuid,text[],integer,timestamptz,text,boolean,jsonb,text[],text[])'::regprocedure;

SELECT flowforge.define_workflow('{"name": "jit_keyed", "tasks": [{"key": "work", "queue": "jit_keyed",
                                   "concurrency": {"key": "$.run.k", "max": 2}}]}');
SELECT count(flowforge.start_run('jit_keyed', jsonb_build_object('k', g % 4))) FROM generate_series(1, 40) g;
SET LOCAL jit_above_cost = 0;
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['jit_keyed'], 'jit-worker', '30 seconds', 20)), 8,
          'a keyed claim with the JIT threshold at zero: 4 keys x max 2');
SELECT * FROM finish();
ROLLBACK;
