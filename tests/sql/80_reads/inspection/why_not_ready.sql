-- why_not_ready (0026): every reason produced by a fixture driven through the
-- API (or, for what no function leaves behind — a unit of an ended run — by a
-- plain UPDATE), and asserted with its words and its data. One transaction,
-- rolled back; the clock frozen, then moved where a reason needs time to pass.
--
--   run_cancelled, run_ended, waiting_on_dependencies, queue_paused, backoff,
--   queue_at_concurrency_limit, queue_rate_limited, key_at_concurrency_limit,
--   key_rate_limited (flow control, 0028), fan_out_at_concurrency_limit,
--   fan_out_children_running, machine_suspended, awaiting_broker,
--   pinned_to_unavailable_agent, no_agent_with_labels, affinity_needs_agent,
--   awaiting_dispatch, ready
BEGIN;
SELECT plan(74);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT columns_are('flowforge', 'why_not_ready', ARRAY[
    'organization_id', 'organization', 'unit_kind', 'unit_id', 'run_id', 'engine_kind', 'name', 'queue', 'status',
    'reason', 'explanation', 'since', 'until', 'detail'], 'why_not_ready has its columns');

-- The row of unit p_name in run p_run.
CREATE FUNCTION pg_temp.why(p_run uuid, p_name text) RETURNS flowforge.why_not_ready LANGUAGE sql AS $$
    SELECT w FROM flowforge.why_not_ready w WHERE w.run_id = p_run AND w.name = p_name
$$;

-- ======================================================= ready (and the columns of a row)
SELECT flowforge_test.define_single('wn_single') \gset
SELECT flowforge.start_run('wn_single') AS r_ready \gset
SELECT results_eq(
    format($$SELECT organization, unit_kind, engine_kind, name, queue, status, reason, since, until, detail
             FROM flowforge.why_not_ready WHERE run_id = %L$$, :'r_ready'),
    $$VALUES ('default'::text, 'task_run'::text, 'dag'::text, 'only'::text, 'default'::text, 'ready'::text, 'ready'::text,
              '2030-01-01 00:00:00+00'::timestamptz, NULL::timestamptz,
              '{"attempt": 1, "priority": 0, "run_status": "running"}'::jsonb)$$,
    'ready: a ready task nobody claims, one row — its organization, kind, name, queue, status, since when, no until');
SELECT is((pg_temp.why(:'r_ready', 'only')).explanation,
          'ready since 2030-01-01 00:00:00+00, not claimed yet', 'ready: in words');
SELECT is((pg_temp.why(:'r_ready', 'only')).unit_id,
          (SELECT id FROM flowforge.task_run WHERE workflow_run_id = :'r_ready'), 'the row names its task run');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['default'], 'wn-worker', '30 seconds', 1)), 1,
          'a worker claims it');
SELECT is((SELECT count(*)::int FROM flowforge.why_not_ready WHERE run_id = :'r_ready'), 0,
          'a running task is not listed');

-- ======================================================= waiting_on_dependencies
SELECT flowforge_test.define_diamond('wn_diamond', '{"queue": "wn-diamond"}') \gset
SELECT flowforge.start_run('wn_diamond') AS r_dia \gset
SELECT is((pg_temp.why(:'r_dia', 'b')).reason, 'waiting_on_dependencies', 'waiting_on_dependencies: b waits on a');
SELECT is((pg_temp.why(:'r_dia', 'b')).detail -> 'waiting_on', '[{"key": "a", "state": "ready"}]'::jsonb,
          'waiting_on_dependencies: which dependency, by key, with its state');
SELECT is((pg_temp.why(:'r_dia', 'd')).explanation, 'waiting on b (pending), c (pending)',
          'waiting_on_dependencies: d waits on b and c, in words');
SELECT is((pg_temp.why(:'r_dia', 'd')).status, 'pending', 'a waiting task is pending');
SELECT is((pg_temp.why(:'r_dia', 'a')).reason, 'ready', 'the diamond''s a is ready');
SELECT task_run_id AS dia_a, fencing_token AS dia_a_tok FROM flowforge_test.claim_key(:'r_dia', 'a', 'wn-diamond') \gset
SELECT is((pg_temp.why(:'r_dia', 'b')).detail -> 'waiting_on', '[{"key": "a", "state": "running"}]'::jsonb,
          'waiting_on follows its dependency: a is running now');
SELECT flowforge.complete(:'dia_a', :'dia_a_tok') \gset
SELECT is((pg_temp.why(:'r_dia', 'd')).detail -> 'waiting_on',
          '[{"key": "b", "state": "ready"}, {"key": "c", "state": "ready"}]'::jsonb,
          'once a succeeded, d waits on b and c (ready), and only on what has not succeeded');
SELECT is((pg_temp.why(:'r_dia', 'b')).reason, 'ready', 'b is ready once a succeeded');

-- ======================================================= flow control (0028): queue_paused, then the limits
SELECT flowforge_test.define_single('wn_paused', '{"queue": "wn-paused", "backoff": "10 seconds"}') \gset
SELECT flowforge.start_run('wn_paused') AS r_paused \gset
SELECT flowforge.pause_queue('wn-paused') \gset
SELECT results_eq(
    format($$SELECT reason, status, since, until, detail -> 'flow' -> 'queue' FROM flowforge.why_not_ready WHERE run_id = %L$$,
           :'r_paused'),
    $$VALUES ('queue_paused'::text, 'ready'::text, '2030-01-01 00:00:00+00'::timestamptz, NULL::timestamptz,
              '{"paused": true}'::jsonb)$$,
    'queue_paused: a ready task of a paused queue — since it was ready, the queue''s flags in detail.flow');
SELECT is((pg_temp.why(:'r_paused', 'only')).explanation,
          'its queue wn-paused is paused: nothing is claimed from it until resume_queue', 'queue_paused: in words');
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['wn-paused'], 'wn-worker')), 0, 'and indeed nothing is claimed');
SELECT flowforge.resume_queue('wn-paused') \gset
SELECT is((pg_temp.why(:'r_paused', 'only')).reason, 'ready', 'resumed: ready again');
SELECT task_run_id AS paused_tr, fencing_token AS paused_tok FROM flowforge_test.claim_key(:'r_paused', 'only', 'wn-paused') \gset
SELECT flowforge.fail(:'paused_tr', :'paused_tok', 'flaky') \gset
SELECT flowforge.pause_queue('wn-paused') \gset
SELECT is((pg_temp.why(:'r_paused', 'only')).reason, 'queue_paused',
          'queue_paused comes before backoff: a retry waiting in a paused queue waits for the queue first');
SELECT flowforge.resume_queue('wn-paused') \gset

SELECT flowforge.configure_queue('wn-max', max_running => 1) \gset
SELECT flowforge_test.define_single('wn_max', '{"queue": "wn-max"}') \gset
SELECT flowforge.start_run('wn_max') AS r_max1 \gset
SELECT flowforge.start_run('wn_max') AS r_max2 \gset
SELECT count(*) FROM flowforge.claim(ARRAY['wn-max'], 'wn-worker', '30 seconds', 10) \gset
SELECT is((SELECT count(*)::int FROM flowforge.why_not_ready WHERE queue = 'wn-max' AND reason = 'queue_at_concurrency_limit'), 1,
          'queue_at_concurrency_limit: of two ready tasks under max_running 1, one runs and the other is held back');
SELECT is((SELECT explanation FROM flowforge.why_not_ready WHERE queue = 'wn-max'),
          'its queue wn-max is at its concurrency limit: 1 running, max_running 1; it goes when one of them ends',
          'queue_at_concurrency_limit: in words');

SELECT flowforge.configure_queue('wn-rate', rate => '{"limit": 1, "per": "10 seconds"}') \gset
SELECT flowforge_test.define_single('wn_rate', '{"queue": "wn-rate"}') \gset
SELECT count(flowforge.start_run('wn_rate')) FROM generate_series(1, 2) \gset
SELECT count(*) FROM flowforge.claim(ARRAY['wn-rate'], 'wn-worker', '30 seconds', 10) \gset
SELECT results_eq(
    $$SELECT reason, until, (detail #>> '{flow,queue,rate,tokens}')::numeric FROM flowforge.why_not_ready WHERE queue = 'wn-rate'$$,
    $$VALUES ('queue_rate_limited'::text, '2030-01-01 00:00:10+00'::timestamptz, 0::numeric)$$,
    'queue_rate_limited: a rate of 1 per 10 seconds spent by the first claim; until the next token, 0 tokens left');
SELECT is((SELECT explanation FROM flowforge.why_not_ready WHERE queue = 'wn-rate'),
          'its queue wn-rate is at its rate limit of 1 per 00:00:10: no token left; the next one at 2030-01-01T00:00:10+00:00',
          'queue_rate_limited: in words');

SELECT flowforge_test.define_single('wn_key', '{"queue": "wn-key", "concurrency": {"key": "$.run.env", "max": 1}}') \gset
SELECT count(flowforge.start_run('wn_key', '{"env": "prod"}')) FROM generate_series(1, 2) \gset
SELECT flowforge.start_run('wn_key', '{"env": "staging"}') AS r_staging \gset
SELECT count(*) FROM flowforge.claim(ARRAY['wn-key'], 'wn-worker', '30 seconds', 10) \gset
SELECT results_eq(
    $$SELECT reason, detail -> 'flow' -> 'concurrency' FROM flowforge.why_not_ready WHERE queue = 'wn-key'$$,
    $$VALUES ('key_at_concurrency_limit'::text, '{"key": "$.run.env", "max": 1, "value": "prod", "running": 1}'::jsonb)$$,
    'key_at_concurrency_limit: the second prod deploy waits for the first; staging ran (its own key)');
SELECT is((SELECT explanation FROM flowforge.why_not_ready WHERE queue = 'wn-key'),
          'concurrency key $.run.env = "prod" is at its limit: 1 running, max 1; it goes when one of them ends',
          'key_at_concurrency_limit: in words');

SELECT flowforge_test.define_single('wn_api', '{"queue": "wn-api", "rate_limit": {"key": "payments-api", "limit": 2, "per": "1 minute"}}') \gset
SELECT count(flowforge.start_run('wn_api')) FROM generate_series(1, 3) \gset
SELECT is((SELECT count(*)::int FROM flowforge.claim(ARRAY['wn-api'], 'wn-worker', '30 seconds', 10)), 2,
          'a rate limit of 2 per minute: a claim of 10 takes 2');
SELECT results_eq(
    $$SELECT reason, until, detail #>> '{flow,rate_limit,key}' FROM flowforge.why_not_ready WHERE queue = 'wn-api'$$,
    $$VALUES ('key_rate_limited'::text, '2030-01-01 00:00:30+00'::timestamptz, 'payments-api'::text)$$,
    'key_rate_limited: the third waits for the bucket''s next token, 30 seconds on');
SELECT is((SELECT explanation FROM flowforge.why_not_ready WHERE queue = 'wn-api'),
          'rate limit payments-api is used up (2 per 00:01:00): the next token at 2030-01-01T00:00:30+00:00',
          'key_rate_limited: in words');

-- ======================================================= backoff
SELECT flowforge_test.define_single('wn_backoff', '{"queue": "wn-backoff", "backoff": "10 seconds"}') \gset
SELECT flowforge.start_run('wn_backoff') AS r_back \gset
SELECT task_run_id AS back_tr, fencing_token AS back_tok FROM flowforge_test.claim_key(:'r_back', 'only', 'wn-backoff') \gset
SELECT flowforge.fail(:'back_tr', :'back_tok', 'the service said 503') \gset
SELECT results_eq(
    format($$SELECT reason, status, since, until, detail ->> 'attempt', detail ->> 'error'
             FROM flowforge.why_not_ready WHERE run_id = %L$$, :'r_back'),
    $$VALUES ('backoff'::text, 'ready'::text, '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:10+00'::timestamptz,
              '2'::text, 'the service said 503'::text)$$,
    'backoff: a failed attempt waits for its retry — until when, which attempt comes next, the last error');
SELECT is((pg_temp.why(:'r_back', 'only')).explanation,
          'in backoff after attempt 1 failed: the service said 503; claimable from 2030-01-01 00:00:10+00',
          'backoff: in words');

-- ======================================================= fan-out: at its concurrency limit, children running
SELECT flowforge.define_workflow($${"name": "wn_map", "tasks": [
    {"key": "m", "queue": "wn-map", "map": {"over": "$.run.items", "max_concurrency": 2}}]}$$) \gset
SELECT flowforge.start_run('wn_map', '{"items": [1, 2, 3, 4, 5]}') AS r_map \gset
SELECT is((pg_temp.why(:'r_map', 'm')).reason, 'fan_out_at_concurrency_limit',
          'fan_out_at_concurrency_limit: a map of 5 with max_concurrency 2 holds its task while 2 children are live');
SELECT is((pg_temp.why(:'r_map', 'm')).explanation,
          'its map is at its concurrency limit: 2 of 2 children live, 0 of 5 elements settled, 3 not yet dispatched',
          'fan_out_at_concurrency_limit: in words');
SELECT is((pg_temp.why(:'r_map', 'm')).detail -> 'checkpoint' ->> 'live', '2', 'the checkpoint''s live count in detail');
SELECT is((pg_temp.why(:'r_map', 'm')).status, 'running', 'the held task is running, held by the engine');
SELECT is((pg_temp.why(:'r_map', 'm')).detail ->> 'holder', 'flowforge:fan-out', 'held by flowforge:fan-out');
SELECT is((pg_temp.why(:'r_map', 'm[0]')).reason, 'ready', 'its children are work items named key[i], ready');
SELECT is((pg_temp.why(:'r_map', 'm[0]')).unit_kind, 'work_item', 'a child is a work item');
SELECT flowforge.define_workflow($${"name": "wn_map_wide", "tasks": [
    {"key": "m", "queue": "wn-map", "map": {"over": "$.run.items", "max_concurrency": 5}}]}$$) \gset
SELECT flowforge.start_run('wn_map_wide', '{"items": [1, 2]}') AS r_wide \gset
SELECT is((pg_temp.why(:'r_wide', 'm')).reason, 'fan_out_children_running',
          'fan_out_children_running: every element dispatched, the task waits for its 2 live children');
SELECT is((pg_temp.why(:'r_wide', 'm')).explanation, 'waiting for its fan-out: 2 children live, 0 of 2 elements settled',
          'fan_out_children_running: in words');
SELECT flowforge.define_workflow($${"name": "wn_graph_map", "kind": "graph", "start": "fan", "nodes": [
    {"key": "fan", "queue": "wn-map", "map": {"over": "$.state.items", "max_concurrency": 1}},
    {"key": "done", "final": true}], "edges": [{"from": "fan", "to": "done"}]}$$) \gset
SELECT flowforge.start_run('wn_graph_map', '{"items": ["x", "y"]}') AS r_gmap \gset
SELECT results_eq(
    format($$SELECT unit_kind, engine_kind, status, reason, detail -> 'checkpoint' ->> 'cursor'
             FROM flowforge.why_not_ready WHERE run_id = %L AND name = 'fan'$$, :'r_gmap'),
    $$VALUES ('work_item'::text, 'graph'::text, 'dispatched'::text, 'fan_out_at_concurrency_limit'::text, '1'::text)$$,
    'a graph node''s own item, held by its fan-out (max_concurrency 1, 1 of 2 dispatched): at its concurrency limit');

-- ======================================================= machine_suspended
SELECT flowforge_test.define_order('wn_order', '{"queue": "wn-order"}') \gset
SELECT flowforge.start_run('wn_order') AS r_order \gset
SELECT is(flowforge.send_event(:'r_order', 'paid', '{"amount": 100}') ->> 'outcome', 'applied',
          'fixture: paid moves the order to shipping, whose action runs');
SELECT is(flowforge.send_event(:'r_order', 'give_up') ->> 'outcome', 'queued',
          'fixture: an event sent while the machine is suspended is queued');
SELECT is((pg_temp.why(:'r_order', 'give_up')).reason, 'machine_suspended',
          'machine_suspended: the queued event waits for the machine''s action');
SELECT is((pg_temp.why(:'r_order', 'give_up')).detail -> 'machine' ->> 'action', 'ship',
          'machine_suspended: on which action');
SELECT is((pg_temp.why(:'r_order', 'give_up')).explanation,
          'queued (#1) while its machine runs action ship in state shipping (the action''s item is pending); applied when it ends',
          'machine_suspended: in words');
SELECT is((pg_temp.why(:'r_order', 'give_up')).unit_kind, 'machine_event', 'a queued event is a machine_event row');
SELECT is((pg_temp.why(:'r_order', 'ship')).reason, 'ready', 'the action''s own item is ready for a worker');
SELECT is((pg_temp.why(:'r_order', 'ship')).detail -> 'machine' ->> 'state', 'shipping',
          'an action item names its machine''s state');

-- ======================================================= awaiting_broker, then awaiting_dispatch
SELECT flowforge.configure_queue('wn-push', 'wn-exchange') \gset
SELECT flowforge_test.define_single('wn_push', '{"queue": "wn-push", "backoff": "5 seconds"}') \gset
SELECT flowforge.start_run('wn_push') AS r_push \gset
SELECT is((pg_temp.why(:'r_push', 'only')).reason, 'awaiting_broker',
          'awaiting_broker: a push task dispatched, its message not yet published');
SELECT is((pg_temp.why(:'r_push', 'only')).detail -> 'outbox' ->> 'exchange', 'wn-exchange', 'awaiting_broker: which exchange');
SELECT id AS push_msg FROM flowforge.outbox_message WHERE workflow_run_id = :'r_push' \gset
SELECT flowforge.defer_outbox(ARRAY[:'push_msg']::uuid[], 'NO_ROUTE') \gset
SELECT matches((pg_temp.why(:'r_push', 'only')).explanation,
               '^dispatched to exchange wn-exchange, waiting for the broker: its message is not published \(refused once, last: NO_ROUTE; next try ',
               'awaiting_broker: a refusal by the broker, in words');
SELECT is((pg_temp.why(:'r_push', 'only')).until, (SELECT next_attempt_at FROM flowforge.outbox_message WHERE id = :'push_msg'),
          'awaiting_broker: until the outbox tries it again');
SELECT flowforge.mark_published(ARRAY[:'push_msg']::uuid[]) \gset
SELECT is((SELECT count(*)::int FROM flowforge.why_not_ready WHERE run_id = :'r_push'), 0,
          'a published push task is with its consumer: not listed');
SELECT id AS push_tr, fencing_token AS push_tok FROM flowforge.task_run WHERE workflow_run_id = :'r_push' \gset
SELECT flowforge.fail(:'push_tr', :'push_tok', 'consumer crashed') \gset
SELECT is((pg_temp.why(:'r_push', 'only')).reason, 'backoff', 'its consumer failed it: in backoff');
SELECT flowforge_test.set_clock('2030-01-01 00:00:06+00') \gset
SELECT is((pg_temp.why(:'r_push', 'only')).reason, 'awaiting_dispatch',
          'awaiting_dispatch: the backoff is over, the daemon''s dispatch duty has not taken it yet');
SELECT is((pg_temp.why(:'r_push', 'only')).explanation,
          'ready since 2030-01-01 00:00:05+00 on push queue wn-push: the daemon''s dispatch duty (tick) hands it to the outbox',
          'awaiting_dispatch: in words');
SELECT flowforge_test.set_clock('2030-01-01 00:00:00+00') \gset

-- ======================================================= no_agent_with_labels
SELECT flowforge_test.define_single('wn_gpu', '{"queue": "wn-gpu", "worker_params": {"gpu": true}}') \gset
SELECT flowforge.start_run('wn_gpu') AS r_gpu \gset
SELECT flowforge.register_agent('wn-cpu-agent', '{"labels": {"gpu": false}}') \gset
SELECT is((pg_temp.why(:'r_gpu', 'only')).reason, 'no_agent_with_labels',
          'no_agent_with_labels: it asks for a GPU and no active agent has that label');
SELECT is((pg_temp.why(:'r_gpu', 'only')).explanation, 'asks for labels {"gpu": true}, which no active registered agent has',
          'no_agent_with_labels: in words');
SELECT flowforge.register_agent('wn-gpu-agent', '{"labels": {"gpu": true, "zone": "a"}}') \gset
SELECT is((pg_temp.why(:'r_gpu', 'only')).reason, 'ready', 'an agent with the label registered: ready');
SELECT flowforge.set_agent_status('wn-gpu-agent', 'draining') \gset
SELECT is((pg_temp.why(:'r_gpu', 'only')).reason, 'no_agent_with_labels', 'the only agent with the label drains: waiting again');
SELECT flowforge.set_agent_status('wn-gpu-agent', 'active') \gset

-- ======================================================= affinity_needs_agent, pinned_to_unavailable_agent
SELECT flowforge.set_agent_status('wn-cpu-agent', 'inactive') \gset
SELECT flowforge.set_agent_status('wn-gpu-agent', 'inactive') \gset
SELECT flowforge_test.define_diamond('wn_pinned', '{"queue": "wn-pin", "affinity": "run", "affinity_policy": "hard"}') \gset
SELECT flowforge.start_run('wn_pinned') AS r_pin \gset
SELECT is((pg_temp.why(:'r_pin', 'a')).reason, 'affinity_needs_agent',
          'affinity_needs_agent: pinned work, no agent active to pin it to (unregistered workers never take it)');
SELECT is((pg_temp.why(:'r_pin', 'a')).explanation,
          format('pinned by affinity key run:%s: only a registered agent may take it, and none is active', :'r_pin'),
          'affinity_needs_agent: in words');
SELECT flowforge.register_agent('wn-pin-agent') \gset
SELECT is((pg_temp.why(:'r_pin', 'a')).reason, 'ready', 'an active agent registered: ready to be pinned');
SELECT task_run_id AS pin_a, fencing_token AS pin_tok
FROM flowforge.claim(ARRAY['wn-pin'], 'wn-pin-agent', '30 seconds', 1) \gset
SELECT flowforge.complete(:'pin_a', :'pin_tok') \gset
SELECT is((pg_temp.why(:'r_pin', 'b')).explanation,
          'ready since 2030-01-01 00:00:00+00, not claimed yet (pinned to agent wn-pin-agent, the only one that may take it)',
          'ready, pinned: b and c are pinned to the agent that took a');
SELECT flowforge.set_agent_status('wn-pin-agent', 'draining') \gset
SELECT is((pg_temp.why(:'r_pin', 'b')).reason, 'pinned_to_unavailable_agent',
          'pinned_to_unavailable_agent: hard-pinned to an agent that is draining');
SELECT is((pg_temp.why(:'r_pin', 'b')).detail -> 'affinity',
          jsonb_build_object('key', 'run:' || :'r_pin', 'policy', 'hard', 'pinned_to', 'wn-pin-agent',
                             'agent_status', 'draining'),
          'pinned_to_unavailable_agent: the key, the policy, the agent and its status in detail');
SELECT is((pg_temp.why(:'r_pin', 'c')).explanation,
          format('hard-pinned by affinity key run:%s to agent wn-pin-agent, which is draining: it waits until that agent is '
                 'active again or its pins are released', :'r_pin'),
          'pinned_to_unavailable_agent: in words');
-- Soft: pinned to a draining agent, the work goes to the next agent that claims it.
SELECT flowforge_test.define_diamond('wn_soft', '{"queue": "wn-soft", "affinity": "run"}') \gset
SELECT flowforge.start_run('wn_soft') AS r_soft \gset
SELECT flowforge.register_agent('wn-soft-a') \gset
SELECT task_run_id AS soft_a, fencing_token AS soft_tok
FROM flowforge.claim(ARRAY['wn-soft'], 'wn-soft-a', '30 seconds', 1) \gset
SELECT flowforge.complete(:'soft_a', :'soft_tok') \gset
SELECT flowforge.set_agent_status('wn-soft-a', 'draining') \gset
SELECT flowforge.register_agent('wn-soft-b') \gset
SELECT is((pg_temp.why(:'r_soft', 'b')).explanation,
          'ready since 2030-01-01 00:00:00+00, not claimed yet (pinned to agent wn-soft-a, which is draining: the next '
          'agent to claim it takes the pin)',
          'ready, soft-pinned to a draining agent: the next claimer rebinds it');
SELECT flowforge_test.set_clock('2030-01-01 00:05:00+00') \gset
SELECT is((pg_temp.why(:'r_pin', 'b')).detail -> 'affinity' ->> 'agent_status', 'inactive',
          'an agent whose heartbeat is older than agent_timeout is inactive, whatever it declared');
SELECT flowforge_test.set_clock('2030-01-01 00:00:00+00') \gset

-- ======================================================= run_cancelled, run_ended
SELECT flowforge.start_run('wn_single') AS r_cancelled \gset
UPDATE flowforge.workflow_run SET state = 'cancelled', finished_at = '2030-01-01 00:00:00+00', tasks_remaining = 0
WHERE id = :'r_cancelled';
SELECT is((pg_temp.why(:'r_cancelled', 'only')).reason, 'run_cancelled',
          'run_cancelled: a ready task of a cancelled run (a plain UPDATE: cancel_run never leaves one)');
SELECT is((pg_temp.why(:'r_cancelled', 'only')).explanation,
          'its run was cancelled at 2030-01-01 00:00:00+00: nothing will take this task run', 'run_cancelled: in words');
SELECT flowforge_test.define_graph_single('wn_graph', '{"queue": "wn-graph"}') \gset
SELECT flowforge.start_run('wn_graph') AS r_ended \gset
UPDATE flowforge.graph_run SET status = 'failed', finished_at = '2030-01-01 00:00:00+00' WHERE run_id = :'r_ended';
SELECT results_eq(
    format($$SELECT unit_kind, engine_kind, reason, explanation, detail ->> 'run_status'
             FROM flowforge.why_not_ready WHERE run_id = %L$$, :'r_ended'),
    $$VALUES ('work_item'::text, 'graph'::text, 'run_ended'::text,
              'its run already failed at 2030-01-01 00:00:00+00: nothing will take this work item'::text, 'failed'::text)$$,
    'run_ended: a pending work item of a graph run that failed');

-- ======================================================= the read role
SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.why_not_ready WHERE run_id = :'r_dia'), 3,
          'flowforge_readonly reads why_not_ready (every organization''s rows)');
RESET ROLE;
SELECT set_eq($$SELECT DISTINCT reason FROM flowforge.why_not_ready$$,
    ARRAY['ready', 'waiting_on_dependencies', 'backoff', 'fan_out_at_concurrency_limit', 'fan_out_children_running',
          'machine_suspended', 'no_agent_with_labels', 'pinned_to_unavailable_agent', 'run_cancelled', 'run_ended',
          'queue_at_concurrency_limit', 'queue_rate_limited', 'key_at_concurrency_limit', 'key_rate_limited'],
    'the reasons that still hold at the end, side by side (awaiting_broker, awaiting_dispatch, affinity_needs_agent '
    'and queue_paused were resolved above)');

SELECT * FROM finish();
ROLLBACK;
