

-- Engine hooks: what a unit of work's fate means for the run that owns it.
--
-- The worker protocol (claim / heartbeat / complete / fail, the reaper) and
-- the run verbs (start / cancel / retry) know fencing tokens, leases and
-- retries, not engines. Whatever a transition means to an engine — a DAG
-- releasing its dependents, settling its counters — goes through these
-- dispatchers, one branch per engine kind. A new engine adds its branch here
-- and its implementation in its own folder (CONTRIBUTING.md).
--
-- A CASE with no ELSE raises case_not_found (SQLSTATE 20000) for a kind no
-- branch names: a FlowForge bug, and it must be loud.
--
-- The kind 'fanout' is not an engine: a fan-out child (a work item with a
-- checkpoint) reports to its fan-out, whichever engine owns the run; the
-- worker protocol names it so when it reads the item (_unit_kind).
--
-- Arguments: the engine kind, the organization the run belongs to (every
-- statement below filters on it, so under Citus each is a router query to
-- the node holding the tenant — docs/scale.md §6), the run, the unit of work
-- (a task_run id for a DAG task, a work_item id otherwise), the definition
-- node it instantiates (a task row), and the transaction time. They are called with the run already
-- locked (lock order: the run — workflow_run for a DAG, the directory row for
-- the work-item engines — then its units).

CREATE OR REPLACE FUNCTION flowforge._on_task_succeeded(p_engine text, p_org uuid, p_run_id uuid, p_unit_id uuid,
                                                        p_node_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_task_succeeded(p_org, p_run_id, p_node_id, p_now);
        WHEN 'graph' THEN PERFORM flowforge._graph_item_succeeded(p_org, p_run_id, p_unit_id, p_now);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_item_succeeded(p_org, p_run_id, p_unit_id, p_now);
        -- A fan-out child's fate is its fan-out's, whatever engine owns the run.
        WHEN 'fanout' THEN PERFORM flowforge._fanout_child_settled(p_org, p_unit_id, true, p_now);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._on_task_succeeded(text, uuid, uuid, uuid, uuid, timestamptz) IS
  'Internal hook: a unit of work of run p_run_id (organization p_org) succeeded (its row and event are written). '
  'dag: release dependents, settle the run.';

CREATE OR REPLACE FUNCTION flowforge._on_task_failed_for_good(p_engine text, p_org uuid, p_run_id uuid,
                                                              p_unit_id uuid, p_node_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_task_failed_for_good(p_org, p_run_id, p_node_id, p_now);
        WHEN 'graph' THEN PERFORM flowforge._graph_item_failed(p_org, p_run_id, p_unit_id, p_now);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_item_failed(p_org, p_run_id, p_unit_id, p_now);
        WHEN 'fanout' THEN PERFORM flowforge._fanout_child_settled(p_org, p_unit_id, false, p_now);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._on_task_failed_for_good(text, uuid, uuid, uuid, uuid, timestamptz) IS
  'Internal hook: a unit of work of run p_run_id (organization p_org) failed with no attempt left (fail or the '
  'reaper). dag: skip its transitive dependents, settle the run.';

CREATE OR REPLACE FUNCTION flowforge._on_task_requeued(p_engine text, p_org uuid, p_run_id uuid, p_unit_id uuid,
                                                       p_node_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._tasks_ready(p_org, p_run_id, p_now);
        -- A retried item is picked up when its backoff ends (workers poll; tick wakes nobody for it).
        WHEN 'graph', 'statemachine', 'fanout' THEN PERFORM flowforge._notify_ready();
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._on_task_requeued(text, uuid, uuid, uuid, uuid, timestamptz) IS
  'Internal hook: a unit of work of run p_run_id (organization p_org) is ready again for another attempt (fail with '
  'attempts left, a reaped lease). dag: dispatch it if due on a push queue, wake pull workers.';

-- Run verbs: the engine that owns a run does the work.

CREATE OR REPLACE FUNCTION flowforge._start_engine_run(p_engine text, p_org uuid, p_run_id uuid, p_workflow_id uuid,
                                                       p_spec jsonb, p_input jsonb, p_idempotency_key text,
                                                       p_now timestamptz, p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_start_run(p_org, p_run_id, p_workflow_id, p_spec, p_input,
                                                         p_idempotency_key, p_now, p_created_by);
        WHEN 'graph' THEN PERFORM flowforge._graph_start_run(p_org, p_run_id, p_workflow_id, p_spec, p_input,
                                                             p_idempotency_key, p_now, p_created_by);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_start_run(p_org, p_run_id, p_workflow_id, p_spec, p_input,
                                                                      p_idempotency_key, p_now, p_created_by);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._start_engine_run(text, uuid, uuid, uuid, jsonb, jsonb, text, timestamptz, text) IS
  'Internal hook: create run p_run_id of definition p_workflow_id (kind p_engine) with its first units of work, '
  'ready ones dispatched or announced; the run and its directory row belong to p_created_by.';

-- Many runs of one definition (start_runs): a DAG starts them set-based; the
-- other engines start each run as start_run would, one after the other.
CREATE OR REPLACE FUNCTION flowforge._start_engine_runs(p_engine text, p_org uuid, p_run_ids uuid[], p_workflow_id uuid,
                                                        p_spec jsonb, p_inputs jsonb[], p_idempotency_keys text[],
                                                        p_now timestamptz, p_created_by text)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_i integer;
BEGIN
    IF p_engine = 'dag' THEN
        PERFORM flowforge._dag_start_runs(p_org, p_run_ids, p_workflow_id, p_spec, p_inputs, p_idempotency_keys, p_now,
                                          p_created_by);
        RETURN;
    END IF;
    FOR v_i IN 1 .. cardinality(p_run_ids) LOOP
        PERFORM flowforge._start_engine_run(p_engine, p_org, p_run_ids[v_i], p_workflow_id, p_spec, p_inputs[v_i],
                                            p_idempotency_keys[v_i], p_now, p_created_by);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION flowforge._start_engine_runs(text, uuid, uuid[], uuid, jsonb, jsonb[], text[], timestamptz, text) IS
  'Internal hook: create the runs p_run_ids of definition p_workflow_id (kind p_engine), one per element of the '
  'parallel arrays, as _start_engine_run would each (owned by p_created_by): a dag set-based (_dag_start_runs), '
  'other kinds one by one.';

CREATE OR REPLACE FUNCTION flowforge._cancel_engine_run(p_engine text, p_org uuid, p_run_id uuid, p_reason text,
                                                        p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_cancel_run(p_org, p_run_id, p_reason, p_now);
        WHEN 'graph' THEN PERFORM flowforge._graph_cancel_run(p_org, p_run_id, p_reason, p_now);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_cancel_run(p_org, p_run_id, p_reason, p_now);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._cancel_engine_run(text, uuid, uuid, text, timestamptz) IS
  'Internal hook: cancel run p_run_id and every unfinished unit (holders lose their fencing token). Errors: FF005 '
  'the run already finished.';

CREATE OR REPLACE FUNCTION flowforge._retry_engine_run(p_engine text, p_org uuid, p_run_id uuid, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_retry_run(p_org, p_run_id, p_now);
        WHEN 'graph' THEN PERFORM flowforge._graph_retry_run(p_org, p_run_id, p_now);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_retry_run(p_org, p_run_id, p_now);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._retry_engine_run(text, uuid, uuid, timestamptz) IS
  'Internal hook: run p_run_id (failed or cancelled) goes again from where it stopped. Errors: FF005 the run is not '
  'failed or cancelled.';

-- Definitions: each kind validates and materialises its own spec.

CREATE OR REPLACE FUNCTION flowforge._normalize_spec(p_spec jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_spec IS NULL OR jsonb_typeof(p_spec) <> 'object' THEN
        PERFORM flowforge._invalid_definition('the spec must be a JSON object');
    END IF;
    CASE coalesce(p_spec ->> 'kind', 'dag')
        WHEN 'dag' THEN RETURN flowforge._normalize_dag_spec(p_spec);
        WHEN 'graph' THEN RETURN flowforge._normalize_graph_spec(p_spec);
        WHEN 'statemachine' THEN RETURN flowforge._normalize_machine_spec(p_spec);
        ELSE PERFORM flowforge._invalid_definition(format(
            'kind %s is not supported (supported: "dag", "graph", "statemachine")', p_spec -> 'kind'));
    END CASE;
    RETURN NULL;  -- unreachable: every branch returns or raises
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_spec(jsonb) IS
  'Internal: validates a workflow spec of any kind ("kind" defaults to dag) and returns it normalized (defaults '
  'filled in, durations canonical) so equal content hashes equal. Errors: FF002 naming the first problem.';

CREATE OR REPLACE FUNCTION flowforge._materialize_definition(p_engine text, p_org uuid, p_workflow_id uuid,
                                                             p_spec jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN PERFORM flowforge._dag_define_tasks(p_org, p_workflow_id, p_spec, p_now);
        WHEN 'graph' THEN PERFORM flowforge._graph_define(p_org, p_workflow_id, p_spec, p_now);
        WHEN 'statemachine' THEN PERFORM flowforge._machine_define(p_org, p_workflow_id, p_spec, p_now);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._materialize_definition(text, uuid, uuid, jsonb, timestamptz) IS
  'Internal hook: write the rows a new definition version of kind p_engine needs beside its workflow row (dag: its '
  'tasks and dependency edges).';

-- Which engine owns a run of the caller's organization: the run directory says.
CREATE OR REPLACE FUNCTION flowforge._run_engine(p_run_id uuid, p_org uuid) RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_engine text;
BEGIN
    SELECT e.engine_kind INTO v_engine FROM flowforge.engine_run e
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
    IF v_engine IS NULL THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    RETURN v_engine;
END;
$$;
COMMENT ON FUNCTION flowforge._run_engine(uuid, uuid) IS
  'Internal: the engine kind of run p_run_id of organization p_org, from the run directory. Errors: FF001 no such run '
  '(or another organization''s).';

-- Reads: the engine that owns a run describes it.
CREATE OR REPLACE FUNCTION flowforge._run_detail(p_engine text, p_org uuid, p_run_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    CASE p_engine
        WHEN 'dag' THEN RETURN flowforge._dag_run_detail(p_org, p_run_id);
        WHEN 'graph' THEN RETURN flowforge._graph_run_detail(p_org, p_run_id);
        WHEN 'statemachine' THEN RETURN flowforge._machine_run_detail(p_org, p_run_id);
    END CASE;
END;
$$;
COMMENT ON FUNCTION flowforge._run_detail(text, uuid, uuid) IS
  'Internal hook: get_run''s engine-specific view of run p_run_id.';
