

-- DAG definitions: the spec's validation and the rows a version needs.

-- Name the first dependency cycle among tasks Kahn's algorithm could not order.
CREATE OR REPLACE FUNCTION flowforge._spec_find_cycle(p_keys text[], p_deps jsonb, p_stuck boolean[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_position jsonb := '{}';
    v_path text[] := '{}';
    v_current text;
    v_next text;
BEGIN
    -- Every stuck task waits on at least one other stuck task, so walking
    -- "first stuck dependency" from any stuck task must revisit a task.
    FOR v_index IN 1 .. cardinality(p_keys) LOOP
        IF p_stuck[v_index] THEN
            v_current := p_keys[v_index];
            EXIT;
        END IF;
    END LOOP;
    LOOP
        IF v_position ? v_current THEN
            v_path := v_path[(v_position ->> v_current)::integer :] || v_current;
            RETURN array_to_string(v_path, ' -> ');
        END IF;
        v_position := v_position || jsonb_build_object(v_current, cardinality(v_path) + 1);
        v_path := v_path || v_current;
        SELECT d INTO v_next
        FROM jsonb_array_elements_text(p_deps -> v_current) AS d
        WHERE p_stuck[array_position(p_keys, d)]
        LIMIT 1;
        v_current := v_next;
    END LOOP;
    RETURN NULL;  -- unreachable: the walk always closes a cycle
END;
$$;
COMMENT ON FUNCTION flowforge._spec_find_cycle(text[], jsonb, boolean[]) IS
  'Internal: given the tasks a topological sort left over, returns one cycle as "a -> b -> a" (a depends on b).';

CREATE OR REPLACE FUNCTION flowforge._normalize_dag_spec(p_spec jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
-- Durations are written out as interval text: pin its style, or the content
-- hash (and so the version) would depend on the caller's IntervalStyle.
SET intervalstyle = 'postgres'
AS $$
DECLARE
    c_name_pattern constant text := '^[A-Za-z][A-Za-z0-9_-]{0,62}$';
    c_queue_pattern constant text := '^[A-Za-z][A-Za-z0-9_.-]{0,62}$';
    c_max_tasks constant integer := 1000;
    v_field text;
    v_task jsonb;
    v_key text;
    v_dep jsonb;
    v_tasks jsonb := '[]';
    v_out jsonb;
    v_deps jsonb := '{}';
    v_keys text[] := '{}';
    v_dependents jsonb;
    v_indegree integer[];
    v_queue integer[];
    v_head integer := 1;
    v_node integer;
    v_child jsonb;
    v_done integer := 0;
    v_stuck boolean[];
    v_index integer;
BEGIN
    IF p_spec IS NULL OR jsonb_typeof(p_spec) <> 'object' THEN
        PERFORM flowforge._invalid_definition('the spec must be a JSON object');
    END IF;
    FOR v_field IN SELECT jsonb_object_keys(p_spec) LOOP
        IF v_field NOT IN ('name', 'kind', 'description', 'tasks') THEN
            PERFORM flowforge._invalid_definition(format('unknown field "%s" (known: name, kind, description, tasks)', v_field));
        END IF;
    END LOOP;
    IF jsonb_typeof(p_spec -> 'name') IS DISTINCT FROM 'string'
       OR (p_spec ->> 'name') !~ c_name_pattern THEN
        PERFORM flowforge._invalid_definition(format(
            'name must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got %s',
            coalesce((p_spec -> 'name')::text, 'nothing')));
    END IF;
    IF p_spec ? 'description' AND jsonb_typeof(p_spec -> 'description') <> 'string' THEN
        PERFORM flowforge._invalid_definition('description must be a string');
    END IF;
    IF jsonb_typeof(p_spec -> 'tasks') IS DISTINCT FROM 'array' OR jsonb_array_length(p_spec -> 'tasks') = 0 THEN
        PERFORM flowforge._invalid_definition('tasks must be a non-empty array');
    END IF;
    IF jsonb_array_length(p_spec -> 'tasks') > c_max_tasks THEN
        PERFORM flowforge._invalid_definition(format('a workflow has at most %s tasks, got %s', c_max_tasks, jsonb_array_length(p_spec -> 'tasks')));
    END IF;

    FOR v_task IN SELECT value FROM jsonb_array_elements(p_spec -> 'tasks') LOOP
        IF jsonb_typeof(v_task) <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('each task must be an object, got %s', v_task));
        END IF;
        IF jsonb_typeof(v_task -> 'key') IS DISTINCT FROM 'string' OR (v_task ->> 'key') !~ c_name_pattern THEN
            PERFORM flowforge._invalid_definition(format(
                'task key must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got %s',
                coalesce((v_task -> 'key')::text, 'nothing')));
        END IF;
        v_key := v_task ->> 'key';
        FOR v_field IN SELECT jsonb_object_keys(v_task) LOOP
            IF v_field NOT IN ('key', 'depends_on', 'queue', 'priority', 'max_attempts', 'backoff',
                               'backoff_factor', 'max_backoff', 'timeout', 'description', 'worker_params',
                               'affinity', 'affinity_policy', 'map', 'concurrency', 'rate_limit',
                               'fairness') THEN
                PERFORM flowforge._invalid_definition(format('task "%s": unknown field "%s"', v_key, v_field));
            END IF;
        END LOOP;
        IF v_key = ANY (v_keys) THEN
            PERFORM flowforge._invalid_definition(format('duplicate task key "%s"', v_key));
        END IF;
        v_keys := v_keys || v_key;

        IF v_task ? 'depends_on' AND jsonb_typeof(v_task -> 'depends_on') <> 'array' THEN
            PERFORM flowforge._invalid_definition(format('task "%s": depends_on must be an array of task keys', v_key));
        END IF;
        FOR v_dep IN SELECT value FROM jsonb_array_elements(coalesce(v_task -> 'depends_on', '[]')) LOOP
            IF jsonb_typeof(v_dep) <> 'string' THEN
                PERFORM flowforge._invalid_definition(format('task "%s": depends_on entries must be task keys, got %s', v_key, v_dep));
            END IF;
        END LOOP;
        IF (SELECT count(*) <> count(DISTINCT value) FROM jsonb_array_elements(coalesce(v_task -> 'depends_on', '[]'))) THEN
            PERFORM flowforge._invalid_definition(format('task "%s": depends_on names a task twice', v_key));
        END IF;

        v_out := jsonb_build_object('key', v_key, 'depends_on', coalesce(v_task -> 'depends_on', '[]'))
                 || flowforge._spec_unit(v_task, format('task "%s"', v_key));
        IF v_task ? 'map' THEN
            v_out := v_out || jsonb_build_object('map', flowforge._spec_map(v_task -> 'map', format('task "%s"', v_key)));
        END IF;
        v_tasks := v_tasks || v_out;
        v_deps := v_deps || jsonb_build_object(v_key, v_out -> 'depends_on');
    END LOOP;

    -- Every dependency names a task of this workflow (a task naming itself is a cycle, reported below).
    FOR v_key, v_dep IN
        SELECT t ->> 'key', d FROM jsonb_array_elements(v_tasks) t, jsonb_array_elements(t -> 'depends_on') d
    LOOP
        IF NOT (v_dep #>> '{}') = ANY (v_keys) THEN
            PERFORM flowforge._invalid_definition(format('task "%s" depends on unknown task "%s"', v_key, v_dep #>> '{}'));
        END IF;
    END LOOP;

    -- Kahn's algorithm: a DAG orders every task; the leftovers contain a cycle.
    SELECT coalesce(jsonb_object_agg(dep, children), '{}') INTO v_dependents
    FROM (SELECT d AS dep, jsonb_agg(ord) AS children
          FROM jsonb_array_elements(v_tasks) WITH ORDINALITY AS t(task, ord),
               jsonb_array_elements_text(t.task -> 'depends_on') AS d
          GROUP BY d) s;
    SELECT array_agg(jsonb_array_length(task -> 'depends_on') ORDER BY ord) INTO v_indegree
    FROM jsonb_array_elements(v_tasks) WITH ORDINALITY AS t(task, ord);
    SELECT coalesce(array_agg(ord::integer ORDER BY ord), '{}') INTO v_queue
    FROM jsonb_array_elements(v_tasks) WITH ORDINALITY AS t(task, ord)
    WHERE jsonb_array_length(task -> 'depends_on') = 0;
    WHILE v_head <= cardinality(v_queue) LOOP
        v_node := v_queue[v_head];
        v_head := v_head + 1;
        v_done := v_done + 1;
        FOR v_child IN SELECT value FROM jsonb_array_elements(coalesce(v_dependents -> v_keys[v_node], '[]')) LOOP
            v_index := (v_child #>> '{}')::integer;
            v_indegree[v_index] := v_indegree[v_index] - 1;
            IF v_indegree[v_index] = 0 THEN
                v_queue := v_queue || v_index;
            END IF;
        END LOOP;
    END LOOP;
    IF v_done < cardinality(v_keys) THEN
        SELECT array_agg(i > 0 ORDER BY n) INTO v_stuck FROM unnest(v_indegree) WITH ORDINALITY AS u(i, n);
        PERFORM flowforge._invalid_definition(format('dependency cycle: %s',
            flowforge._spec_find_cycle(v_keys, v_deps, v_stuck)));
    END IF;

    RETURN jsonb_build_object('name', p_spec ->> 'name', 'kind', 'dag', 'tasks', v_tasks)
        || CASE WHEN p_spec ? 'description' THEN jsonb_build_object('description', p_spec -> 'description') ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_dag_spec(jsonb) IS
  'Internal: validates a DAG workflow spec and returns it with every default filled in and durations in canonical '
  'form, so equal content hashes equal. Errors: FF002 naming the first problem.';

-- A new DAG version's tasks and edges, in two statements.
CREATE OR REPLACE FUNCTION flowforge._dag_define_tasks(p_org uuid, p_workflow_id uuid, p_spec jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.task (organization_id, workflow_id, key, queue, priority, max_attempts, backoff,
                                backoff_factor, max_backoff, timeout, dependency_count, worker_params, affinity,
                                affinity_policy, spec, flow, created_at)
    SELECT p_org, p_workflow_id, t ->> 'key', t ->> 'queue', (t ->> 'priority')::integer, (t ->> 'max_attempts')::integer,
           (t ->> 'backoff')::interval, (t ->> 'backoff_factor')::numeric, (t ->> 'max_backoff')::interval,
           (t ->> 'timeout')::interval, jsonb_array_length(t -> 'depends_on'), t -> 'worker_params', t ->> 'affinity',
           coalesce(t ->> 'affinity_policy', 'soft'),
           CASE WHEN t ? 'map' THEN jsonb_build_object('map', t -> 'map') END, flowforge._unit_flow(t), p_now
    FROM jsonb_array_elements(p_spec -> 'tasks') AS t;

    INSERT INTO flowforge.task_dependency (organization_id, workflow_id, task_id, depends_on_task_id)
    SELECT p_org, p_workflow_id, child.id, parent.id
    FROM jsonb_array_elements(p_spec -> 'tasks') AS t
    CROSS JOIN LATERAL jsonb_array_elements_text(t -> 'depends_on') AS dep(key)
    JOIN flowforge.task child ON child.workflow_id = p_workflow_id AND child.key = t ->> 'key'
    JOIN flowforge.task parent ON parent.workflow_id = p_workflow_id AND parent.key = dep.key;
END;
$$;
COMMENT ON FUNCTION flowforge._dag_define_tasks(uuid, uuid, jsonb, timestamptz) IS
  'Internal (dag hook): inserts the task rows (a fanning task''s map in task.spec) and dependency edges of a new DAG '
  'version from its normalized spec.';
