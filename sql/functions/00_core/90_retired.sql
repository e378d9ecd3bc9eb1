-- Retired signatures: every function signature FlowForge ever shipped and
-- then replaced or removed, dropped on every migrate. CREATE OR REPLACE with
-- a new argument list adds an overload instead of replacing the old one, so
-- without this an upgraded database would keep the old function (and the
-- grant sweep would keep it owned and granted). `flowforge doctor` reports
-- any function no shipped file defines; add its DROP here.
--
-- Each line: the signature, and what replaced it.

-- _task_input(p_run_input, p_run_id, p_task_id) -> _task_input(p_run_id, p_task_id) (d96262e).
DROP FUNCTION IF EXISTS flowforge._task_input(jsonb, uuid, uuid);
-- The DAG's after-failure step, replaced by the engine hooks _on_task_failed_for_good / _on_task_requeued.
DROP FUNCTION IF EXISTS flowforge._after_task_stopped(uuid, uuid, varchar, timestamptz);
-- The run-level "run ended" event, folded into _settle_run (through _append_events).
DROP FUNCTION IF EXISTS flowforge._record_run_finished(uuid, uuid, varchar, integer, timestamptz);
-- claim(queues, worker, lease, batch) -> claim(..., task_names) (the handler filter; issue 11).
DROP FUNCTION IF EXISTS flowforge.claim(text[], text, interval, integer);
-- take_outbox(batch), whose rows were locked until the caller's transaction ended -> take_outbox(batch, lease)
-- (a short committed lease: no transaction open across broker I/O; issue 12).
DROP FUNCTION IF EXISTS flowforge.take_outbox(integer);
-- _append_events without work items -> _append_events(..., p_work_item_ids) (the work-item queue; issue 13).
DROP FUNCTION IF EXISTS flowforge._append_events(uuid, uuid, text, uuid[], text[], text[], bigint[], integer[], jsonb[], timestamptz);
-- tick() -> tick(engine_id) (duties shared among daemons; issue 13).
DROP FUNCTION IF EXISTS flowforge.tick();
-- _dispatch_due(limit, now) -> _dispatch_due(limit, now, orgs) (a daemon dispatches for the organizations it serves).
DROP FUNCTION IF EXISTS flowforge._dispatch_due(integer, timestamptz);
-- _enqueue_work(..., p_node flowforge.task, ...) -> _enqueue_work(..., p_task_id, p_task_name, ...): an argument of a
-- table's row type made the table undroppable by a migration's rollback (issue 14).
DROP FUNCTION IF EXISTS flowforge._enqueue_work(uuid, text, uuid, flowforge.task, jsonb, text, timestamptz, uuid);
-- ... and gained the fan-out child's checkpoint, generation and element (issue 15).
DROP FUNCTION IF EXISTS flowforge._enqueue_work(uuid, text, uuid, uuid, text, jsonb, text, timestamptz, uuid);
-- configure_queue(name, exchange, routing_key, dispatch_lease) -> configure_queue(..., max_running, rate)
-- (flow control; issue 18).
DROP FUNCTION IF EXISTS flowforge.configure_queue(text, text, text, interval);
-- _dispatch_rows(ids, now) -> _dispatch_rows(ids, now, holders, queue_holders) (a flow-controlled push queue's
-- units hold slots; issue 18).
DROP FUNCTION IF EXISTS flowforge._dispatch_rows(uuid[], timestamptz);
-- _graph_enter / _graph_finish gained p_state: the merged data written with the step or the end, one write of
-- the run's row per step instead of two (stop 27).
DROP FUNCTION IF EXISTS flowforge._graph_enter(uuid, uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._graph_finish(uuid, uuid, text, text, text, timestamptz);
-- _graph_finish gained p_run_written: the step into a final node writes the run's end with the step,
-- so graph_run is written once there too (stop 28).
DROP FUNCTION IF EXISTS flowforge._graph_finish(uuid, uuid, text, text, text, timestamptz, jsonb);
-- Ownership and keyset listings (issue 19): the run's creator is passed down from _start_run (a trigger's runs
-- belong to the trigger's creator), and every listing gained after (a cursor) and include_deleted / filters.
DROP FUNCTION IF EXISTS flowforge._record_run(uuid, uuid, text, uuid, timestamptz, uuid, text, uuid);
DROP FUNCTION IF EXISTS flowforge._start_engine_run(text, uuid, uuid, uuid, jsonb, jsonb, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._dag_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._graph_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._machine_start_run(uuid, uuid, uuid, jsonb, jsonb, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._start_run(uuid, text, jsonb, text, timestamptz, text, uuid);
DROP FUNCTION IF EXISTS flowforge._runs_by_prefix(text, uuid);
DROP FUNCTION IF EXISTS flowforge.list_runs(text, text, integer);
DROP FUNCTION IF EXISTS flowforge.list_workflows();
DROP FUNCTION IF EXISTS flowforge.list_triggers();
DROP FUNCTION IF EXISTS flowforge.list_firings(text, text, integer);
DROP FUNCTION IF EXISTS flowforge.list_agents();
-- _delivered_firing(trigger, delivery) -> _delivered_firing(org, trigger, delivery): the delivery key moved to
-- trigger_delivery, keyed per organization, when the firing log was partitioned by time (0032; issue 19).
DROP FUNCTION IF EXISTS flowforge._delivered_firing(uuid, text);
-- Routing under Citus (issue 21, docs/scale.md §6): the internals of DAG completion, the engine hooks, fan-out, the
-- reapers and the cron duty take the organization first (p_org), so every statement they run filters on it.
DROP FUNCTION IF EXISTS flowforge._task_input(uuid, uuid);
DROP FUNCTION IF EXISTS flowforge._dag_task_succeeded(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._dag_task_failed_for_good(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._release_dependents(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._skip_dependents(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._settle_run(uuid, integer, integer, timestamptz);
DROP FUNCTION IF EXISTS flowforge._tasks_ready(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._dag_fan_out(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._dag_task_refused(uuid, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._dispatch_rows(uuid[], timestamptz, uuid[], uuid[]);
DROP FUNCTION IF EXISTS flowforge._dispatch_run(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._on_task_succeeded(text, uuid, uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._on_task_failed_for_good(text, uuid, uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._on_task_requeued(text, uuid, uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._graph_item_succeeded(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._graph_item_failed(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._machine_item_succeeded(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._machine_item_failed(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_progress(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_child_settled(uuid, boolean, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_finish(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_parent_done(uuid, jsonb, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_fail(uuid, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_cancel_children(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_hold_task_run(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fanout_hold_work_item(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._reap_one(uuid, uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._reap_one_failed(uuid, uuid, text, timestamptz);
DROP FUNCTION IF EXISTS flowforge._reap_one_item(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fire_cron_trigger(uuid, timestamptz);
DROP FUNCTION IF EXISTS flowforge._fire_machine_timer(uuid, timestamptz);
-- Inlined into claim() and claim_work(): their one statement before the pick.
DROP FUNCTION IF EXISTS flowforge._claiming_agent(uuid, text, timestamptz);

-- Signatures whose arguments stayed but whose result changed: CREATE OR REPLACE
-- cannot change a result type, so the old one is dropped when it is still the
-- old one (the file that defines the function creates it again right after).
DO $$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT * FROM (VALUES
            -- queue_settings gained amqp_queue (the consumer's queue name) for per-database routing (issue 11).
            ('flowforge.queue_settings(text[])',
             'TABLE(name text, exchange text, routing_key text, dispatch_lease interval, amqp_queue text)'),
            -- run_events gained work_item_id, list_runs gained kind (every engine's runs; issue 13).
            ('flowforge.run_events(uuid)',
             'TABLE(seq bigint, created_at timestamp with time zone, task_run_id uuid, task_key text, kind text, '
             'from_state text, to_state text, attempt integer, fencing_token bigint, detail jsonb, work_item_id uuid)'),
            ('flowforge.list_runs(text,text,integer)',
             'TABLE(id uuid, workflow_name text, version integer, state text, tasks_total integer, tasks_remaining '
             'integer, tasks_failed integer, created_at timestamp with time zone, started_at timestamp with time zone, '
             'finished_at timestamp with time zone, kind text)')
        ) AS r(signature, result)
    LOOP
        IF to_regprocedure(v_fn.signature) IS NOT NULL
           AND pg_get_function_result(to_regprocedure(v_fn.signature)) <> v_fn.result THEN
            EXECUTE format('DROP FUNCTION %s', v_fn.signature);
        END IF;
    END LOOP;
END;
$$;
