-- Flow control's declarations: concurrency / rate_limit / fairness in a DAG
-- task, a graph node and a machine's action (normalized, refused with FF002
-- naming the field), task.flow, queues marked keyed when defined; a unit's lane
-- evaluated when it is created; configure_queue's max_running and rate (FF003),
-- pause_queue / resume_queue.
BEGIN;
SELECT plan(51);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- ------------------------------------------------------------------ normalized
SELECT flowforge.define_workflow($${"name": "fd_all", "tasks": [{"key": "t", "queue": "fd-q",
    "concurrency": {"key": "$.run.customer", "max": 2},
    "rate_limit": {"key": "payments-api", "limit": 10, "per": "60 seconds"},
    "fairness": {"key": "$.run.customer", "weight": 2.50}}]}$$) AS fd_all \gset
SELECT is((SELECT (spec -> 'tasks' -> 0) - ARRAY['key', 'depends_on', 'queue', 'priority', 'max_attempts', 'backoff',
                                                 'backoff_factor', 'max_backoff', 'timeout']
           FROM flowforge.workflow WHERE id = :'fd_all'),
          '{"concurrency": {"key": "$.run.customer", "max": 2},
            "rate_limit": {"key": "payments-api", "limit": 10, "per": "00:01:00"},
            "fairness": {"key": "$.run.customer", "weight": 2.5}}'::jsonb,
          'the three declarations are normalized: a canonical duration, a weight without trailing zeros');
SELECT is((SELECT flow FROM flowforge.task WHERE workflow_id = :'fd_all'),
          '{"concurrency": {"key": "$.run.customer", "max": 2},
            "rate_limit": {"key": "payments-api", "limit": 10, "per": "00:01:00"},
            "fairness": {"key": "$.run.customer", "weight": 2.5}}'::jsonb,
          'task.flow holds them');
SELECT is(flowforge.define_workflow($${"name": "fd_all", "tasks": [{"key": "t", "queue": "fd-q",
    "concurrency": {"max": 2, "key": "$.run.customer"},
    "rate_limit": {"key": "payments-api", "limit": 10, "per": "1 minute"},
    "fairness": {"key": "$.run.customer", "weight": 2.5}}]}$$), :'fd_all'::uuid,
    'the same declarations written differently are the same version');
SELECT results_eq($$SELECT keyed, flow, paused, max_running FROM flowforge.queue WHERE name = 'fd-q'$$,
                  $$VALUES (true, true, false, NULL::integer)$$,
                  'the queue of a unit that declares flow control is keyed (claimed through flow control) when defined');
SELECT flowforge_test.define_single('fd_plain', '{"queue": "fd-plain"}') \gset
SELECT is((SELECT count(*)::int FROM flowforge.queue WHERE name = 'fd-plain'), 0,
          'a definition without flow control writes no queue row');
SELECT is((SELECT flow FROM flowforge.task WHERE key = 'only' AND workflow_id = :'define_single'), NULL::jsonb,
          'and its task has no flow');
SELECT flowforge.define_workflow($${"name": "fd_fair", "tasks": [{"key": "t", "fairness": {"key": "$.run.tenant"}}]}$$)
    AS fd_fair \gset
SELECT is((SELECT spec -> 'tasks' -> 0 -> 'fairness' FROM flowforge.workflow WHERE id = :'fd_fair'),
          '{"key": "$.run.tenant", "weight": 1}'::jsonb, 'fairness weight defaults to 1');
SELECT flowforge.define_workflow($${"name": "fd_fairpath", "tasks": [{"key": "t",
    "fairness": {"key": "$.run.tenant", "weight": "$.run.weight"}}]}$$) AS fd_fairpath \gset
SELECT is((SELECT spec -> 'tasks' -> 0 -> 'fairness' FROM flowforge.workflow WHERE id = :'fd_fairpath'),
          '{"key": "$.run.tenant", "weight": "$.run.weight"}'::jsonb, 'a weight may be a jsonpath into the input');
SELECT flowforge_test.define_graph_single('fd_graph', '{"queue": "fd-gq", "concurrency": {"key": "$.state.customer", "max": 1}}')
    AS fd_graph \gset
SELECT is((SELECT flow FROM flowforge.task WHERE workflow_id = :'fd_graph' AND key = 'work'),
          '{"concurrency": {"key": "$.state.customer", "max": 1}}'::jsonb, 'a graph node declares flow control too');
SELECT is((SELECT keyed FROM flowforge.queue WHERE name = 'fd-gq'), true, 'and keys its queue');
SELECT flowforge.define_workflow($${"name": "fd_machine", "kind": "statemachine", "initial": "working",
    "states": {"working": {"action": {"task": "ship", "queue": "fd-mq",
                                      "rate_limit": {"key": "$.context.carrier", "limit": 5, "per": "1 second"}},
                           "on_done": "done"},
               "done": {"final": true}}}$$) AS fd_machine \gset
SELECT is((SELECT flow FROM flowforge.task WHERE workflow_id = :'fd_machine' AND key = 'working'),
          '{"rate_limit": {"key": "$.context.carrier", "limit": 5, "per": "00:00:01"}}'::jsonb,
          'so does a machine''s action');

-- ------------------------------------------------------------------ refused
SELECT throws_ok(format('SELECT flowforge.define_workflow(%L)', x.spec), 'FF002', x.message, x.why)
FROM (VALUES
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": 2}]}',
     'invalid workflow definition: task "t": concurrency must be an object such as {"key": "$.run.customer", "max": 2}', 'concurrency not an object'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": {"key": "$.run.c", "max": 2, "per": "1 second"}}]}',
     'invalid workflow definition: task "t", concurrency: unknown field "per" (known: key, max)', 'concurrency: an unknown field'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": {"key": "customer", "max": 2}}]}',
     'invalid workflow definition: task "t", concurrency: key must be a jsonpath into the input, such as "$.run.customer", got "customer"',
     'concurrency: a key that is not a jsonpath'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": {"key": "$.run.c == 1", "max": 2}}]}',
     'invalid workflow definition: task "t", concurrency: key must be a jsonpath into the input, such as "$.run.customer", got "$.run.c == 1"',
     'concurrency: a predicate is not a key'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": {"key": "$.run.c"}}]}',
     'invalid workflow definition: task "t", concurrency: max must be an integer, got null', 'concurrency: no max'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "concurrency": {"key": "$.run.c", "max": 0}}]}',
     'invalid workflow definition: task "t", concurrency: max must be an integer between 1 and 10000, got 0', 'concurrency: max 0'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "rate_limit": {"key": "has space", "limit": 1, "per": "1 second"}}]}',
     'invalid workflow definition: task "t", rate_limit: key must be a jsonpath into the input ("$.run.account") or a fixed name of 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter ("payments-api"), got "has space"',
     'rate_limit: a fixed name with a space'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "rate_limit": {"key": "api", "limit": 0, "per": "1 second"}}]}',
     'invalid workflow definition: task "t", rate_limit: limit must be an integer between 1 and 1000000, got 0', 'rate_limit: limit 0'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "rate_limit": {"key": "api", "limit": 1, "per": "2 days"}}]}',
     'invalid workflow definition: task "t", rate_limit: per must be between 1 millisecond and 1 day, got "2 days"', 'rate_limit: per over a day'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "rate_limit": {"key": "api", "limit": 1, "per": "soon"}}]}',
     'invalid workflow definition: task "t", rate_limit: per is not a duration: "soon"', 'rate_limit: per not a duration'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "rate_limit": {"key": "api", "limit": 1}}]}',
     'invalid workflow definition: task "t", rate_limit: per must be a duration string such as "5 seconds", got null', 'rate_limit: no per'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "fairness": {"key": "$.run.c", "weight": 0}}]}',
     'invalid workflow definition: task "t", fairness: weight must be a number from 0.001 to 1000 or a jsonpath to one in the input, got 0',
     'fairness: weight 0'),
    ('{"name": "fd_x", "tasks": [{"key": "t", "fairness": {"key": "$.run.c", "share": 1}}]}',
     'invalid workflow definition: task "t", fairness: unknown field "share" (known: key, weight)', 'fairness: an unknown field'),
    ('{"name": "fd_x", "kind": "graph", "start": "a", "nodes": [{"key": "a", "concurrency": {"key": "$.state.c", "max": -1}},
      {"key": "b", "final": true}], "edges": [{"from": "a", "to": "b"}]}',
     'invalid workflow definition: node "a", concurrency: max must be an integer between 1 and 10000, got -1', 'a graph node''s refusal names the node'),
    ('{"name": "fd_x", "kind": "statemachine", "initial": "s", "states": {"s": {"action": {"task": "t",
      "fairness": {"key": 1}}, "on_done": "d"}, "d": {"final": true}}}',
     'invalid workflow definition: state "s", action, fairness: key must be a jsonpath into the input, such as "$.run.customer", got 1',
     'a machine action''s refusal names the state')
) AS x(spec, message, why);
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'fd_x'), 0, 'nothing refused was written');

-- ------------------------------------------------------------------ lanes: keys evaluated when a unit is created
SELECT flowforge.start_run('fd_all', '{"customer": "acme"}') AS r1 \gset
SELECT flowforge.start_run('fd_all', '{"customer": "acme"}') AS r2 \gset
SELECT flowforge.start_run('fd_all', '{"customer": "globex"}') AS r3 \gset
SELECT flowforge.start_run('fd_all', '{}') AS r4 \gset
SELECT is((SELECT count(DISTINCT flow_lane)::int FROM flowforge.task_run WHERE workflow_run_id IN (:'r1', :'r2')), 1,
          'units whose keys have the same values share a lane');
SELECT isnt((SELECT flow_lane FROM flowforge.task_run WHERE workflow_run_id = :'r3'),
            (SELECT flow_lane FROM flowforge.task_run WHERE workflow_run_id = :'r1'), 'another customer, another lane');
SELECT results_eq(
    format($$SELECT l.conc_name, l.conc_value, l.conc_max, l.rate_name, l.rate_value, l.rate_limit, l.rate_per,
                    l.fair_value, l.fair_weight
             FROM flowforge.task_run tr JOIN flowforge.flow_lane l ON l.id = tr.flow_lane WHERE tr.workflow_run_id = %L$$, :'r1'),
    $$VALUES ('$.run.customer'::text, '"acme"'::jsonb, 2, 'payments-api'::text, 'null'::jsonb, 10, '1 minute'::interval,
              '"acme"'::jsonb, 2.5::numeric)$$,
    'a lane: the concurrency key and its value and max, the rate key (a fixed name: no value) and rate, the fairness value and weight');
SELECT is((SELECT l.conc_value FROM flowforge.task_run tr JOIN flowforge.flow_lane l ON l.id = tr.flow_lane
           WHERE tr.workflow_run_id = :'r4'), 'null'::jsonb,
          'a key the input does not have is the value null (one group for every such unit)');
SELECT flowforge.start_run('fd_all', jsonb_build_object('customer', repeat('x', 300))) AS r5 \gset
SELECT matches((SELECT l.conc_value #>> '{}' FROM flowforge.task_run tr JOIN flowforge.flow_lane l ON l.id = tr.flow_lane
                WHERE tr.workflow_run_id = :'r5'), '^md5:[0-9a-f]{32}$',
               'a value longer than 200 characters is named by its digest');
SELECT flowforge.start_run('fd_fairpath', '{"tenant": "t1", "weight": 4}') AS r6 \gset
SELECT flowforge.start_run('fd_fairpath', '{"tenant": "t1", "weight": "heavy"}') AS r7 \gset
SELECT results_eq(
    format($$SELECT l.fair_value, l.fair_weight FROM flowforge.task_run tr JOIN flowforge.flow_lane l ON l.id = tr.flow_lane
             WHERE tr.workflow_run_id IN (%L, %L) ORDER BY l.fair_weight DESC$$, :'r6', :'r7'),
    $$VALUES ('"t1"'::jsonb, 4::numeric), ('"t1"'::jsonb, 1::numeric)$$,
    'a weight read from the input counts when it is a number in range, else it is 1');
SELECT flowforge.start_run('fd_plain') AS r_plain \gset
SELECT is((SELECT flow_lane FROM flowforge.task_run WHERE workflow_run_id = :'r_plain'), NULL::uuid,
          'a unit without flow control has no lane');

-- ------------------------------------------------------------------ configure_queue, pause_queue, resume_queue
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', max_running => 0)$$, 'FF003',
                 'max_running must be between 1 and 100000, got 0', 'max_running 0: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '[10]')$$, 'FF003',
                 'rate must be an object such as {"limit": 100, "per": "1 minute"}, got [10]', 'a rate that is not an object: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '{"limit": 10, "per": "1 minute", "burst": 5}')$$, 'FF003',
                 'rate: unknown field "burst" (known: limit, per)', 'a rate with an unknown field: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '{"limit": 2.5, "per": "1 minute"}')$$, 'FF003',
                 'rate: limit must be an integer from 1 to 1000000, got 2.5', 'a fractional limit: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '{"limit": "ten", "per": "1 minute"}')$$, 'FF003',
                 'rate: limit must be an integer from 1 to 1000000, got "ten"', 'a limit that is not a number: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '{"limit": 10, "per": "forever"}')$$, 'FF003',
                 'rate: per must be a duration from 1 millisecond to 1 day, got "forever"', 'a period that is no duration: FF003');
SELECT throws_ok($$SELECT flowforge.configure_queue('fd-c', rate => '{"limit": 10}')$$, 'FF003',
                 'rate: per must be a duration from 1 millisecond to 1 day, got <NULL>', 'no period: FF003');
SELECT is((SELECT count(*)::int FROM flowforge.queue WHERE name = 'fd-c'), 0, 'nothing refused was written');
SELECT lives_ok($$SELECT flowforge.configure_queue('fd-c', max_running => 3, rate => '{"limit": 100, "per": "1 minute"}')$$,
                'configure_queue with max_running 3 and 100 per minute');
SELECT results_eq($$SELECT max_running, rate_limit, rate_per, flow FROM flowforge.queue WHERE name = 'fd-c'$$,
                  $$VALUES (3, 100, '1 minute'::interval, true)$$, 'the limits are stored; the queue is under flow control');
SELECT flowforge.pause_queue('fd-c') \gset
SELECT flowforge.configure_queue('fd-c') \gset
SELECT results_eq($$SELECT max_running, rate_limit, paused, flow FROM flowforge.queue WHERE name = 'fd-c'$$,
                  $$VALUES (NULL::integer, NULL::integer, true, true)$$,
                  'configure_queue is the whole configuration (limits omitted: none); the pause is kept');
SELECT flowforge.resume_queue('fd-c') \gset
SELECT results_eq($$SELECT paused, flow FROM flowforge.queue WHERE name = 'fd-c'$$, $$VALUES (false, false)$$,
                  'resumed, with no limit and no keyed unit: claimed the ordinary way again');
SELECT lives_ok($$SELECT flowforge.resume_queue('fd-never')$$, 'resuming a queue that was never paused changes nothing');
SELECT is((SELECT count(*)::int FROM flowforge.queue WHERE name = 'fd-never'), 0, '(and creates no row)');
SELECT throws_ok($$SELECT flowforge.pause_queue('bad name')$$, 'FF003', NULL, 'pause_queue of a bad name: FF003');
SELECT throws_ok($$SELECT flowforge.resume_queue(NULL)$$, 'FF003', NULL, 'resume_queue of NULL: FF003');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log WHERE entity = 'queue' AND entity_id = 'fd-c'
             AND action IN ('pause', 'resume')), 2, 'pause and resume are audited');

SELECT * FROM finish();
ROLLBACK;
