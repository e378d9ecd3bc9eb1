-- Agents (seed 002's registry): workers that registered. Other tables store
-- an agent's name, never its id.
--
--   register_agent(name, info) -> id          create or update by name, active
--   agent_heartbeat(name, metrics) -> status  the agent learns it is draining
--   set_agent_status(name, status)            active | draining | inactive
--   list_agents() -> every agent, its effective status, what it holds
--
-- Liveness is the database's call, not the agent's: the effective status of
-- an agent whose heartbeat is older than three of its declared heartbeat
-- intervals (or than setting.agent_timeout, 60 s by default, when it declared
-- none) is inactive, whatever it last said. The same rule decides claims and
-- what list_agents shows, so a crashed agent cannot stay "active".

CREATE OR REPLACE FUNCTION flowforge._agent_status(p_status text, p_last_heartbeat_at timestamptz,
                                                   p_heartbeat_interval interval, p_timeout interval,
                                                   p_now timestamptz)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_status = 'inactive' THEN 'inactive'
                WHEN p_last_heartbeat_at IS NULL
                     OR p_last_heartbeat_at < p_now - coalesce(3 * p_heartbeat_interval, p_timeout) THEN 'inactive'
                ELSE p_status END
$$;
COMMENT ON FUNCTION flowforge._agent_status(text, timestamptz, interval, interval, timestamptz) IS
  'Internal: an agent''s effective status — its declared status, unless its heartbeat is older than 3 x its declared '
  'interval (or p_timeout when it declared none), which makes it inactive.';

CREATE OR REPLACE FUNCTION flowforge.register_agent(name text, info jsonb DEFAULT '{}') RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_info constant jsonb := coalesce(register_agent.info, '{}');
    v_field text;
    v_interval interval;
    v_id uuid;
BEGIN
    IF register_agent.name IS NULL OR length(register_agent.name) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'agent name must be 1 to 200 characters' USING ERRCODE = 'FF003', HINT = 'For example host:pid.';
    END IF;
    IF jsonb_typeof(v_info) <> 'object' THEN
        RAISE EXCEPTION 'agent info must be a JSON object' USING ERRCODE = 'FF003',
            HINT = 'Keys: http_address, grpc_address, infra_address, version, binary_path, type, labels, heartbeat_interval.';
    END IF;
    PERFORM flowforge._check_size(v_info, 'agent info');
    FOR v_field IN SELECT jsonb_object_keys(v_info) LOOP
        IF v_field NOT IN ('http_address', 'grpc_address', 'infra_address', 'version', 'binary_path', 'type', 'labels',
                           'heartbeat_interval') THEN
            RAISE EXCEPTION 'unknown agent info field "%"', v_field USING ERRCODE = 'FF003',
                HINT = 'Keys: http_address, grpc_address, infra_address, version, binary_path, type, labels, heartbeat_interval.';
        END IF;
    END LOOP;
    IF v_info ? 'labels' AND jsonb_typeof(v_info -> 'labels') <> 'object' THEN
        RAISE EXCEPTION 'agent labels must be a JSON object (what selectors are matched against)' USING ERRCODE = 'FF003',
            HINT = 'For example {"gpu": true, "region": "eu"}.';
    END IF;
    IF v_info ? 'type' AND v_info ->> 'type' NOT IN ('remote', 'local') THEN
        RAISE EXCEPTION 'agent type must be remote or local' USING ERRCODE = 'FF003', HINT = 'The default is remote.';
    END IF;
    IF v_info ? 'heartbeat_interval' THEN
        BEGIN
            v_interval := (v_info ->> 'heartbeat_interval')::interval;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow OR syntax_error THEN
            v_interval := NULL;
        END;
        IF v_interval IS NULL OR v_interval NOT BETWEEN interval '1 second' AND interval '1 hour' THEN
            RAISE EXCEPTION 'heartbeat_interval must be a duration from 1 second to 1 hour' USING ERRCODE = 'FF003',
                HINT = 'How often the agent heartbeats; it is inactive after three missed intervals.';
        END IF;
    END IF;
    INSERT INTO flowforge.agent AS a (organization_id, name, http_address, grpc_address, infra_address, agent_version,
                                      binary_path, agent_type, status, metadata, heartbeat_interval, last_heartbeat_at,
                                      created_at, created_by)
    VALUES (v_org, register_agent.name, v_info ->> 'http_address', v_info ->> 'grpc_address', v_info ->> 'infra_address',
            left(v_info ->> 'version', 100), v_info ->> 'binary_path', coalesce(v_info ->> 'type', 'remote'), 'active',
            coalesce(v_info -> 'labels', '{}'), v_interval, v_now, v_now, flowforge._principal())
    ON CONFLICT ON CONSTRAINT agent_name_key DO UPDATE
    SET http_address = EXCLUDED.http_address, grpc_address = EXCLUDED.grpc_address,
        infra_address = EXCLUDED.infra_address, agent_version = EXCLUDED.agent_version,
        binary_path = EXCLUDED.binary_path, agent_type = EXCLUDED.agent_type, status = 'active',
        metadata = EXCLUDED.metadata, heartbeat_interval = EXCLUDED.heartbeat_interval,
        last_heartbeat_at = EXCLUDED.last_heartbeat_at, deleted_at = NULL, deleted_by = NULL,
        updated_at = EXCLUDED.created_at, updated_by = EXCLUDED.created_by
    RETURNING a.id INTO v_id;
    PERFORM flowforge._audit(v_org, 'register', 'agent', register_agent.name, ARRAY(SELECT jsonb_object_keys(v_info)));
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge.register_agent(text, jsonb) IS
  'register_agent(name text, info jsonb default ''{}'') -> uuid. Creates or updates the agent of that name in the '
  'caller''s organization and makes it active (a restarted agent re-registers). info: http_address, grpc_address, '
  'infra_address, version, binary_path, type (remote | local), labels (an object that selectors — worker_params — '
  'are matched against by containment), heartbeat_interval (1 s – 1 h; the agent is inactive after three missed). '
  'Audited. Errors: FF003 a bad name or info; FF009 info over the size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.register_agent(text,jsonb)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.agent_heartbeat(name text, metrics jsonb DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_status text;
BEGIN
    IF agent_heartbeat.metrics IS NOT NULL AND jsonb_typeof(agent_heartbeat.metrics) <> 'object' THEN
        RAISE EXCEPTION 'agent metrics must be a JSON object' USING ERRCODE = 'FF003',
            HINT = 'For example {"cpu_percent": 12.5, "memory_percent": 40}.';
    END IF;
    PERFORM flowforge._check_size(agent_heartbeat.metrics, 'agent metrics');
    -- An agent marked inactive by the sweep comes back by registering again,
    -- not by a heartbeat: its affinity bindings were released meanwhile.
    UPDATE flowforge.agent a
    SET last_heartbeat_at = v_now, metrics = coalesce(agent_heartbeat.metrics, a.metrics)
    WHERE a.organization_id = v_org AND a.name = agent_heartbeat.name
    RETURNING a.status INTO v_status;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'agent % not found', coalesce(quote_literal(agent_heartbeat.name), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'Register it first with register_agent(name, info).';
    END IF;
    RETURN v_status;
END;
$$;
COMMENT ON FUNCTION flowforge.agent_heartbeat(text, jsonb) IS
  'agent_heartbeat(name text, metrics jsonb default null) -> text. Records the agent''s heartbeat and metrics (CPU, '
  'memory, GPU, disk — whatever it reports) and returns its status: active, draining (finish what you hold, take '
  'nothing new) or inactive (register again). Records no event. Errors: FF001 no such agent; FF003 metrics not an '
  'object; FF009 metrics over the size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.agent_heartbeat(text,jsonb)', 'flowforge_owner', '{flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.set_agent_status(name text, status text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
BEGIN
    IF set_agent_status.status IS NULL OR set_agent_status.status NOT IN ('active', 'draining', 'inactive') THEN
        RAISE EXCEPTION 'agent status must be active, draining or inactive, got %',
            coalesce(quote_literal(set_agent_status.status), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'draining: the agent finishes what it holds and is given nothing new.';
    END IF;
    UPDATE flowforge.agent a
    SET status = set_agent_status.status, updated_at = v_now, updated_by = flowforge._principal()
    WHERE a.organization_id = v_org AND a.name = set_agent_status.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'agent % not found', coalesce(quote_literal(set_agent_status.name), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'list_agents() shows the registered agents.';
    END IF;
    IF set_agent_status.status = 'inactive' THEN
        PERFORM flowforge._release_bindings(v_org, set_agent_status.name);
    END IF;
    PERFORM flowforge._audit(v_org, 'set_status', 'agent', set_agent_status.name, ARRAY['status']);
END;
$$;
COMMENT ON FUNCTION flowforge.set_agent_status(text, text) IS
  'set_agent_status(name text, status text). active | draining | inactive. A draining or inactive agent is given '
  'nothing by claim or claim_work; inactive also releases its affinity bindings. Audited. Errors: FF001 no such '
  'agent; FF003 a bad status; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.set_agent_status(text,text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.list_agents(max_rows integer DEFAULT 1000, after text DEFAULT NULL)
RETURNS TABLE (name text, status text, declared_status text, agent_type text, version text, labels jsonb,
               metrics jsonb, heartbeat_interval interval, last_heartbeat_at timestamptz, last_claim_at timestamptz,
               holding bigint, bindings bigint, http_address text, grpc_address text, infra_address text,
               created_at timestamptz, created_by text, cursor text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_now constant timestamptz := flowforge.now();
    v_timeout constant interval := (SELECT s.agent_timeout FROM flowforge.setting s);
    v_after constant record := flowforge._cursor_position('agents', list_agents.after);
BEGIN
    IF list_agents.max_rows IS NULL OR list_agents.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 1000.';
    END IF;
    IF list_agents.after IS NOT NULL AND v_after.key IS NULL THEN
        PERFORM flowforge._invalid_cursor('agents');
    END IF;
    -- Ordered by name (seed 002's exception to newest-first: agents are
    -- addressed by name), pages after a name: one range of agent_name_key.
    RETURN QUERY
    SELECT a.name::text,
           -- "drained": draining and holding nothing any more, safe to stop.
           CASE WHEN s.status = 'draining' AND h.n = 0 THEN 'drained' ELSE s.status END,
           a.status::text, a.agent_type::text, a.agent_version::text, a.metadata, a.metrics, a.heartbeat_interval,
           a.last_heartbeat_at, a.last_claim_at, h.n,
           (SELECT count(*) FROM flowforge.affinity_binding b WHERE b.organization_id = v_org AND b.agent_id = a.name),
           a.http_address, a.grpc_address, a.infra_address, a.created_at, a.created_by,
           flowforge._cursor('agents', NULL, NULL, a.name)
    FROM flowforge.agent a
    CROSS JOIN LATERAL (SELECT flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval, v_timeout,
                                                        v_now) AS status) s
    CROSS JOIN LATERAL (
        SELECT (SELECT count(*) FROM flowforge.work_item w
                WHERE w.organization_id = v_org AND w.status = 'dispatched' AND w.agent_id = a.name)
             + (SELECT count(*) FROM flowforge.task_run t
                WHERE t.organization_id = v_org AND t.state = 'running' AND t.lease_owner = a.name) AS n) h
    WHERE a.organization_id = v_org AND a.deleted_at IS NULL
      AND (v_after.key IS NULL OR a.name > v_after.key)
    ORDER BY a.name
    LIMIT list_agents.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_agents(integer, text) IS
  'list_agents(max_rows int default 1000, after text default null) -> setof (name, status, declared_status, '
  'agent_type, version, labels, metrics, heartbeat_interval, last_heartbeat_at, last_claim_at, holding, bindings, '
  'http_address, grpc_address, infra_address, created_at, created_by, cursor): the organization''s agents by name '
  '(seed 002''s exception to newest-first), keyset pages after the cursor of the last row read. status is effective — inactive once the heartbeat is three intervals old (or '
  'setting.agent_timeout), drained for a draining agent that holds nothing — the same rule the claims apply; '
  'last_claim_at shows an agent that heartbeats but no longer claims; holding counts the work items and task runs '
  'it holds. Viewer rights. Errors: FF003 max_rows outside 1..10000 or a cursor that is not one of this listing''s; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_agents(integer,text)', 'flowforge_owner', '{flowforge_app,flowforge_worker,flowforge_gateway}');
