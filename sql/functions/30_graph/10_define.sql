-- Graph definitions: nodes and conditional edges, cycles allowed.
--
--   {"name": "review_loop", "kind": "graph", "start": "draft", "max_steps": 20,
--    "nodes": [{"key": "draft", ...unit fields..., "max_visits": 5}, {"key": "done", "final": true}],
--    "edges": [{"from": "review", "to": "draft", "when": "$.output.approved == false"}, ...]}
--
-- A node is a task row (like a DAG task: queue, priority, retries, timeout,
-- selectors, affinity) plus max_visits and final; an edge is a graph_edge row,
-- tried in definition order among its node's edges, with an optional jsonpath
-- predicate over {"output", "state", "visits"}.

CREATE OR REPLACE FUNCTION flowforge._normalize_graph_spec(p_spec jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET intervalstyle = 'postgres'
AS $$
DECLARE
    c_name_pattern constant text := '^[A-Za-z][A-Za-z0-9_-]{0,62}$';
    c_max_nodes constant integer := 1000;
    v_field text;
    v_node jsonb;
    v_edge jsonb;
    v_key text;
    v_keys text[] := '{}';
    v_final text[] := '{}';
    v_nodes jsonb := '[]';
    v_edges jsonb := '[]';
    v_out jsonb;
    v_from text;
    v_to text;
    v_ord integer := 0;
    v_reached text[];
    v_frontier text[];
BEGIN
    FOR v_field IN SELECT jsonb_object_keys(p_spec) LOOP
        IF v_field NOT IN ('name', 'kind', 'description', 'start', 'max_steps', 'nodes', 'edges') THEN
            PERFORM flowforge._invalid_definition(format(
                'unknown field "%s" (known for a graph: name, kind, description, start, max_steps, nodes, edges)', v_field));
        END IF;
    END LOOP;
    IF jsonb_typeof(p_spec -> 'name') IS DISTINCT FROM 'string' OR (p_spec ->> 'name') !~ c_name_pattern THEN
        PERFORM flowforge._invalid_definition(format(
            'name must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got %s',
            coalesce((p_spec -> 'name')::text, 'nothing')));
    END IF;
    IF p_spec ? 'description' AND jsonb_typeof(p_spec -> 'description') <> 'string' THEN
        PERFORM flowforge._invalid_definition('description must be a string');
    END IF;
    IF jsonb_typeof(p_spec -> 'nodes') IS DISTINCT FROM 'array' OR jsonb_array_length(p_spec -> 'nodes') = 0 THEN
        PERFORM flowforge._invalid_definition('nodes must be a non-empty array');
    END IF;
    IF jsonb_array_length(p_spec -> 'nodes') > c_max_nodes THEN
        PERFORM flowforge._invalid_definition(format('a graph has at most %s nodes, got %s', c_max_nodes,
                                                     jsonb_array_length(p_spec -> 'nodes')));
    END IF;
    IF p_spec ? 'edges' AND jsonb_typeof(p_spec -> 'edges') <> 'array' THEN
        PERFORM flowforge._invalid_definition('edges must be an array');
    END IF;

    FOR v_node IN SELECT value FROM jsonb_array_elements(p_spec -> 'nodes') LOOP
        IF jsonb_typeof(v_node) <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('each node must be an object, got %s', v_node));
        END IF;
        IF jsonb_typeof(v_node -> 'key') IS DISTINCT FROM 'string' OR (v_node ->> 'key') !~ c_name_pattern THEN
            PERFORM flowforge._invalid_definition(format(
                'node key must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got %s',
                coalesce((v_node -> 'key')::text, 'nothing')));
        END IF;
        v_key := v_node ->> 'key';
        IF v_key = ANY (v_keys) THEN
            PERFORM flowforge._invalid_definition(format('duplicate node key "%s"', v_key));
        END IF;
        v_keys := v_keys || v_key;
        IF v_node ? 'final' AND jsonb_typeof(v_node -> 'final') <> 'boolean' THEN
            PERFORM flowforge._invalid_definition(format('node "%s": final must be true or false', v_key));
        END IF;
        IF (v_node ->> 'final')::boolean IS TRUE THEN
            -- A final node ends the run: it runs nothing, so it has nothing to configure.
            FOR v_field IN SELECT jsonb_object_keys(v_node) LOOP
                IF v_field NOT IN ('key', 'final', 'description') THEN
                    PERFORM flowforge._invalid_definition(format(
                        'node "%s": a final node runs nothing and takes only key, final, description (got "%s")', v_key, v_field));
                END IF;
            END LOOP;
            IF v_node ? 'description' AND jsonb_typeof(v_node -> 'description') <> 'string' THEN
                PERFORM flowforge._invalid_definition(format('node "%s": description must be a string', v_key));
            END IF;
            v_final := v_final || v_key;
            v_out := jsonb_build_object('key', v_key, 'final', true)
                     || CASE WHEN v_node ? 'description' THEN jsonb_build_object('description', v_node -> 'description')
                             ELSE '{}' END;
        ELSE
            FOR v_field IN SELECT jsonb_object_keys(v_node) LOOP
                IF v_field NOT IN ('key', 'final', 'queue', 'priority', 'max_attempts', 'backoff', 'backoff_factor',
                                   'max_backoff', 'timeout', 'description', 'max_visits', 'worker_params', 'affinity',
                                   'affinity_policy', 'map', 'concurrency', 'rate_limit', 'fairness') THEN
                    PERFORM flowforge._invalid_definition(format('node "%s": unknown field "%s"', v_key, v_field));
                END IF;
            END LOOP;
            v_out := jsonb_build_object('key', v_key, 'final', false)
                     || flowforge._spec_unit(v_node, format('node "%s"', v_key));
            IF v_node ? 'max_visits' THEN
                v_out := v_out || jsonb_build_object('max_visits', flowforge._spec_integer(
                    v_node -> 'max_visits', format('node "%s": max_visits', v_key), 1, 100000));
            END IF;
            IF v_node ? 'map' THEN
                v_out := v_out || jsonb_build_object('map', flowforge._spec_map(v_node -> 'map', format('node "%s"', v_key)));
            END IF;
        END IF;
        v_nodes := v_nodes || v_out;
    END LOOP;

    IF jsonb_typeof(p_spec -> 'start') IS DISTINCT FROM 'string' THEN
        PERFORM flowforge._invalid_definition('start must name the node the run begins at');
    END IF;
    IF NOT (p_spec ->> 'start') = ANY (v_keys) THEN
        PERFORM flowforge._invalid_definition(format('start names unknown node "%s"', p_spec ->> 'start'));
    END IF;

    FOR v_edge IN SELECT value FROM jsonb_array_elements(coalesce(p_spec -> 'edges', '[]')) LOOP
        v_ord := v_ord + 1;
        IF jsonb_typeof(v_edge) <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('edge %s must be an object, got %s', v_ord, v_edge));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_edge) LOOP
            IF v_field NOT IN ('from', 'to', 'when', 'description') THEN
                PERFORM flowforge._invalid_definition(format('edge %s: unknown field "%s" (known: from, to, when, description)',
                                                             v_ord, v_field));
            END IF;
        END LOOP;
        v_from := v_edge ->> 'from';
        v_to := v_edge ->> 'to';
        IF jsonb_typeof(v_edge -> 'from') IS DISTINCT FROM 'string' OR NOT v_from = ANY (v_keys) THEN
            PERFORM flowforge._invalid_definition(format('edge %s: from names unknown node %s', v_ord,
                                                         coalesce((v_edge -> 'from')::text, 'nothing')));
        END IF;
        IF jsonb_typeof(v_edge -> 'to') IS DISTINCT FROM 'string' OR NOT v_to = ANY (v_keys) THEN
            PERFORM flowforge._invalid_definition(format('edge %s (%s -> ...): to names unknown node %s', v_ord, v_from,
                                                         coalesce((v_edge -> 'to')::text, 'nothing')));
        END IF;
        IF v_from = ANY (v_final) THEN
            PERFORM flowforge._invalid_definition(format('edge %s (%s -> %s): final node "%s" cannot have outgoing edges',
                                                         v_ord, v_from, v_to, v_from));
        END IF;
        IF v_edge ? 'when' AND (jsonb_typeof(v_edge -> 'when') <> 'string'
                                OR NOT flowforge._is_jsonpath_predicate(v_edge ->> 'when')) THEN
            PERFORM flowforge._invalid_definition(format(
                'edge %s (%s -> %s): when must be a jsonpath predicate over {"output", "state", "visits"}, such as '
                '"$.output.approved == false", got %s', v_ord, v_from, v_to, v_edge -> 'when'));
        END IF;
        IF v_edge ? 'description' AND jsonb_typeof(v_edge -> 'description') <> 'string' THEN
            PERFORM flowforge._invalid_definition(format('edge %s (%s -> %s): description must be a string', v_ord, v_from, v_to));
        END IF;
        -- One element: the edge object is built first (array || object || object would append three).
        v_edges := v_edges || jsonb_build_array(
            jsonb_build_object('from', v_from, 'to', v_to)
            || CASE WHEN v_edge ? 'when' THEN jsonb_build_object('when', ((v_edge ->> 'when')::jsonpath)::text)
                    ELSE '{}' END
            || CASE WHEN v_edge ? 'description' THEN jsonb_build_object('description', v_edge -> 'description')
                    ELSE '{}' END);
    END LOOP;

    -- Every node that is not final goes somewhere.
    FOR v_key IN SELECT k FROM unnest(v_keys) AS k WHERE NOT k = ANY (v_final) LOOP
        IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_edges) e WHERE e ->> 'from' = v_key) THEN
            PERFORM flowforge._invalid_definition(format('node "%s" is not final and has no outgoing edge', v_key));
        END IF;
    END LOOP;
    -- Every node can be reached from start (breadth first over the edges).
    v_reached := ARRAY[p_spec ->> 'start'];
    v_frontier := v_reached;
    WHILE cardinality(v_frontier) > 0 LOOP
        SELECT coalesce(array_agg(DISTINCT e ->> 'to'), '{}') INTO v_frontier
        FROM jsonb_array_elements(v_edges) e
        WHERE e ->> 'from' = ANY (v_frontier) AND NOT (e ->> 'to') = ANY (v_reached);
        v_reached := v_reached || v_frontier;
    END LOOP;
    FOR v_key IN SELECT k FROM unnest(v_keys) AS k WHERE NOT k = ANY (v_reached) LOOP
        PERFORM flowforge._invalid_definition(format('node "%s" cannot be reached from start "%s"', v_key, p_spec ->> 'start'));
    END LOOP;

    RETURN jsonb_build_object('name', p_spec ->> 'name', 'kind', 'graph', 'start', p_spec ->> 'start',
                              'max_steps', flowforge._spec_integer(coalesce(p_spec -> 'max_steps', '1000'), 'max_steps',
                                                                   1, 100000),
                              'nodes', v_nodes, 'edges', v_edges)
        || CASE WHEN p_spec ? 'description' THEN jsonb_build_object('description', p_spec -> 'description') ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._normalize_graph_spec(jsonb) IS
  'Internal: validates a graph spec (nodes, edges tried in order, start, max_steps 1..100000, default 1000) and '
  'returns it normalized. Errors: FF002 naming the first problem — unknown node in an edge, missing or unknown '
  'start, a node unreachable from start, a non-final node with no outgoing edge, a final node with outgoing edges, '
  'a when that is not a jsonpath predicate (naming the edge), duplicate keys, unknown fields.';

-- A new graph version's nodes (task rows) and edges (graph_edge rows).
CREATE OR REPLACE FUNCTION flowforge._graph_define(p_org uuid, p_workflow_id uuid, p_spec jsonb, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO flowforge.task (organization_id, workflow_id, key, queue, priority, max_attempts, backoff,
                                backoff_factor, max_backoff, timeout, dependency_count, max_visits, is_final,
                                worker_params, affinity, affinity_policy, spec, flow, created_at)
    SELECT p_org, p_workflow_id, n ->> 'key', coalesce(n ->> 'queue', 'default'), coalesce((n ->> 'priority')::integer, 0),
           coalesce((n ->> 'max_attempts')::integer, 1), coalesce((n ->> 'backoff')::interval, interval '1 second'),
           coalesce((n ->> 'backoff_factor')::numeric, 2), coalesce((n ->> 'max_backoff')::interval, interval '10 minutes'),
           (n ->> 'timeout')::interval, 0, (n ->> 'max_visits')::integer, (n ->> 'final')::boolean,
           n -> 'worker_params', n ->> 'affinity', coalesce(n ->> 'affinity_policy', 'soft'),
           CASE WHEN n ? 'map' THEN jsonb_build_object('map', n -> 'map') END, flowforge._unit_flow(n), p_now
    FROM jsonb_array_elements(p_spec -> 'nodes') AS n;

    INSERT INTO flowforge.graph_edge (organization_id, workflow_id, from_task_id, position, to_task_id, condition)
    SELECT p_org, p_workflow_id, f.id,
           row_number() OVER (PARTITION BY e ->> 'from' ORDER BY o)::integer, t.id, (e ->> 'when')::jsonpath
    FROM jsonb_array_elements(p_spec -> 'edges') WITH ORDINALITY AS x(e, o)
    JOIN flowforge.task f ON f.workflow_id = p_workflow_id AND f.key = e ->> 'from'
    JOIN flowforge.task t ON t.workflow_id = p_workflow_id AND t.key = e ->> 'to';
END;
$$;
COMMENT ON FUNCTION flowforge._graph_define(uuid, uuid, jsonb, timestamptz) IS
  'Internal (graph hook): inserts the task rows (nodes) and graph_edge rows (numbered per node in definition order) '
  'of a new graph version from its normalized spec.';
