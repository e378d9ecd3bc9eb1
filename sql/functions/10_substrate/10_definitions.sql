

-- Definitions of every kind: validate a spec, version it by content, store it.
--
--   define_workflow(spec) -> uuid of the workflow version
--
-- A definition is immutable once stored; a changed spec is version + 1 and
-- runs always start the latest version. Each kind validates its own spec and
-- writes its own rows through the hooks (_normalize_spec, _materialize_definition).

-- Parse a duration field; FF002 when it is not an interval or is negative.
CREATE OR REPLACE FUNCTION flowforge._spec_interval(p_value jsonb, p_field text) RETURNS interval
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_interval interval;
BEGIN
    IF jsonb_typeof(p_value) <> 'string' THEN
        PERFORM flowforge._invalid_definition(format('%s must be a duration string such as "5 seconds", got %s', p_field, p_value));
    END IF;
    BEGIN
        v_interval := (p_value #>> '{}')::interval;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow OR syntax_error THEN
        PERFORM flowforge._invalid_definition(format('%s is not a duration: %s', p_field, p_value));
    END;
    IF v_interval < interval '0' THEN
        PERFORM flowforge._invalid_definition(format('%s must not be negative, got %s', p_field, p_value));
    END IF;
    RETURN v_interval;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_interval(jsonb, text) IS
  'Internal: parses a spec duration; raises FF002 naming the field when it is not a non-negative interval.';

-- Parse an integer field within bounds; FF002 otherwise.
CREATE OR REPLACE FUNCTION flowforge._spec_integer(p_value jsonb, p_field text, p_min integer, p_max integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_number numeric;
BEGIN
    IF jsonb_typeof(p_value) <> 'number' THEN
        PERFORM flowforge._invalid_definition(format('%s must be an integer, got %s', p_field, p_value));
    END IF;
    v_number := (p_value #>> '{}')::numeric;
    IF v_number <> trunc(v_number) OR v_number < p_min OR v_number > p_max THEN
        PERFORM flowforge._invalid_definition(format('%s must be an integer between %s and %s, got %s', p_field, p_min, p_max, p_value));
    END IF;
    RETURN v_number::integer;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_integer(jsonb, text, integer, integer) IS
  'Internal: parses a spec integer within [min, max]; raises FF002 naming the field otherwise.';

-- Flow control a unit of work declares (docs/execution-model.md, "Flow control"),
-- validated and normalized; {} when it declares none:
--   "concurrency": {"key": <jsonpath into the input>, "max": 1..10000}
--   "rate_limit":  {"key": <jsonpath into the input, or a fixed name>, "limit": 1..1000000,
--                   "per": <duration, 1 millisecond .. 1 day>}
--   "fairness":    {"key": <jsonpath into the input>, "weight": <number 0.001..1000, or a jsonpath>}  (weight 1)
CREATE OR REPLACE FUNCTION flowforge._spec_flow(p_unit jsonb, p_label text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET intervalstyle = 'postgres'
AS $$
DECLARE
    c_name_pattern constant text := '^[A-Za-z][A-Za-z0-9_.:-]{0,199}$';
    v_field text;
    v_part jsonb;
    v_per interval;
    v_out jsonb := '{}';
BEGIN
    IF p_unit ? 'concurrency' THEN
        v_part := p_unit -> 'concurrency';
        IF jsonb_typeof(v_part) IS DISTINCT FROM 'object' THEN
            PERFORM flowforge._invalid_definition(format(
                '%s: concurrency must be an object such as {"key": "$.run.customer", "max": 2}', p_label));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_part) LOOP
            IF v_field NOT IN ('key', 'max') THEN
                PERFORM flowforge._invalid_definition(format('%s, concurrency: unknown field "%s" (known: key, max)',
                                                             p_label, v_field));
            END IF;
        END LOOP;
        IF jsonb_typeof(v_part -> 'key') IS DISTINCT FROM 'string' OR NOT flowforge._is_jsonpath(v_part ->> 'key')
           OR flowforge._is_jsonpath_predicate(v_part ->> 'key') THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, concurrency: key must be a jsonpath into the input, such as "$.run.customer", got %s',
                p_label, coalesce((v_part -> 'key')::text, 'nothing')));
        END IF;
        v_out := v_out || jsonb_build_object('concurrency', jsonb_build_object(
            'key', v_part ->> 'key',
            'max', flowforge._spec_integer(coalesce(v_part -> 'max', 'null'), format('%s, concurrency: max', p_label), 1, 10000)));
    END IF;
    IF p_unit ? 'rate_limit' THEN
        v_part := p_unit -> 'rate_limit';
        IF jsonb_typeof(v_part) IS DISTINCT FROM 'object' THEN
            PERFORM flowforge._invalid_definition(format(
                '%s: rate_limit must be an object such as {"key": "payments-api", "limit": 10, "per": "1 second"}', p_label));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_part) LOOP
            IF v_field NOT IN ('key', 'limit', 'per') THEN
                PERFORM flowforge._invalid_definition(format('%s, rate_limit: unknown field "%s" (known: key, limit, per)',
                                                             p_label, v_field));
            END IF;
        END LOOP;
        -- A key starting with "$" is a jsonpath (one bucket per value), anything else a fixed name (one bucket).
        IF jsonb_typeof(v_part -> 'key') IS DISTINCT FROM 'string'
           OR NOT (CASE WHEN left(v_part ->> 'key', 1) = '$'
                        THEN flowforge._is_jsonpath(v_part ->> 'key') AND NOT flowforge._is_jsonpath_predicate(v_part ->> 'key')
                        ELSE (v_part ->> 'key') ~ c_name_pattern END) THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, rate_limit: key must be a jsonpath into the input ("$.run.account") or a fixed name of 1-200 '
                'letters, digits, "_", ".", ":" or "-" starting with a letter ("payments-api"), got %s',
                p_label, coalesce((v_part -> 'key')::text, 'nothing')));
        END IF;
        v_per := flowforge._spec_interval(coalesce(v_part -> 'per', 'null'), format('%s, rate_limit: per', p_label));
        IF v_per NOT BETWEEN interval '1 millisecond' AND interval '1 day' THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, rate_limit: per must be between 1 millisecond and 1 day, got %s', p_label, v_part -> 'per'));
        END IF;
        v_out := v_out || jsonb_build_object('rate_limit', jsonb_build_object(
            'key', v_part ->> 'key',
            'limit', flowforge._spec_integer(coalesce(v_part -> 'limit', 'null'), format('%s, rate_limit: limit', p_label),
                                             1, 1000000),
            'per', v_per::text));
    END IF;
    IF p_unit ? 'fairness' THEN
        v_part := p_unit -> 'fairness';
        IF jsonb_typeof(v_part) IS DISTINCT FROM 'object' THEN
            PERFORM flowforge._invalid_definition(format(
                '%s: fairness must be an object such as {"key": "$.run.customer", "weight": 1}', p_label));
        END IF;
        FOR v_field IN SELECT jsonb_object_keys(v_part) LOOP
            IF v_field NOT IN ('key', 'weight') THEN
                PERFORM flowforge._invalid_definition(format('%s, fairness: unknown field "%s" (known: key, weight)',
                                                             p_label, v_field));
            END IF;
        END LOOP;
        IF jsonb_typeof(v_part -> 'key') IS DISTINCT FROM 'string' OR NOT flowforge._is_jsonpath(v_part ->> 'key')
           OR flowforge._is_jsonpath_predicate(v_part ->> 'key') THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, fairness: key must be a jsonpath into the input, such as "$.run.customer", got %s',
                p_label, coalesce((v_part -> 'key')::text, 'nothing')));
        END IF;
        IF v_part ? 'weight' AND NOT (
               (jsonb_typeof(v_part -> 'weight') = 'number'
                AND (v_part ->> 'weight')::numeric BETWEEN 0.001 AND 1000)
            OR (jsonb_typeof(v_part -> 'weight') = 'string' AND flowforge._is_jsonpath(v_part ->> 'weight')
                AND NOT flowforge._is_jsonpath_predicate(v_part ->> 'weight'))) THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, fairness: weight must be a number from 0.001 to 1000 or a jsonpath to one in the input, got %s',
                p_label, v_part -> 'weight'));
        END IF;
        v_out := v_out || jsonb_build_object('fairness', jsonb_build_object(
            'key', v_part ->> 'key',
            -- 2.0 and 2 are the same weight: drop trailing zeros so they hash alike.
            'weight', CASE WHEN jsonb_typeof(v_part -> 'weight') = 'string' THEN v_part -> 'weight'
                           ELSE to_jsonb(trim_scale(coalesce((v_part ->> 'weight')::numeric, 1))) END));
    END IF;
    RETURN v_out;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_flow(jsonb, text) IS
  'Internal: validates and normalizes the flow control a unit of work declares — concurrency {key, max}, rate_limit '
  '{key, limit, per}, fairness {key, weight} — and returns them ({} when none); FF002 naming p_label and the field '
  'otherwise.';

-- The flow control of a normalized unit, as task.flow stores it (NULL when none).
CREATE OR REPLACE FUNCTION flowforge._unit_flow(p_unit jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT nullif(jsonb_strip_nulls(jsonb_build_object('concurrency', p_unit -> 'concurrency',
                                                       'rate_limit', p_unit -> 'rate_limit',
                                                       'fairness', p_unit -> 'fairness')), '{}')
$$;
COMMENT ON FUNCTION flowforge._unit_flow(jsonb) IS
  'Internal: the flow control (concurrency, rate_limit, fairness) of a normalized unit spec, NULL when it declares none.';

-- The properties every unit of work has, whatever engine runs it (a DAG task,
-- a graph node, a machine's action): where it runs, how often it is tried, how
-- long it may take, who may take it. Normalized with every default filled in
-- and durations canonical, so equal content hashes equal. Fields added after
-- the first release (worker_params, affinity, affinity_policy) appear only
-- when given, so a spec defined before them keeps its content hash.
CREATE OR REPLACE FUNCTION flowforge._spec_unit(p_unit jsonb, p_label text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
SET intervalstyle = 'postgres'
AS $$
DECLARE
    c_queue_pattern constant text := '^[A-Za-z][A-Za-z0-9_.-]{0,62}$';
    v_backoff interval;
    v_max_backoff interval;
    v_timeout interval;
    v_factor numeric := 2;
    v_out jsonb;
BEGIN
    IF p_unit ? 'queue' AND (jsonb_typeof(p_unit -> 'queue') <> 'string' OR (p_unit ->> 'queue') !~ c_queue_pattern) THEN
        PERFORM flowforge._invalid_definition(format(
            '%s: queue must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got %s', p_label, p_unit -> 'queue'));
    END IF;
    v_backoff := flowforge._spec_interval(coalesce(p_unit -> 'backoff', '"1 second"'), format('%s: backoff', p_label));
    v_max_backoff := flowforge._spec_interval(coalesce(p_unit -> 'max_backoff', '"10 minutes"'), format('%s: max_backoff', p_label));
    -- Bounded, so no arithmetic on them can overflow a timestamp (a backoff of
    -- "1000000 years" once made every reaper call fail, for every organization).
    IF v_backoff > interval '1 day' THEN
        PERFORM flowforge._invalid_definition(format('%s: backoff must be at most 1 day, got %s', p_label, v_backoff));
    END IF;
    IF v_max_backoff > interval '7 days' THEN
        PERFORM flowforge._invalid_definition(format('%s: max_backoff must be at most 7 days, got %s', p_label, v_max_backoff));
    END IF;
    IF v_max_backoff < v_backoff THEN
        PERFORM flowforge._invalid_definition(format('%s: max_backoff (%s) is shorter than backoff (%s)', p_label, v_max_backoff, v_backoff));
    END IF;
    IF p_unit ? 'backoff_factor' THEN
        IF jsonb_typeof(p_unit -> 'backoff_factor') <> 'number'
           OR (p_unit ->> 'backoff_factor')::numeric < 1 OR (p_unit ->> 'backoff_factor')::numeric > 100 THEN
            PERFORM flowforge._invalid_definition(format('%s: backoff_factor must be a number from 1 to 100, got %s', p_label, p_unit -> 'backoff_factor'));
        END IF;
        -- 2.0 and 2 are the same factor: drop trailing zeros so they hash alike.
        v_factor := trim_scale((p_unit ->> 'backoff_factor')::numeric);
    END IF;
    IF p_unit ? 'description' AND jsonb_typeof(p_unit -> 'description') <> 'string' THEN
        PERFORM flowforge._invalid_definition(format('%s: description must be a string', p_label));
    END IF;
    v_out := jsonb_build_object(
        'queue', coalesce(p_unit ->> 'queue', 'default'),
        'priority', flowforge._spec_integer(coalesce(p_unit -> 'priority', '0'), format('%s: priority', p_label), -1000000, 1000000),
        'max_attempts', flowforge._spec_integer(coalesce(p_unit -> 'max_attempts', '3'), format('%s: max_attempts', p_label), 1, 1000),
        'backoff', v_backoff::text,
        'backoff_factor', v_factor,
        'max_backoff', v_max_backoff::text,
        'timeout', NULL);
    IF p_unit ? 'timeout' AND p_unit -> 'timeout' <> 'null' THEN
        v_timeout := flowforge._spec_interval(p_unit -> 'timeout', format('%s: timeout', p_label));
        IF v_timeout = interval '0' THEN
            PERFORM flowforge._invalid_definition(format('%s: timeout must be longer than zero', p_label));
        END IF;
        IF v_timeout > interval '30 days' THEN
            PERFORM flowforge._invalid_definition(format('%s: timeout must be at most 30 days, got %s', p_label, p_unit -> 'timeout'));
        END IF;
        v_out := v_out || jsonb_build_object('timeout', v_timeout::text);
    END IF;
    IF p_unit ? 'description' THEN
        v_out := v_out || jsonb_build_object('description', p_unit -> 'description');
    END IF;
    -- Selector hints: the agent's labels must contain them.
    IF p_unit ? 'worker_params' THEN
        IF jsonb_typeof(p_unit -> 'worker_params') <> 'object' THEN
            PERFORM flowforge._invalid_definition(format('%s: worker_params must be an object of labels, such as {"gpu": true}', p_label));
        END IF;
        v_out := v_out || jsonb_build_object('worker_params', p_unit -> 'worker_params');
    END IF;
    IF p_unit ? 'affinity' THEN
        IF jsonb_typeof(p_unit -> 'affinity') <> 'string'
           OR NOT (p_unit ->> 'affinity' IN ('run', 'definition') OR flowforge._is_jsonpath(p_unit ->> 'affinity')) THEN
            PERFORM flowforge._invalid_definition(format(
                '%s: affinity must be "run", "definition" or a jsonpath into the input, got %s', p_label, p_unit -> 'affinity'));
        END IF;
        v_out := v_out || jsonb_build_object('affinity', p_unit -> 'affinity',
                                             'affinity_policy', coalesce(p_unit ->> 'affinity_policy', 'soft'));
    END IF;
    IF p_unit ? 'affinity_policy' THEN
        IF NOT p_unit ? 'affinity' OR p_unit ->> 'affinity_policy' NOT IN ('soft', 'hard')
           OR jsonb_typeof(p_unit -> 'affinity_policy') <> 'string' THEN
            PERFORM flowforge._invalid_definition(format('%s: affinity_policy must be "soft" or "hard", with an affinity', p_label));
        END IF;
    END IF;
    -- Flow control (10_substrate/22_flow_control.sql): limits the claim keeps.
    RETURN v_out || flowforge._spec_flow(p_unit, p_label);
END;
$$;
COMMENT ON FUNCTION flowforge._spec_unit(jsonb, text) IS
  'Internal: validates and normalizes the properties every unit of work has (queue, priority, max_attempts, '
  'backoff, backoff_factor, max_backoff, timeout, description, worker_params, affinity, affinity_policy, and the '
  'flow control of _spec_flow: concurrency, rate_limit, fairness); FF002 naming p_label and the field otherwise.';

-- A fanning node's map: {"over": <jsonpath to an array in the node's input>,
-- "mode": "map" | "foreach", "max_concurrency": 1..10000 (default 100),
-- "on_item_failure": "fail" | "continue", "tolerated_failures": n | "p%"}.
-- "fail" with tolerated_failures fails the node once more children than that
-- failed for good; "continue" tolerates every failure.
CREATE OR REPLACE FUNCTION flowforge._spec_map(p_map jsonb, p_label text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_field text;
    v_tolerated jsonb := p_map -> 'tolerated_failures';
BEGIN
    IF jsonb_typeof(p_map) IS DISTINCT FROM 'object' THEN
        PERFORM flowforge._invalid_definition(format(
            '%s: map must be an object such as {"over": "$.run.images", "mode": "map"}', p_label));
    END IF;
    FOR v_field IN SELECT jsonb_object_keys(p_map) LOOP
        IF v_field NOT IN ('over', 'mode', 'max_concurrency', 'on_item_failure', 'tolerated_failures') THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, map: unknown field "%s" (known: over, mode, max_concurrency, on_item_failure, tolerated_failures)',
                p_label, v_field));
        END IF;
    END LOOP;
    IF jsonb_typeof(p_map -> 'over') IS DISTINCT FROM 'string' OR NOT flowforge._is_jsonpath(p_map ->> 'over')
       OR flowforge._is_jsonpath_predicate(p_map ->> 'over') THEN
        PERFORM flowforge._invalid_definition(format(
            '%s, map: over must be a jsonpath to an array in the node''s input, such as "$.run.images", got %s',
            p_label, coalesce((p_map -> 'over')::text, 'nothing')));
    END IF;
    IF p_map ? 'mode' AND (jsonb_typeof(p_map -> 'mode') <> 'string' OR (p_map ->> 'mode') NOT IN ('map', 'foreach')) THEN
        PERFORM flowforge._invalid_definition(format('%s, map: mode must be "map" or "foreach", got %s', p_label,
                                                     p_map -> 'mode'));
    END IF;
    IF p_map ? 'on_item_failure' AND (jsonb_typeof(p_map -> 'on_item_failure') <> 'string'
                                      OR (p_map ->> 'on_item_failure') NOT IN ('fail', 'continue')) THEN
        PERFORM flowforge._invalid_definition(format('%s, map: on_item_failure must be "fail" or "continue", got %s',
                                                     p_label, p_map -> 'on_item_failure'));
    END IF;
    IF v_tolerated IS NOT NULL THEN
        IF p_map ->> 'on_item_failure' = 'continue' THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, map: tolerated_failures goes with on_item_failure "fail" ("continue" tolerates every failure)', p_label));
        END IF;
        -- Canonical, so equal content hashes equal: a count as the integer (2.0 is 2), a
        -- percentage without padding (05% and 5.50% are 5% and 5.5%).
        IF jsonb_typeof(v_tolerated) = 'number' THEN
            IF (v_tolerated #>> '{}')::numeric BETWEEN 0 AND 9999999
               AND (v_tolerated #>> '{}')::numeric = trunc((v_tolerated #>> '{}')::numeric) THEN
                v_tolerated := to_jsonb((v_tolerated #>> '{}')::numeric::bigint);
            ELSE
                v_tolerated := NULL;
            END IF;
        ELSIF jsonb_typeof(v_tolerated) = 'string' AND (v_tolerated #>> '{}') ~ '^([0-9]{1,2}(\.[0-9]{1,2})?|100)%$' THEN
            v_tolerated := to_jsonb(trim_scale(rtrim(v_tolerated #>> '{}', '%')::numeric)::text || '%');
        ELSE
            v_tolerated := NULL;
        END IF;
        IF v_tolerated IS NULL THEN
            PERFORM flowforge._invalid_definition(format(
                '%s, map: tolerated_failures must be a count (0 to 9999999) or a percentage such as "5%%", got %s',
                p_label, p_map -> 'tolerated_failures'));
        END IF;
    END IF;
    RETURN jsonb_build_object(
        'over', ((p_map ->> 'over')::jsonpath)::text,
        'mode', coalesce(p_map ->> 'mode', 'map'),
        'max_concurrency', flowforge._spec_integer(coalesce(p_map -> 'max_concurrency', '100'),
                                                   format('%s, map: max_concurrency', p_label), 1, 10000),
        'on_item_failure', coalesce(p_map ->> 'on_item_failure', 'fail'))
        || CASE WHEN v_tolerated IS NOT NULL THEN jsonb_build_object('tolerated_failures', v_tolerated) ELSE '{}' END;
END;
$$;
COMMENT ON FUNCTION flowforge._spec_map(jsonb, text) IS
  'Internal: validates and normalizes a fanning node''s map (over, mode, max_concurrency, on_item_failure, '
  'tolerated_failures); FF002 naming p_label and the field otherwise.';

-- Is this text a jsonpath PostgreSQL can parse?
CREATE OR REPLACE FUNCTION flowforge._is_jsonpath(p_text text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM p_text::jsonpath;
    RETURN true;
-- Parsing also compiles like_regex patterns and reads numbers: a bad pattern
-- (2201B), an unsupported flag (0A000) or a number out of range (22003) is
-- "not a jsonpath" too, never an error of its own for the caller to leak.
EXCEPTION WHEN syntax_error OR data_exception OR feature_not_supported THEN
    RETURN false;
END;
$$;
COMMENT ON FUNCTION flowforge._is_jsonpath(text) IS 'Internal: true when p_text parses as a jsonpath.';

-- Is this jsonpath a predicate (true / false / unknown) rather than a path to
-- values? A predicate yields exactly one boolean (or null, "unknown") however
-- little the document holds; a path yields values, or nothing.
CREATE OR REPLACE FUNCTION flowforge._is_jsonpath_predicate(p_text text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_results jsonb[];
BEGIN
    IF NOT flowforge._is_jsonpath(p_text) THEN
        RETURN false;
    END IF;
    SELECT array_agg(r) INTO v_results
    FROM jsonb_path_query('{"output": {}, "state": {}, "visits": {}, "event": {}, "context": {}}', p_text::jsonpath,
                          silent => true) AS r;
    -- A path that finds nothing aggregates to NULL: that is "not a predicate"
    -- (false), never NULL, which the caller's NOT would let through.
    RETURN coalesce(cardinality(v_results) = 1 AND jsonb_typeof(v_results[1]) IN ('boolean', 'null'), false);
END;
$$;
COMMENT ON FUNCTION flowforge._is_jsonpath_predicate(text) IS
  'Internal: true when p_text is a jsonpath predicate (yields one boolean or unknown), not a path to values.';

CREATE OR REPLACE FUNCTION flowforge.define_workflow(spec jsonb) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_spec jsonb;
    v_name text;
    v_hash text;
    v_latest record;
    v_id uuid;
    v_creator constant text := flowforge._principal();
BEGIN
    PERFORM flowforge._check_size(define_workflow.spec, 'workflow spec');
    v_spec := flowforge._normalize_spec(define_workflow.spec);
    v_name := v_spec ->> 'name';
    v_hash := md5(v_spec::text);

    -- Serialise definers of one name so two changed specs cannot both become version N + 1.
    PERFORM pg_advisory_xact_lock(hashtextextended('flowforge.workflow/' || v_org::text || '/' || v_name, 0));
    SELECT w.id, w.version, w.content_hash, w.deleted_at INTO v_latest
    FROM flowforge.workflow w
    WHERE w.organization_id = v_org AND w.name = v_name AND w.superseded_at IS NULL;
    -- A deleted name defined again gets a new version, even with the content it had.
    IF FOUND AND v_latest.content_hash = v_hash AND v_latest.deleted_at IS NULL THEN
        RETURN v_latest.id;
    END IF;

    -- The latest version until now is superseded (workflow_latest_uq: one latest per name).
    UPDATE flowforge.workflow w SET superseded_at = greatest(v_now, w.created_at)
    WHERE w.id = v_latest.id;
    INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_at, created_by)
    VALUES (v_org, v_name, coalesce(v_latest.version, 0) + 1, v_spec ->> 'kind', v_spec, v_hash, v_now, v_creator)
    RETURNING id INTO v_id;
    PERFORM flowforge._materialize_definition(v_spec ->> 'kind', v_org, v_id, v_spec, v_now);
    -- Queues of units that declare flow control are claimed through its path from now on.
    PERFORM flowforge._flow_mark_keyed(v_org, v_id, v_now);

    PERFORM flowforge._audit(v_org, 'define', 'workflow', v_id::text, ARRAY['name', 'version', 'spec']);
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge.define_workflow(jsonb) IS
  'define_workflow(spec jsonb) -> uuid. Validates a workflow spec ({"name", "kind": "dag", "tasks": [{"key", "depends_on", '
  '"queue", "priority", "max_attempts", "backoff", "backoff_factor", "max_backoff", "timeout"}]}) and stores it as a new '
  'version of its name in the caller''s organization (created_by: the caller), returning that version''s id; the '
  'version it replaces is superseded (superseded_at). Defining the same content as the latest version returns the '
  'latest version''s id and writes nothing — unless the workflow was deleted: a deleted name defined again gets a new '
  'version, live. '
  'Errors: FF002 invalid definition (no tasks, duplicate keys, unknown dependency, a cycle, max_attempts < 1, negative '
  'durations, unknown fields, bad names) — nothing is written; FF009 spec over the size limit; FF007/FF008 as for '
  'every API call.';
SELECT flowforge._rights('flowforge.define_workflow(jsonb)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

-- The live latest version of a workflow name, what a start reads: FF001 for
-- a name never defined (or another organization's), FF013 for one deleted.
CREATE OR REPLACE FUNCTION flowforge._live_workflow(p_org uuid, p_name text) RETURNS uuid
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_latest record;
BEGIN
    SELECT w.id, w.deleted_at, w.deleted_by INTO v_latest
    FROM flowforge.workflow w
    WHERE w.organization_id = p_org AND w.name = p_name AND w.superseded_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'workflow % not found', coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'Define it first with flowforge.define_workflow(spec).';
    END IF;
    IF v_latest.deleted_at IS NOT NULL THEN
        RAISE EXCEPTION 'workflow % was deleted (at %, by %)', quote_literal(p_name), v_latest.deleted_at,
                        v_latest.deleted_by
            USING ERRCODE = 'FF013', HINT = 'A deleted workflow starts no runs; define it again to use the name.';
    END IF;
    RETURN v_latest.id;
END;
$$;
COMMENT ON FUNCTION flowforge._live_workflow(uuid, text) IS
  'Internal: the id of the latest version of workflow p_name of p_org (workflow_latest_uq). Errors: FF001 no such '
  'workflow; FF013 it was deleted.';

-- Soft delete of a workflow: every version of the name. Nothing is removed —
-- its runs, their history and the definitions they ran stay readable (a
-- run's detail and get_workflow(name, version) still read its version) —
-- but it starts no run any more, by start_run or by a trigger.
CREATE OR REPLACE FUNCTION flowforge.delete_workflow(name text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_by constant text := flowforge._principal();
    v_ids uuid[];
BEGIN
    -- Serialised with define_workflow of the name (the same lock).
    PERFORM pg_advisory_xact_lock(hashtextextended('flowforge.workflow/' || v_org::text || '/' || delete_workflow.name, 0));
    PERFORM flowforge._live_workflow(v_org, delete_workflow.name);  -- FF001 unknown, FF013 already deleted
    WITH deleted AS (
        UPDATE flowforge.workflow w
        SET deleted_at = v_now, deleted_by = v_by, updated_at = v_now, updated_by = v_by
        WHERE w.organization_id = v_org AND w.name = delete_workflow.name AND w.deleted_at IS NULL
        RETURNING w.id
    )
    SELECT array_agg(d.id) INTO v_ids FROM deleted d;
    PERFORM flowforge._audit(v_org, 'delete', 'workflow', u.id::text, ARRAY['name']) FROM unnest(v_ids) AS u(id);
    RETURN cardinality(v_ids);
END;
$$;
COMMENT ON FUNCTION flowforge.delete_workflow(name text) IS
  'delete_workflow(name text) -> integer. Soft-deletes every version of the workflow in the caller''s organization '
  '(deleted_at, deleted_by = the caller) and returns how many were live: it starts no run any more (start_run and '
  'start triggers get FF013), list_workflows hides it unless include_deleted => true, and nothing is removed — its '
  'runs (live ones go on), their history and get_workflow(name, version) stay readable. Defining the name again '
  'makes a new, live version. Member rights. Audited (one row per version). Errors: FF001 no such workflow; FF013 '
  'already deleted; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.delete_workflow(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
